//! What a binary supports, and session-file scans: as `store::{caps, scans}`.

use super::conn::{call, owned, Pg, Typed};
use crate::probe::Capabilities;
use crate::store::types::caps::BinaryKey;
use anyhow::Result;

impl Pg {
    pub fn capabilities(&mut self, key: &BinaryKey) -> Result<Option<Capabilities>> {
        let row = call!(self, "reading capabilities", |c| {
            c.q_opt(
                "SELECT version, resume, fork_session, session_id, resume_session_at
                 FROM capabilities WHERE path = $1 AND size = $2 AND mtime_ns = $3",
                &[&key.path, &(key.size as i64), &key.mtime_ns],
            )
            .await
        })?;
        Ok(row.map(|r| Capabilities {
            version: r.get(0),
            resume: r.get(1),
            fork_session: r.get(2),
            session_id: r.get(3),
            resume_session_at: r.get(4),
        }))
    }

    pub fn save_capabilities(
        &mut self,
        key: &BinaryKey,
        caps: &Capabilities,
        now: i64,
    ) -> Result<()> {
        call!(self, "saving capabilities", |c| {
            c.x(
                "INSERT INTO capabilities (path, size, mtime_ns, version, resume, fork_session,
                     session_id, resume_session_at, probed_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (path, size, mtime_ns) DO UPDATE SET version = excluded.version,
                     resume = excluded.resume, fork_session = excluded.fork_session,
                     session_id = excluded.session_id,
                     resume_session_at = excluded.resume_session_at,
                     probed_at = excluded.probed_at",
                &[
                    &key.path,
                    &(key.size as i64),
                    &key.mtime_ns,
                    &caps.version,
                    &caps.resume,
                    &caps.fork_session,
                    &caps.session_id,
                    &caps.resume_session_at,
                    &now,
                ],
            )
            .await
        })?;
        Ok(())
    }

    pub fn scan_of(&mut self, path: &str) -> Result<Option<String>> {
        if let Some(known) = self.scans.get(path) {
            return Ok(known.clone());
        }
        let row = call!(self, "reading a session file's scan", |c| {
            c.q_opt("SELECT scan FROM scans WHERE path = $1", &[&path])
                .await
        })?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Queued (see [`Pg::defer`]): a scan only saves the next one work.
    pub fn save_scan(&mut self, path: &str, scan: &str, now: i64) -> Result<()> {
        if let Some(known) = self.scans.get_mut(path) {
            *known = Some(scan.to_owned());
        }
        self.defer(
            "saving a session file's scan",
            "INSERT INTO scans (path, scan, at) VALUES ($1, $2, $3)
             ON CONFLICT (path) DO UPDATE SET scan = excluded.scan, at = excluded.at",
            vec![owned(path.to_owned()), owned(scan.to_owned()), owned(now)],
        );
        Ok(())
    }

    /// A turn will read `path`'s scan after its lease: read it then, in
    /// the lease's round trip (see `lease`).
    pub fn want_scan(&mut self, path: &str) {
        if self.io.patience == super::conn::Patience::Turn && !self.scans.contains_key(path) {
            self.scan_wanted = Some(path.to_owned());
        }
    }
}
