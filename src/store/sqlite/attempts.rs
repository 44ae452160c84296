//! `Attempts` ([`crate::store::attempts`]) in the SQLite file.

use super::local::Local;
use crate::identity::Node;
use crate::store::attempts::*;
use crate::store::types::attempts::{AttemptRow, Outcome};
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

impl Attempts for Local {
    fn start_attempt(
        &self,
        node: &Node,
        message: &str,
        session: &str,
        pid: i32,
        continues: i64,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO attempts (node, message, session, pid, started_at, continues)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![node.as_str(), message, session, pid, self.now(), continues],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn end_attempt(&self, id: i64, outcome: Outcome) -> Result<()> {
        self.conn.execute(
            "UPDATE attempts SET ended_at = ?2, outcome = ?3 WHERE id = ?1",
            params![id, self.now(), outcome.as_str()],
        )?;
        Ok(())
    }

    fn last_attempt(&self, node: &Node, message: &str, since: i64) -> Result<Option<AttemptRow>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, session, pid, started_at, outcome, continues FROM attempts
                 WHERE node = ?1 AND message = ?2 AND started_at >= ?3
                 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![node.as_str(), message, since], |r| {
                let outcome: Option<String> = r.get(4)?;
                Ok(AttemptRow {
                    id: r.get(0)?,
                    session: r.get(1)?,
                    pid: r.get(2)?,
                    started_at: r.get(3)?,
                    outcome: outcome.map(|o| {
                        if o == "result" {
                            Outcome::Result
                        } else {
                            Outcome::NoResult
                        }
                    }),
                    continues: r.get(5)?,
                })
            })
            .optional()?)
    }

    fn prune_attempts(&self, before: i64) -> Result<usize> {
        Ok(self
            .conn
            .execute("DELETE FROM attempts WHERE started_at < ?1", [before])?)
    }
}
