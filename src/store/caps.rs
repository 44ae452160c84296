//! Capability cache: what the real binary supports, keyed by its canonical
//! path, size and mtime so an upgrade is noticed without probing every run.
//! Beside a shared store, a turn also keeps them in its data dir
//! ([`LOCAL_FILE`]): the binary is this host's, and the file is read in
//! microseconds where the store costs a round trip.

pub use super::types::caps::BinaryKey;
use super::Store;
pub use crate::probe::Capabilities;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

/// The data dir's copy, for a turn beside a shared store.
pub const LOCAL_FILE: &str = "capabilities.json";
/// Binaries remembered in it (the most recent first).
const LOCAL_KEEP: usize = 8;

impl Store {
    pub fn capabilities(&self, key: &BinaryKey) -> Result<Option<Capabilities>> {
        if let Some(mut pg) = self.pg() {
            if let Some(c) = self.local_capabilities(key) {
                return Ok(Some(c));
            }
            let stored = pg.capabilities(key)?;
            if let Some(c) = &stored {
                self.keep_local_capabilities(key, c);
            }
            return Ok(stored);
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
            pg.save_capabilities(key, caps, super::now())?;
            self.keep_local_capabilities(key, caps);
            return Ok(());
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

#[derive(serde::Serialize, serde::Deserialize)]
struct LocalEntry {
    binary: BinaryKey,
    caps: Capabilities,
}

impl Store {
    /// The data dir's copy (a file we cannot read or parse is no copy).
    fn local_entries(&self) -> Vec<LocalEntry> {
        let Some(dir) = &self.local else {
            return Vec::new();
        };
        match dir.read(LOCAL_FILE) {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn local_capabilities(&self, key: &BinaryKey) -> Option<Capabilities> {
        self.local_entries()
            .into_iter()
            .find(|e| e.binary == *key)
            .map(|e| e.caps)
    }

    fn keep_local_capabilities(&self, key: &BinaryKey, caps: &Capabilities) {
        let Some(dir) = &self.local else { return };
        let mut entries = self.local_entries();
        entries.retain(|e| e.binary.path != key.path);
        entries.insert(
            0,
            LocalEntry {
                binary: key.clone(),
                caps: caps.clone(),
            },
        );
        entries.truncate(LOCAL_KEEP);
        let written = serde_json::to_vec(&entries)
            .map_err(std::io::Error::other)
            .and_then(|json| crate::whole_file::write(&dir.join(LOCAL_FILE), &json, 0o600));
        if let Err(e) = written {
            crate::debug!("capabilities not kept in the data dir: {e}");
        }
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
