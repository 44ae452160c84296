//! The turn's operations on the shared store, by topic: `pins`, `leases`,
//! `runs`, `caps`, `transcripts` (each beside its SQLite twin in `store`);
//! here the sessions listing and the warm-up of a readied backend.

use super::conn::{call, Pg, Typed};
use crate::store::types::attempts::Outcome;
use crate::store::types::pins::{NewPin, Ownership};
use crate::store::types::runs::Run;
use anyhow::Result;

impl Pg {
    /// As `Store::shim_sessions`; a lease counts while its holder's
    /// connection is live, and its pid is known when it is on this host.
    pub fn shim_sessions(&mut self) -> Result<Vec<crate::store::types::listing::ShimSession>> {
        let prefix = format!("{}:", self.host);
        let rows = call!(self, "listing sessions", |c| {
            c.q(
                "WITH latest AS (
                    SELECT session, MAX(id) AS id, COUNT(*) AS n FROM pins GROUP BY session),
                 live AS (
                    SELECT s.session, s.lease_holder FROM sessions s
                    WHERE s.lease_backend IS NOT NULL AND s.lease_holder IS NOT NULL
                      AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = s.lease_backend))
                 SELECT s.session, p.cwd, COALESCE(p.turns, 0), COALESCE(l.n, 0), p.conv_key,
                        p.created_at, s.ephemeral, s.config_dir, v.lease_holder
                 FROM sessions s
                 LEFT JOIN latest l ON l.session = s.session
                 LEFT JOIN pins p ON p.id = l.id
                 LEFT JOIN live v ON v.session = s.session
                 UNION ALL
                 SELECT p.session, p.cwd, p.turns, l.n, p.conv_key, p.created_at, false, NULL, NULL
                 FROM latest l JOIN pins p ON p.id = l.id
                 WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session = l.session)
                 ORDER BY 6 DESC NULLS LAST",
                &[],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let holder: Option<String> = r.get(8);
                crate::store::types::listing::ShimSession {
                    session: r.get(0),
                    cwd: r.get(1),
                    turns: r.get(2),
                    pins: r.get(3),
                    conversation: r.get(4),
                    pinned_at: r.get(5),
                    ephemeral: r.get(6),
                    config_dir: r.get(7),
                    lease_pid: holder
                        .and_then(|h| h.strip_prefix(&prefix).and_then(|p| p.parse().ok())),
                }
            })
            .collect())
    }
}

impl Pg {
    /// Run a turn's statements once, on made-up rows, in a transaction that
    /// is rolled back: a readied backend (see `handoff`) then has the
    /// catalog entries they need, and a turn's first statements on it run
    /// as fast as its later ones.
    pub(super) fn warm_up(&mut self) -> Result<()> {
        call!(self, "warming up", |c| c.batch_execute("BEGIN").await)?;
        let ran = self.warm_up_statements();
        self.flush();
        let rolled_back = call!(self, "warming up", |c| c.batch_execute("ROLLBACK").await);
        self.manifests.clear();
        ran.and(rolled_back)
    }

    fn warm_up_statements(&mut self) -> Result<()> {
        const S: &str = "claude-shim warm-up";
        let pin = NewPin::of_turns(S, S, "/", &[S], S);
        self.find_pins(&pin.node)?;
        self.lease(S, None, 0, true)?;
        self.transcript_manifest(S)?;
        self.scan_of(S)?;
        self.save_scan(S, "{}", 0)?;
        let attempt = self.start_attempt(&pin.node, S, S, 0, 0, 0)?;
        self.end_attempt(attempt, Outcome::Result, 0)?;
        self.add_pin(&pin, Ownership::Kept, "/", 0)?;
        let run = Run {
            cwd: "/",
            kind: crate::store::types::runs::Kind::Fresh,
            why_code: S,
            why: S,
            exit: 0,
            bytes_in: 0,
            bytes_sent: 0,
            spent: Default::default(),
            session: Some(S),
            conv_key: None,
            engine: crate::store::types::runs::Engine::Cold,
            replay_misses_prefix: false,
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        };
        self.log_run(&run, 0, S)?;
        self.mark_draining(S)?;
        self.append_transcript(S, 0, b"{}\n", 0)?;
        // Its advisory lock is the session's, not the transaction's.
        self.release_lease(S)
    }
}
