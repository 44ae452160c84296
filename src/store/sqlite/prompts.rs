//! `Prompts` ([`crate::store::prompts`]) in the SQLite file.

use super::local::Local;
use crate::identity::{Node, Scope};
use crate::store::prompts::*;
use crate::store::types::prompts::prompted_row;
use crate::store::types::prompts::{Kept, Prompted, PER_SCOPE};
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

impl Prompts for Local {
    fn keep_prompt(&mut self, pin: i64, scope: &Scope, kept: &Kept<'_>) -> Result<()> {
        if kept.prompt.len() > MAX_PROMPT {
            return Ok(());
        }
        let replies = serde_json::to_string(kept.replies)?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE pins SET prompt = ?2, replies = ?3, continues = ?4 WHERE id = ?1",
            params![pin, kept.prompt, replies, kept.continues],
        )?;
        tx.execute(
            "UPDATE pins SET prompt = NULL, replies = NULL
             WHERE id = (SELECT continues FROM pins WHERE id = ?1)",
            params![kept.continues],
        )?;
        tx.execute(
            "UPDATE pins SET prompt = NULL, replies = NULL
             WHERE scope = ?1 AND prompt IS NOT NULL AND id <= (
                SELECT id FROM pins WHERE scope = ?1 AND prompt IS NOT NULL
                ORDER BY id DESC LIMIT 1 OFFSET ?2)",
            params![scope.as_str(), PER_SCOPE],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn prompted(&self, scope: &Scope) -> Result<Vec<Prompted>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, chain, session, turns, conv_key, length(CAST(prompt AS BLOB)), replies
             FROM pins
             WHERE scope = ?1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![scope.as_str(), CANDIDATES], |r| {
            Ok(prompted_row(
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?;
        Ok(rows
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect())
    }

    fn kept_prompt_head(&self, pin: Option<i64>, node: &Node) -> Result<Option<String>> {
        let head = match pin {
            Some(pin) => self
                .conn
                .prepare_cached("SELECT substr(prompt, 1, ?2) FROM pins WHERE id = ?1")?
                .query_row(params![pin, HEAD], |r| r.get::<_, Option<String>>(0)),
            None => self
                .conn
                .prepare_cached(
                    "SELECT substr(prompt, 1, ?2) FROM pins
                     WHERE node = ?1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT 1",
                )?
                .query_row(params![node.as_str(), HEAD], |r| {
                    r.get::<_, Option<String>>(0)
                }),
        };
        Ok(head.optional()?.flatten())
    }

    fn prompt_of(&self, pin: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT prompt FROM pins WHERE id = ?1")?
            .query_row(params![pin], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .flatten())
    }
}
