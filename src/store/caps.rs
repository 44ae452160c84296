//! Capability cache: what the real binary supports, keyed by its canonical
//! path, size and mtime so an upgrade is noticed without probing every run.

use super::Store;
pub use crate::probe::Capabilities;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryKey {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
}

impl BinaryKey {
    pub fn of(path: &std::path::Path) -> std::io::Result<BinaryKey> {
        use std::os::unix::fs::MetadataExt;
        let canonical = path.canonicalize()?;
        let meta = std::fs::metadata(&canonical)?;
        Ok(BinaryKey {
            path: canonical.to_string_lossy().into_owned(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        })
    }

    /// A short stable fingerprint for the identity scope.
    pub fn fingerprint(&self) -> String {
        format!("{}:{}:{}", self.path, self.size, self.mtime_ns)
    }
}

impl Store {
    pub fn capabilities(&self, key: &BinaryKey) -> Result<Option<Capabilities>> {
        if let Some(mut pg) = self.pg() {
            return pg.capabilities(key);
        }
        Ok(self
            .conn
            .query_row(
                "SELECT version, resume, fork_session, session_id, resume_session_at
                 FROM capabilities WHERE path = ?1 AND size = ?2 AND mtime_ns = ?3",
                params![key.path, key.size as i64, key.mtime_ns],
                |r| {
                    Ok(Capabilities {
                        version: r.get(0)?,
                        resume: r.get(1)?,
                        fork_session: r.get(2)?,
                        session_id: r.get(3)?,
                        resume_session_at: r.get(4)?,
                    })
                },
            )
            .optional()?)
    }

    pub fn save_capabilities(&self, key: &BinaryKey, caps: &Capabilities) -> Result<()> {
        if let Some(mut pg) = self.pg() {
            return pg.save_capabilities(key, caps, super::now());
        }
        self.conn.execute(
            "INSERT OR REPLACE INTO capabilities
             (path, size, mtime_ns, version, resume, fork_session, session_id, resume_session_at, probed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                key.path,
                key.size as i64,
                key.mtime_ns,
                caps.version,
                caps.resume,
                caps.fork_session,
                caps.session_id,
                caps.resume_session_at,
                super::now()
            ],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keyed_on_size_and_mtime() {
        let s = Store::in_memory().unwrap();
        let key = BinaryKey {
            path: "/c".into(),
            size: 1,
            mtime_ns: 2,
        };
        let caps = Capabilities {
            version: "2.1.330".into(),
            resume: true,
            ..Default::default()
        };
        s.save_capabilities(&key, &caps).unwrap();
        assert_eq!(s.capabilities(&key).unwrap(), Some(caps));
        let moved = BinaryKey { mtime_ns: 3, ..key };
        assert_eq!(s.capabilities(&moved).unwrap(), None);
    }
}
