//! Pins, session heads and the prompts continuation by content keeps: as `store::{pins, prompts}`.

use super::conn::{call, owned, Pg, Typed};
use crate::identity::{Chain, ConvKey, Node, PreambleHash, ReplyHash};
use crate::store::types::pins::{Elsewhere, NewPin, Ownership, Pin};
use anyhow::Result;

impl Pg {
    pub fn find_pins(&mut self, node: &Node) -> Result<Vec<Pin>> {
        let rows = call!(self, "finding pins", |c| {
            c.q(
                "SELECT id, session, assistant_uuid, reply_hashes, preamble_hash, turns, created_at
                 FROM pins WHERE node = $1 ORDER BY id DESC",
                &[&node.as_str()],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let hashes: Vec<String> =
                    serde_json::from_str(r.get::<_, &str>(3)).unwrap_or_default();
                Pin {
                    id: r.get(0),
                    session: r.get(1),
                    assistant_uuid: r.get(2),
                    reply_hashes: hashes.into_iter().map(ReplyHash::from_stored).collect(),
                    preamble_hash: r.get::<_, Option<String>>(4).map(PreambleHash::from_stored),
                    turns: r.get(5),
                    created_at: r.get(6),
                    total_cost_usd: None,
                }
            })
            .collect())
    }

    pub fn find_elsewhere(&mut self, chain: &Chain) -> Result<Option<Elsewhere>> {
        let row = call!(self, "finding the turns elsewhere", |c| {
            c.q_opt(
                "SELECT parts, created_at FROM pins WHERE chain = $1 ORDER BY id DESC LIMIT 1",
                &[&chain.as_str()],
            )
            .await
        })?;
        Ok(row.and_then(|r| {
            Some(Elsewhere {
                parts: serde_json::from_str(r.get::<_, Option<&str>>(0)?).ok()?,
                created_at: r.get(1),
            })
        }))
    }

    pub fn add_pin(
        &mut self,
        pin: &NewPin,
        ownership: Ownership,
        config_dir: &str,
        now: i64,
    ) -> Result<i64> {
        let hashes: Vec<&str> = pin.reply_hashes.iter().map(ReplyHash::as_str).collect();
        let hashes = serde_json::to_string(&hashes)?;
        let parts = serde_json::to_string(&pin.parts)?;
        let host = self.host.clone();
        let ephemeral = ownership == Ownership::Ephemeral;
        // One statement: the pin, and the session's head moved to it.
        call!(self, "pinning", |c| {
            let row = c
                .q_one(
                    "WITH p AS (
                        INSERT INTO pins (scope, node, chain, parts, conv_key, session,
                            assistant_uuid, reply_hashes, preamble_hash, turns, cwd, created_at,
                            reply_preview, host)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                        RETURNING id),
                     s AS (
                        INSERT INTO sessions (session, head_uuid, ephemeral, config_dir, used_at)
                        VALUES ($6, $7, $15, $16, $12)
                        ON CONFLICT (session) DO UPDATE SET head_uuid = excluded.head_uuid,
                            used_at = excluded.used_at,
                            ephemeral = sessions.ephemeral OR excluded.ephemeral,
                            config_dir = COALESCE(sessions.config_dir, excluded.config_dir))
                     SELECT id FROM p",
                    &[
                        &pin.scope.as_str(),
                        &pin.node.as_str(),
                        &pin.chain.as_str(),
                        &parts,
                        &pin.conv_key.as_ref().map(ConvKey::as_str),
                        &pin.session,
                        &pin.assistant_uuid,
                        &hashes,
                        &pin.preamble_hash.as_ref().map(PreambleHash::as_str),
                        &(pin.turns as i64),
                        &pin.cwd,
                        &now,
                        &pin.reply_preview,
                        &host,
                        &ephemeral,
                        &config_dir,
                    ],
                )
                .await?;
            Ok(row.get(0))
        })
    }

    pub fn keep_prompt(
        &mut self,
        pin: i64,
        scope: &crate::identity::Scope,
        prompt: &str,
        replies: &str,
        continues: Option<i64>,
    ) -> Result<()> {
        let per_scope = crate::store::types::prompts::PER_SCOPE;
        // Queued (see [`Pg::defer`]): it goes with the turn's next
        // statement, and before the turn ends (the next turn reads it). The
        // three updates see one snapshot, taken before any of them: the
        // scope's newest are counted with the pin that keeps its prompt now
        // and without the one let go (SQLite's three statements see each
        // other's rows; both keep PER_SCOPE).
        self.defer(
            "keeping a prompt",
            "WITH k AS (UPDATE pins SET prompt = $2, replies = $3, continues = $4
                        WHERE id = $1),
                  g AS (UPDATE pins SET prompt = NULL, replies = NULL
                        WHERE id = (SELECT continues FROM pins WHERE id = $4))
             UPDATE pins SET prompt = NULL, replies = NULL
             WHERE scope = $5 AND prompt IS NOT NULL AND id <= (
                SELECT id FROM pins WHERE scope = $5 AND (prompt IS NOT NULL OR id = $1)
                    AND id IS DISTINCT FROM (SELECT continues FROM pins WHERE id = $4)
                ORDER BY id DESC LIMIT 1 OFFSET $6)",
            vec![
                owned(pin),
                owned(prompt.to_owned()),
                owned(replies.to_owned()),
                owned(continues),
                owned(scope.as_str().to_owned()),
                owned(per_scope),
            ],
        );
        Ok(())
    }

    pub fn prompted(
        &mut self,
        scope: &crate::identity::Scope,
        limit: i64,
    ) -> Result<Vec<crate::store::types::prompts::Prompted>> {
        let rows = call!(self, "finding kept prompts", |c| {
            c.q(
                "SELECT id, chain, session, turns, conv_key, octet_length(prompt)::BIGINT, replies
                 FROM pins
                 WHERE scope = $1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT $2",
                &[&scope.as_str(), &limit],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                crate::store::types::prompts::prompted_row(
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                    r.get(6),
                )
            })
            .collect())
    }

    pub fn kept_prompt_head(
        &mut self,
        pin: Option<i64>,
        node: &str,
        head: i64,
    ) -> Result<Option<String>> {
        let head = head as i32;
        let row = call!(self, "reading a kept prompt's start", |c| match pin {
            Some(pin) => {
                c.q_opt(
                    "SELECT substr(prompt, 1, $2) FROM pins WHERE id = $1",
                    &[&pin, &head],
                )
                .await
            }
            None => {
                c.q_opt(
                    "SELECT substr(prompt, 1, $2) FROM pins
                     WHERE node = $1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT 1",
                    &[&node, &head],
                )
                .await
            }
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }

    pub fn prompt_of(&mut self, pin: i64) -> Result<Option<String>> {
        let row = call!(self, "reading a kept prompt", |c| {
            c.q_opt("SELECT prompt FROM pins WHERE id = $1", &[&pin])
                .await
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }

    pub fn unpin(&mut self, id: i64, session: &str, head: Option<&str>) -> Result<()> {
        call!(self, "taking a pin back", |c| {
            c.x(
                "WITH d AS (DELETE FROM pins WHERE id = $1)
                 UPDATE sessions SET head_uuid = $3 WHERE session = $2",
                &[&id, &session, &head],
            )
            .await
        })?;
        Ok(())
    }

    pub fn drop_session(&mut self, session: &str) -> Result<()> {
        self.manifests.remove(session);
        call!(self, "forgetting a session", |c| {
            c.x(
                "WITH p AS (DELETE FROM pins WHERE session = $1),
                      t AS (DELETE FROM transcript_chunks WHERE session = $1)
                 DELETE FROM sessions WHERE session = $1",
                &[&session],
            )
            .await
        })?;
        Ok(())
    }

    pub fn session_head(&mut self, session: &str) -> Result<Option<String>> {
        let row = call!(self, "reading a session's head", |c| {
            c.q_opt(
                "SELECT head_uuid FROM sessions WHERE session = $1",
                &[&session],
            )
            .await
        })?;
        Ok(row.and_then(|r| r.get(0)))
    }
}
