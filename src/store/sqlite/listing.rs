//! `Listing` ([`crate::store::listing`]) in the SQLite file.

use super::local::Local;
use crate::store::listing::*;
use crate::store::types::listing::ShimSession;
use anyhow::Result;

impl Listing for Local {
    fn shim_sessions(&self) -> Result<Vec<ShimSession>> {
        let now = self.now();
        let mut stmt = self.conn.prepare(
            "WITH latest AS (
                SELECT session, MAX(id) AS id, COUNT(*) AS n FROM pins GROUP BY session)
             SELECT s.session, p.cwd, COALESCE(p.turns, 0), COALESCE(l.n, 0), p.conv_key,
                    p.created_at, s.ephemeral, s.config_dir,
                    CASE WHEN s.lease_until > ?1 THEN s.lease_pid END
             FROM sessions s
             LEFT JOIN latest l ON l.session = s.session
             LEFT JOIN pins p ON p.id = l.id
             UNION ALL
             SELECT p.session, p.cwd, p.turns, l.n, p.conv_key, p.created_at, 0, NULL, NULL
             FROM latest l JOIN pins p ON p.id = l.id
             WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session = l.session)
             ORDER BY 6 DESC",
        )?;
        let rows = stmt.query_map([now], |r| {
            Ok(ShimSession {
                session: r.get(0)?,
                cwd: r.get(1)?,
                turns: r.get(2)?,
                pins: r.get(3)?,
                conversation: r.get(4)?,
                pinned_at: r.get(5)?,
                ephemeral: r.get::<_, i64>(6)? != 0,
                config_dir: r.get(7)?,
                lease_pid: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
