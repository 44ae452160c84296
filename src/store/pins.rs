//! Pins: a conversation node (scope + chain hash of its user turns) and the
//! reply the caller received → the Claude Code session that holds it.
//! Sessions: which node is the head of each session, and the in-place lease.

use super::Store;
use anyhow::Result;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub id: i64,
    pub session: String,
    pub assistant_uuid: Option<String>,
    pub reply_hashes: Vec<String>,
    pub preamble_hash: Option<String>,
    pub turns: i64,
    pub created_at: i64,
}

pub struct NewPin<'a> {
    pub scope: &'a str,
    pub chain: &'a str,
    pub session: &'a str,
    pub assistant_uuid: Option<&'a str>,
    pub reply_hashes: &'a [String],
    pub preamble_hash: Option<&'a str>,
    pub turns: usize,
    pub cwd: &'a str,
    pub reply_preview: &'a str,
}

/// A lease older than this is stale even if its pid is alive (pid reuse).
const LEASE_SECS: i64 = 6 * 3600;

impl Store {
    /// Pins of one node, newest first.
    pub fn find_pins(&self, scope: &str, chain: &str) -> Result<Vec<Pin>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, session, assistant_uuid, reply_hashes, preamble_hash, turns, created_at
             FROM pins WHERE scope = ?1 AND chain = ?2 ORDER BY id DESC",
        )?;
        let rows = stmt.query_map(params![scope, chain], |r| {
            let hashes: String = r.get(3)?;
            Ok(Pin {
                id: r.get(0)?,
                session: r.get(1)?,
                assistant_uuid: r.get(2)?,
                reply_hashes: serde_json::from_str(&hashes).unwrap_or_default(),
                preamble_hash: r.get(4)?,
                turns: r.get(5)?,
                created_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Record a node reached by a successful run; it becomes its session's head.
    pub fn add_pin(&mut self, pin: &NewPin<'_>) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO pins (scope, chain, session, assistant_uuid, reply_hashes, preamble_hash,
                               turns, cwd, created_at, reply_preview)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                pin.scope,
                pin.chain,
                pin.session,
                pin.assistant_uuid,
                serde_json::to_string(pin.reply_hashes)?,
                pin.preamble_hash,
                pin.turns as i64,
                pin.cwd,
                super::now(),
                pin.reply_preview,
            ],
        )?;
        tx.execute(
            "INSERT INTO sessions (session, head_uuid) VALUES (?1, ?2)
             ON CONFLICT(session) DO UPDATE SET head_uuid = excluded.head_uuid",
            params![pin.session, pin.assistant_uuid],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Forget a session's pins (its file is gone or the CLI refused it).
    pub fn drop_session(&self, session: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM pins WHERE session = ?1", [session])?;
        self.conn
            .execute("DELETE FROM sessions WHERE session = ?1", [session])?;
        Ok(())
    }

    pub fn session_head(&self, session: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT head_uuid FROM sessions WHERE session = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()?
            .flatten())
    }

    /// Take the in-place lease on `session` for `pid` if its head is still
    /// `head` and no live holder has it. Head check and lease are one
    /// IMMEDIATE transaction, so a turn that just moved the head cannot be
    /// overwritten by one that read the old head.
    pub fn try_lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        pid: i32,
        alive: impl Fn(i32) -> bool,
    ) -> Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row: Option<(Option<String>, Option<i32>, Option<i64>)> = tx
            .query_row(
                "SELECT head_uuid, lease_pid, lease_until FROM sessions WHERE session = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let now = super::now();
        if let Some((current, holder, until)) = row {
            if current.as_deref() != head {
                return Ok(false);
            }
            if let (Some(holder), Some(until)) = (holder, until) {
                if holder != pid && until > now && alive(holder) {
                    return Ok(false);
                }
            }
        }
        tx.execute(
            "INSERT INTO sessions (session, lease_pid, lease_until) VALUES (?1, ?2, ?3)
             ON CONFLICT(session) DO UPDATE SET lease_pid = excluded.lease_pid,
                                                lease_until = excluded.lease_until",
            params![session, pid, now + LEASE_SECS],
        )?;
        tx.commit()?;
        Ok(true)
    }

    pub fn release_lease(&self, session: &str, pid: i32) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET lease_pid = NULL, lease_until = NULL
             WHERE session = ?1 AND lease_pid = ?2",
            params![session, pid],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin<'a>(session: &'a str, uuid: &'a str, hashes: &'a [String]) -> NewPin<'a> {
        NewPin {
            scope: "sc",
            chain: "ch",
            session,
            assistant_uuid: Some(uuid),
            reply_hashes: hashes,
            preamble_hash: None,
            turns: 1,
            cwd: "/w",
            reply_preview: "hi",
        }
    }

    #[test]
    fn pins_heads_and_drop() {
        let mut s = Store::in_memory().unwrap();
        let h = vec!["r1".to_string()];
        s.add_pin(&pin("S", "A1", &h)).unwrap();
        s.add_pin(&pin("T", "B1", &h)).unwrap();
        let found = s.find_pins("sc", "ch").unwrap();
        assert_eq!(
            found.iter().map(|p| p.session.as_str()).collect::<Vec<_>>(),
            ["T", "S"]
        );
        assert_eq!(found[1].reply_hashes, h);
        assert_eq!(s.session_head("S").unwrap().as_deref(), Some("A1"));
        s.drop_session("S").unwrap();
        assert_eq!(s.find_pins("sc", "ch").unwrap().len(), 1);
        assert_eq!(s.session_head("S").unwrap(), None);
    }

    #[test]
    fn lease_is_exclusive_while_holder_lives() {
        let mut s = Store::in_memory().unwrap();
        let h = vec![];
        s.add_pin(&pin("S", "A1", &h)).unwrap();
        assert!(s.try_lease("S", Some("A1"), 1, |_| true).unwrap());
        assert!(!s.try_lease("S", Some("A1"), 2, |_| true).unwrap());
        assert!(
            s.try_lease("S", Some("A1"), 2, |_| false).unwrap(),
            "dead holder"
        );
        s.release_lease("S", 2).unwrap();
        // The head moved on: the old node may not resume in place.
        s.add_pin(&pin("S", "A9", &h)).unwrap();
        assert!(!s.try_lease("S", Some("A1"), 3, |_| true).unwrap());
        assert!(s.try_lease("S", Some("A9"), 3, |_| true).unwrap());
        assert_eq!(s.session_head("S").unwrap().as_deref(), Some("A9"));
    }
}
