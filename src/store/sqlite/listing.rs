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

#[cfg(test)]
mod tests {
    use super::super::pins::tests::new_pin;
    use crate::store::pins::Ownership;
    use crate::store::Store;

    #[test]
    fn pinned_leased_and_ephemeral_sessions_are_listed_once_each() {
        let mut s = Store::in_memory().unwrap();
        let a = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let b = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let c = "8e8e0435-8e12-4245-aa25-f674ed4e97a7";
        s.add_pin(&new_pin(a, "u1", &["hi"], "r1"), Ownership::Kept, "/c")
            .unwrap();
        s.add_pin(
            &new_pin(a, "u2", &["hi", "more"], "r2"),
            Ownership::Kept,
            "/c",
        )
        .unwrap();
        s.add_pin(&new_pin(b, "u1", &["x"], "r"), Ownership::Ephemeral, "/c")
            .unwrap();
        s.try_lease(c, None, 4242, &|_| true).unwrap();
        let got = s.shim_sessions().unwrap();
        assert_eq!(got.len(), 3, "{got:#?}");
        let by = |id: &str| got.iter().find(|r| r.session == id).unwrap();
        assert_eq!((by(a).turns, by(a).pins, by(a).ephemeral), (2, 2, false));
        assert!(by(a).conversation.is_some());
        assert!(by(b).ephemeral);
        assert_eq!(
            (by(c).pins, by(c).lease_pid, by(c).cwd.clone()),
            (0, Some(4242), None)
        );
    }
}
