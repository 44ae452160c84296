//! `Pins` ([`crate::store::pins`]) in the SQLite file.

use super::local::Local;
use crate::identity::{Chain, ConvKey, Node, PreambleHash, ReplyHash};
use crate::store::pins::*;
use crate::store::types::pins::{Elsewhere, Lease, NewPin, Ownership, Pin};
use anyhow::Result;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

/// A lease older than this is stale even if its pid is alive (pid reuse).
const LEASE_SECS: i64 = 6 * 3600;

impl Pins for Local {
    fn find_pins(&self, node: &Node) -> Result<Vec<Pin>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, session, assistant_uuid, reply_hashes, preamble_hash, turns, created_at
             FROM pins WHERE node = ?1 ORDER BY id DESC",
        )?;
        let rows = stmt.query_map(params![node.as_str()], |r| {
            let hashes: String = r.get(3)?;
            let hashes: Vec<String> = serde_json::from_str(&hashes).unwrap_or_default();
            Ok(Pin {
                id: r.get(0)?,
                session: r.get(1)?,
                assistant_uuid: r.get(2)?,
                reply_hashes: hashes.into_iter().map(ReplyHash::from_stored).collect(),
                preamble_hash: r
                    .get::<_, Option<String>>(4)?
                    .map(PreambleHash::from_stored),
                turns: r.get(5)?,
                created_at: r.get(6)?,
                total_cost_usd: None,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn find_elsewhere(&self, chain: &Chain) -> Result<Option<Elsewhere>> {
        let row: Option<(Option<String>, i64)> = self
            .conn
            .prepare_cached(
                "SELECT parts, created_at FROM pins WHERE chain = ?1 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![chain.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.and_then(|(parts, created_at)| {
            Some(Elsewhere {
                parts: serde_json::from_str(&parts?).ok()?,
                created_at,
            })
        }))
    }

    fn add_pin(&mut self, pin: &NewPin, ownership: Ownership, config_dir: &str) -> Result<i64> {
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let hashes: Vec<&str> = pin.reply_hashes.iter().map(ReplyHash::as_str).collect();
        tx.execute(
            "INSERT INTO pins (scope, node, chain, parts, conv_key, session, assistant_uuid,
                               reply_hashes, preamble_hash, turns, cwd, created_at, reply_preview)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                pin.scope.as_str(),
                pin.node.as_str(),
                pin.chain.as_str(),
                serde_json::to_string(&pin.parts)?,
                pin.conv_key.as_ref().map(ConvKey::as_str),
                pin.session,
                pin.assistant_uuid,
                serde_json::to_string(&hashes)?,
                pin.preamble_hash.as_ref().map(PreambleHash::as_str),
                pin.turns as i64,
                pin.cwd,
                now,
                pin.reply_preview,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO sessions (session, head_uuid, ephemeral, config_dir, used_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(session) DO UPDATE SET head_uuid = excluded.head_uuid,
                 used_at = excluded.used_at,
                 ephemeral = MAX(ephemeral, excluded.ephemeral),
                 config_dir = COALESCE(config_dir, excluded.config_dir)",
            params![
                pin.session,
                pin.assistant_uuid,
                ownership == Ownership::Ephemeral,
                config_dir,
                now
            ],
        )?;
        tx.commit()?;
        Ok(id)
    }

    fn unpin(&mut self, id: i64, session: &str, head: Option<&str>) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM pins WHERE id = ?1", [id])?;
        tx.execute(
            "UPDATE sessions SET head_uuid = ?2 WHERE session = ?1",
            params![session, head],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn drop_session(&self, session: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM pins WHERE session = ?1", [session])?;
        self.conn
            .execute("DELETE FROM sessions WHERE session = ?1", [session])?;
        Ok(())
    }

    fn session_head(&self, session: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT head_uuid FROM sessions WHERE session = ?1")?
            .query_row([session], |r| r.get(0))
            .optional()?
            .flatten())
    }

    fn try_lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        pid: i32,
        alive: &dyn Fn(i32) -> bool,
    ) -> Result<Lease> {
        let now = self.now();
        // Shared: the holder is this process's connection (`pid` and
        // `alive` are this host's notions).
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        type Row = (Option<String>, Option<i32>, Option<i64>, bool);
        let row: Option<Row> = tx
            .query_row(
                "SELECT head_uuid, lease_pid, lease_until, draining FROM sessions WHERE session = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        if let Some((current, holder, until, draining)) = row {
            if current.as_deref() != head {
                return Ok(Lease::NotHead);
            }
            if let (Some(holder), Some(until)) = (holder, until) {
                if holder != pid && until > now && alive(holder) {
                    return Ok(Lease::Held { draining });
                }
            }
        }
        tx.execute(
            "INSERT INTO sessions (session, lease_pid, lease_until, draining, used_at)
             VALUES (?1, ?2, ?3, 0, ?4)
             ON CONFLICT(session) DO UPDATE SET lease_pid = excluded.lease_pid,
                 lease_until = excluded.lease_until, draining = 0, used_at = excluded.used_at",
            params![session, pid, now + LEASE_SECS, now],
        )?;
        tx.commit()?;
        Ok(Lease::Taken)
    }

    fn mark_draining(&self, session: &str, pid: i32) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET draining = 1 WHERE session = ?1 AND lease_pid = ?2",
            params![session, pid],
        )?;
        Ok(())
    }

    fn release_lease(&self, session: &str, pid: i32) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET lease_pid = NULL, lease_until = NULL, draining = 0
             WHERE session = ?1 AND lease_pid = ?2",
            params![session, pid],
        )?;
        Ok(())
    }

    fn touch_session(&self, session: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET used_at = ?2 WHERE session = ?1",
            params![session, self.now()],
        )?;
        Ok(())
    }

    fn expired_ephemeral(
        &self,
        idle_before: i64,
        alive: &dyn Fn(i32) -> bool,
    ) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.session, COALESCE(s.config_dir, ''), s.lease_pid FROM sessions s
             WHERE s.ephemeral = 1 AND (
                COALESCE(s.used_at, 0) < ?1
                OR NOT EXISTS (
                    SELECT 1 FROM pins p WHERE p.session = s.session AND NOT EXISTS (
                        SELECT 1 FROM pins q WHERE q.node = p.node AND q.session <> p.session
                            AND q.id > p.id AND q.reply_hashes = p.reply_hashes)))
             LIMIT 64",
        )?;
        let rows = stmt.query_map([idle_before], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<i32>>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (session, config, holder) = row?;
            if holder.is_some_and(&alive) {
                continue;
            }
            out.push((session, config));
        }
        Ok(out)
    }

    fn is_ephemeral(&self, session: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT ephemeral FROM sessions WHERE session = ?1")?
            .query_row([session], |r| r.get(0))
            .optional()?
            .unwrap_or(false))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::Store;

    pub fn new_pin(session: &str, uuid: &str, turns: &[&str], reply: &str) -> NewPin {
        NewPin::of_turns(session, uuid, "/w", turns, reply)
    }

    /// SQLite virtual-machine steps (in hundreds) the turn's queries take.
    fn turn_queries_work(s: &Store, probe: &NewPin) -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        let steps = Arc::new(AtomicU64::new(0));
        let counter = steps.clone();
        s.sqlite().unwrap().progress_handler(
            100,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        );
        assert_eq!(s.find_pins(&probe.node).unwrap().len(), 1);
        assert!(s.session_head(&probe.session).unwrap().is_some());
        s.find_elsewhere(&probe.chain).unwrap();
        s.expired_ephemeral(0, &|_| false).unwrap();
        s.last_attempt(&probe.node, "m", 0).unwrap();
        s.prune_attempts(0).unwrap();
        s.sqlite()
            .unwrap()
            .progress_handler(100, None::<fn() -> bool>);
        steps.load(Ordering::Relaxed)
    }

    #[test]
    fn a_turns_queries_do_not_grow_with_the_pins_kept() {
        // Each query of a turn's path goes through an index: ten times the
        // pins, about the same work (a scan would take ten times the steps).
        let work = |n: usize| {
            let mut s = Store::in_memory().unwrap();
            for i in 0..n {
                let session = format!("s{i}");
                let turn = format!("turn {i}");
                let own = if i % 50 == 0 {
                    Ownership::Ephemeral
                } else {
                    Ownership::Kept
                };
                s.add_pin(&new_pin(&session, "A", &[&turn], "r"), own, "/c")
                    .unwrap();
            }
            let probe = new_pin(
                &format!("s{}", n / 2),
                "A",
                &[&format!("turn {}", n / 2)],
                "r",
            );
            turn_queries_work(&s, &probe)
        };
        let (small, large) = (work(400), work(4_000));
        assert!(
            large <= small * 2 + 20,
            "work grew with the pins: {small} at 400 pins, {large} at 4,000 (hundreds of steps)"
        );
    }

    #[test]
    fn lease_is_exclusive_while_holder_lives_and_says_when_it_drains() {
        let mut s = Store::in_memory().unwrap();
        s.add_pin(&new_pin("S", "A1", &["a"], "r"), Ownership::Kept, "/c")
            .unwrap();
        assert_eq!(
            s.try_lease("S", Some("A1"), 1, &|_| true).unwrap(),
            Lease::Taken
        );
        assert_eq!(
            s.try_lease("S", Some("A1"), 2, &|_| true).unwrap(),
            Lease::Held { draining: false }
        );
        s.mark_draining("S", 1).unwrap();
        assert_eq!(
            s.try_lease("S", Some("A1"), 2, &|_| true).unwrap(),
            Lease::Held { draining: true }
        );
        assert_eq!(
            s.try_lease("S", Some("A1"), 2, &|_| false).unwrap(),
            Lease::Taken,
            "dead holder"
        );
        s.release_lease("S", 2).unwrap();
        // The head moved on: the old node may not resume in place.
        s.add_pin(&new_pin("S", "A9", &["a", "b"], "r"), Ownership::Kept, "/c")
            .unwrap();
        assert_eq!(
            s.try_lease("S", Some("A1"), 3, &|_| true).unwrap(),
            Lease::NotHead
        );
        assert_eq!(
            s.try_lease("S", Some("A9"), 3, &|_| true).unwrap(),
            Lease::Taken
        );
    }
}
