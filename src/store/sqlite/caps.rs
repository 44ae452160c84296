//! `CapabilityCache` ([`crate::store::caps`]) in the SQLite file.

use super::local::Local;
use crate::probe::Capabilities;
use crate::store::caps::*;
use crate::store::types::caps::BinaryKey;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

impl CapabilityCache for Local {
    fn capabilities(&self, key: &BinaryKey) -> Result<Option<Capabilities>> {
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

    fn save_capabilities(&self, key: &BinaryKey, caps: &Capabilities) -> Result<()> {
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
                crate::store::clock::now()
            ],
        )?;
        Ok(())
    }
}
