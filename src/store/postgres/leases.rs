//! Leases (advisory locks: a connection's, gone with it) and ephemeral sessions: as `store::pins`' leases.

use super::conn::{call, lease_key, Pg, Typed};
use super::transcripts::{chunk_of, MANIFEST};
use crate::store::types::pins::Lease;
use anyhow::Result;

impl Pg {
    /// The in-place lease: the session's advisory lock on this connection,
    /// taken only while the head is still `head` (checked under the row's
    /// lock). Held elsewhere: say whether that holder is draining.
    pub fn try_lease(&mut self, session: &str, head: Option<&str>, now: i64) -> Result<Lease> {
        Ok(self
            .lease(session, head, now, false)?
            .1
            .unwrap_or(Lease::NotHead))
    }

    /// A turn's lookup in one round trip: the session's head in the store,
    /// and the lease when that head is `head` (a session without a row has
    /// no head). `None`: not tried, the head differs.
    pub fn head_and_lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        now: i64,
    ) -> Result<(Option<String>, Option<Lease>)> {
        self.lease(session, head, now, true)
    }

    /// What the schema's `try_lease` function does, as one plain statement
    /// that also returns the head: a PL/pgSQL function is compiled on its
    /// first call in each backend, and every turn is a new backend (~0.4 ms
    /// a turn). CASE evaluates its branches in order, so the advisory lock
    /// is tried only when the head matches and this connection does not
    /// hold it already (session-level advisory locks stack); the CTEs
    /// referenced more than once are evaluated once. `rowless_has_no_head`:
    /// a session without a row matches only `head = None` (the lookup);
    /// else it matches any head (a new session's first lease). The function
    /// stays in the schema for replicas running an older claude-shim.
    pub(super) fn lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        now: i64,
        rowless_has_no_head: bool,
    ) -> Result<(Option<String>, Option<Lease>)> {
        let key = lease_key(session);
        let mine = self.held.contains(session);
        let holder = self.holder.clone();
        // A turn's lookup reads the session's transcript chunks next, when it
        // has the lease: read them in the same round trip, after the lease
        // (the server runs them in order), and keep them only if it took it.
        let prefetch = rowless_has_no_head
            && self.io.patience == super::conn::Patience::Turn
            && !self.manifests.contains_key(session);
        let scan_path = match rowless_has_no_head {
            true => self.scan_wanted.take(),
            false => None,
        };
        let wanted = scan_path.as_deref();
        let answer = call!(self, "taking the lease", |c| {
            let scan = async {
                match wanted {
                    Some(path) => c
                        .q_opt("SELECT scan FROM scans WHERE path = $1", &[&path])
                        .await
                        .ok(),
                    None => None,
                }
            };
            let manifest = async {
                match prefetch {
                    true => c.q(MANIFEST, &[&session]).await.ok(),
                    false => None,
                }
            };
            let lease = async {
                let r = c
                    .q_one(
                        "WITH cur AS (
                    SELECT head_uuid, draining FROM sessions WHERE session = $1 FOR UPDATE),
                 verdict AS (
                    SELECT CASE
                        WHEN ($7 OR EXISTS (SELECT 1 FROM cur))
                             AND (SELECT head_uuid FROM cur) IS DISTINCT FROM $2 THEN 'not-head'
                        WHEN $4 THEN 'taken'
                        WHEN pg_try_advisory_lock($3) THEN 'taken'
                        WHEN COALESCE((SELECT draining FROM cur), false) THEN 'held-draining'
                        ELSE 'held'
                    END AS v),
                 up AS (
                    INSERT INTO sessions (session, lease_holder, lease_backend, draining, used_at)
                    SELECT $1, $5, pg_backend_pid(), false, $6 FROM verdict WHERE v = 'taken'
                    ON CONFLICT (session) DO UPDATE SET lease_holder = excluded.lease_holder,
                        lease_backend = excluded.lease_backend, draining = false,
                        used_at = excluded.used_at)
                 SELECT v, (SELECT head_uuid FROM cur) FROM verdict",
                        &[
                            &session,
                            &head,
                            &key,
                            &mine,
                            &holder,
                            &now,
                            &rowless_has_no_head,
                        ],
                    )
                    .await?;
                Ok((r.get::<_, String>(0), r.get::<_, Option<String>>(1)))
            };
            // `join` polls the lease first: its request goes out first.
            let (lease, manifest, scan) = futures_util::future::join3(lease, manifest, scan).await;
            lease.map(|l| (l, manifest, scan))
        });
        let ((verdict, stored_head), manifest, scan) = match answer {
            Ok(a) => a,
            Err(e) => {
                // Should the lock have been taken before the row failed, it
                // outlives the statement: give it back.
                if !mine {
                    let _ = call!(self, "giving the lease back", |c| {
                        c.x("SELECT pg_advisory_unlock($1)", &[&key]).await
                    });
                }
                return Err(e);
            }
        };
        let lease = match verdict.as_str() {
            "taken" => Some(Lease::Taken),
            "not-head" => None,
            "held-draining" => Some(Lease::Held { draining: true }),
            _ => Some(Lease::Held { draining: false }),
        };
        // A scan is a cache of this host's file, whoever has the lease.
        if let (Some(path), Some(row)) = (scan_path, scan) {
            self.scans.insert(path, row.map(|r| r.get(0)));
        }
        if lease == Some(Lease::Taken) {
            self.held.insert(session.to_owned());
            if let Some(rows) = manifest {
                self.manifests
                    .insert(session.to_owned(), rows.iter().map(chunk_of).collect());
            }
        }
        Ok((stored_head, lease))
    }

    pub fn mark_draining(&mut self, session: &str) -> Result<()> {
        let holder = self.holder.clone();
        call!(self, "marking the lease draining", |c| {
            c.x(
                "UPDATE sessions SET draining = true WHERE session = $1 AND lease_holder = $2",
                &[&session, &holder],
            )
            .await
        })?;
        Ok(())
    }

    pub fn release_lease(&mut self, session: &str) -> Result<()> {
        if !self.held.contains(session) {
            return Ok(());
        }
        let holder = self.holder.clone();
        let key = lease_key(session);
        call!(self, "releasing the lease", |c| {
            c.x(
                "WITH u AS (
                    UPDATE sessions SET lease_holder = NULL, lease_backend = NULL, draining = false
                    WHERE session = $1 AND lease_holder = $2)
                 SELECT pg_advisory_unlock($3)",
                &[&session, &holder, &key],
            )
            .await
        })?;
        self.held.remove(session);
        Ok(())
    }

    pub fn touch_session(&mut self, session: &str, now: i64) -> Result<()> {
        call!(self, "touching a session", |c| {
            c.x(
                "UPDATE sessions SET used_at = $2 WHERE session = $1",
                &[&session, &now],
            )
            .await
        })?;
        Ok(())
    }

    /// As `Store::expired_ephemeral`; a holder is live while its
    /// connection is.
    pub fn expired_ephemeral(&mut self, idle_before: i64) -> Result<Vec<(String, String)>> {
        let rows = call!(self, "finding expired ephemeral sessions", |c| {
            c.q(
                "SELECT s.session, COALESCE(s.config_dir, '') FROM sessions s
                 WHERE s.ephemeral AND (
                    COALESCE(s.used_at, 0) < $1
                    OR NOT EXISTS (
                        SELECT 1 FROM pins p WHERE p.session = s.session AND NOT EXISTS (
                            SELECT 1 FROM pins q WHERE q.node = p.node AND q.session <> p.session
                                AND q.id > p.id AND q.reply_hashes = p.reply_hashes)))
                 AND NOT (s.lease_backend IS NOT NULL AND s.lease_holder IS NOT NULL
                          AND EXISTS (SELECT 1 FROM pg_stat_activity a
                                      WHERE a.pid = s.lease_backend))
                 LIMIT 64",
                &[&idle_before],
            )
            .await
        })?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub fn is_ephemeral(&mut self, session: &str) -> Result<bool> {
        let row = call!(self, "reading a session", |c| {
            c.q_opt(
                "SELECT ephemeral FROM sessions WHERE session = $1",
                &[&session],
            )
            .await
        })?;
        Ok(row.is_some_and(|r| r.get(0)))
    }
}
