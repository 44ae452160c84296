//! The turn's operations on the shared store: pins, session heads and
//! leases, the runs log, attempts, capabilities, transcripts. Same meaning
//! as the SQLite ones in `store::{pins, runs, attempts, caps}`.

use super::{call, lease_key, owned, Pg, Typed};
use crate::events::Usage;
use crate::identity::{Chain, ConvKey, Node, PreambleHash, ReplyHash};
use crate::probe::Capabilities;
use crate::store::attempts::{AttemptRow, Outcome};
use crate::store::caps::BinaryKey;
use crate::store::pins::{Elsewhere, Lease, NewPin, Ownership, Pin};
use crate::store::runs::Run;
use crate::store::transcripts::Chunk;
use anyhow::{bail, Result};

/// A session's transcript chunks, in order, without their bytes.
const MANIFEST: &str =
    "SELECT start, len, sha256 FROM transcript_chunks WHERE session = $1 ORDER BY start";

fn chunk_of(r: &tokio_postgres::Row) -> Chunk {
    Chunk {
        start: r.get::<_, i64>(0) as u64,
        len: r.get::<_, i64>(1) as u64,
        sha256: r.get(2),
    }
}

/// Rows of a transcript chunk at most this big.
const CHUNK_MAX: usize = 1 << 20;

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
        let per_scope = crate::store::prompts::PER_SCOPE;
        call!(self, "keeping a prompt", |c| {
            c.x(
                "WITH k AS (UPDATE pins SET prompt = $2, replies = $3, continues = $4
                            WHERE id = $1),
                      g AS (UPDATE pins SET prompt = NULL, replies = NULL
                            WHERE id = (SELECT continues FROM pins WHERE id = $4))
                 UPDATE pins SET prompt = NULL, replies = NULL
                 WHERE scope = $5 AND prompt IS NOT NULL AND id <= (
                    SELECT id FROM pins WHERE scope = $5 AND prompt IS NOT NULL
                    ORDER BY id DESC LIMIT 1 OFFSET $6)",
                &[
                    &pin,
                    &prompt,
                    &replies,
                    &continues,
                    &scope.as_str(),
                    &per_scope,
                ],
            )
            .await
        })?;
        Ok(())
    }

    pub fn prompted(
        &mut self,
        scope: &crate::identity::Scope,
        limit: i64,
    ) -> Result<Vec<crate::store::prompts::Prompted>> {
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
                crate::store::prompts::prompted_row(
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
    fn lease(
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
            && self.io.patience == super::Patience::Turn
            && !self.manifests.contains_key(session);
        let answer = call!(self, "taking the lease", |c| {
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
            let (lease, manifest) = futures_util::future::join(lease, manifest).await;
            lease.map(|l| (l, manifest))
        });
        let ((verdict, stored_head), manifest) = match answer {
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

    /// Queued (see [`Pg::defer`]): a turn logs its run after the caller has
    /// everything, and nothing waits for the row.
    pub fn log_run(&mut self, run: &Run<'_>, now: i64) -> Result<()> {
        let usage: Option<Usage> = run.spent.usage.map(|(u, _)| u);
        let n = |f: fn(&Usage) -> u64| usage.as_ref().map(|u| f(u) as i64);
        let text = |s: Option<&str>| s.map(str::to_owned);
        self.defer(
            "logging the run",
            "INSERT INTO runs (at, cwd, kind, exit, bytes_in, bytes_sent, input_tokens,
                cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, session,
                why_code, why, total_cost_usd, usage_from, conv_key, engine, host)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                     $16, $17, $18, $19)",
            vec![
                owned(now),
                owned(run.cwd.to_owned()),
                owned(run.kind.as_str().to_owned()),
                owned(run.exit),
                owned(run.bytes_in as i64),
                owned(run.bytes_sent as i64),
                owned(n(|u| u.input_tokens)),
                owned(n(|u| u.cache_creation_input_tokens)),
                owned(n(|u| u.cache_read_input_tokens)),
                owned(n(|u| u.output_tokens)),
                owned(run.spent.cost_usd),
                owned(text(run.session)),
                owned(run.why_code.to_owned()),
                owned(run.why.to_owned()),
                owned(run.spent.total_cost_usd),
                owned(text(run.spent.usage.map(|(_, from)| from.as_str()))),
                owned(text(run.conv_key)),
                owned(run.engine.to_owned()),
                owned(self.host.clone()),
            ],
        );
        Ok(())
    }

    pub fn run_counts(&mut self) -> Result<Vec<(String, i64)>> {
        let rows = call!(self, "counting runs", |c| {
            c.q(
                "SELECT kind, COUNT(*) FROM runs GROUP BY kind ORDER BY kind",
                &[],
            )
            .await
        })?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub fn start_attempt(
        &mut self,
        node: &Node,
        message: &str,
        session: &str,
        pid: i32,
        continues: i64,
        now: i64,
    ) -> Result<i64> {
        let host = self.host.clone();
        call!(self, "recording an attempt", |c| {
            let row = c
                .q_one(
                    "INSERT INTO attempts (node, message, session, pid, started_at, continues, host)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    &[&node.as_str(), &message, &session, &pid, &now, &continues, &host],
                )
                .await?;
            Ok(row.get(0))
        })
    }

    /// Queued (see [`Pg::defer`]): sent with the turn's next statement,
    /// the pin at its result when there is one.
    pub fn end_attempt(&mut self, id: i64, outcome: Outcome, now: i64) -> Result<()> {
        self.defer(
            "ending an attempt",
            "UPDATE attempts SET ended_at = $2, outcome = $3 WHERE id = $1",
            vec![owned(id), owned(now), owned(outcome.as_str().to_owned())],
        );
        Ok(())
    }

    pub fn last_attempt(
        &mut self,
        node: &Node,
        message: &str,
        since: i64,
    ) -> Result<Option<AttemptRow>> {
        let row = call!(self, "reading the last attempt", |c| {
            c.q_opt(
                "SELECT id, session, pid, started_at, outcome, continues FROM attempts
                 WHERE node = $1 AND message = $2 AND started_at >= $3
                 ORDER BY id DESC LIMIT 1",
                &[&node.as_str(), &message, &since],
            )
            .await
        })?;
        Ok(row.map(|r| AttemptRow {
            id: r.get(0),
            session: r.get(1),
            pid: r.get(2),
            started_at: r.get(3),
            outcome: r.get::<_, Option<&str>>(4).map(Outcome::parse),
            continues: r.get(5),
        }))
    }

    pub fn prune_attempts(&mut self, before: i64) -> Result<usize> {
        let n = call!(self, "pruning attempts", |c| {
            c.x("DELETE FROM attempts WHERE started_at < $1", &[&before])
                .await
        })?;
        Ok(n as usize)
    }

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
        let row = call!(self, "reading a session file's scan", |c| {
            c.q_opt("SELECT scan FROM scans WHERE path = $1", &[&path])
                .await
        })?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Queued (see [`Pg::defer`]): a scan only saves the next one work.
    pub fn save_scan(&mut self, path: &str, scan: &str, now: i64) -> Result<()> {
        self.defer(
            "saving a session file's scan",
            "INSERT INTO scans (path, scan, at) VALUES ($1, $2, $3)
             ON CONFLICT (path) DO UPDATE SET scan = excluded.scan, at = excluded.at",
            vec![owned(path.to_owned()), owned(scan.to_owned()), owned(now)],
        );
        Ok(())
    }

    /// A session's transcript chunks, in order, without their bytes.
    pub fn transcript_manifest(&mut self, session: &str) -> Result<Vec<Chunk>> {
        if let Some(known) = self.manifests.get(session) {
            return Ok(known.clone());
        }
        // Only a turn remembers (a few seconds, its session leased); the
        // keeper and management commands live long and read afresh.
        let remember = self.io.patience == super::Patience::Turn;
        let rows = call!(self, "reading a transcript's chunks", |c| {
            c.q(MANIFEST, &[&session]).await
        })?;
        let chunks: Vec<Chunk> = rows.iter().map(chunk_of).collect();
        if remember {
            self.manifests.insert(session.to_owned(), chunks.clone());
        }
        Ok(chunks)
    }

    /// The chunks from byte `from` on (a chunk boundary), with their bytes.
    pub fn transcript_from(&mut self, session: &str, from: u64) -> Result<Vec<(Chunk, Vec<u8>)>> {
        let rows = call!(self, "downloading a transcript", |c| {
            c.q(
                "SELECT start, len, sha256, data FROM transcript_chunks
                 WHERE session = $1 AND start >= $2 ORDER BY start",
                &[&session, &(from as i64)],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    Chunk {
                        start: r.get::<_, i64>(0) as u64,
                        len: r.get::<_, i64>(1) as u64,
                        sha256: r.get(2),
                    },
                    r.get(3),
                )
            })
            .collect())
    }

    /// Append `data` at byte `start` of the session's transcript, which
    /// must be where the stored one ends (else another writer came first).
    pub fn append_transcript(
        &mut self,
        session: &str,
        start: u64,
        data: &[u8],
        now: i64,
    ) -> Result<()> {
        let host = self.host.clone();
        // One statement a chunk: inserted only where the stored transcript
        // ends (two writers racing for the same end collide on the key).
        let mut at = start;
        for piece in data.chunks(CHUNK_MAX) {
            let sha = crate::store::transcripts::sha256(piece);
            let kept = sha.clone();
            let host = &host;
            let wrote = call!(self, "uploading a transcript", |c| {
                c.x(
                    "INSERT INTO transcript_chunks (session, start, len, sha256, data,
                         uploaded_at, host)
                     SELECT $1, $2, $3, $4, $5, $6, $7
                     WHERE (SELECT COALESCE(MAX(start + len), 0) FROM transcript_chunks
                            WHERE session = $1) = $2",
                    &[
                        &session,
                        &(at as i64),
                        &(piece.len() as i64),
                        &sha,
                        &piece,
                        &now,
                        host,
                    ],
                )
                .await
            })?;
            if wrote == 0 {
                self.manifests.remove(session);
                let end = self
                    .transcript_manifest(session)?
                    .last()
                    .map_or(0, Chunk::end);
                bail!("the stored transcript of {session} ends at byte {end}, not {at}");
            }
            match self.manifests.get_mut(session) {
                Some(known) if known.last().map_or(0, Chunk::end) == at => known.push(Chunk {
                    start: at,
                    len: piece.len() as u64,
                    sha256: kept,
                }),
                _ => {
                    self.manifests.remove(session);
                }
            }
            at += piece.len() as u64;
        }
        Ok(())
    }
}

impl Pg {
    /// As `Store::shim_sessions`; a lease counts while its holder's
    /// connection is live, and its pid is known when it is on this host.
    pub fn shim_sessions(&mut self) -> Result<Vec<crate::store::listing::ShimSession>> {
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
                crate::store::listing::ShimSession {
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
            kind: crate::store::runs::Kind::Fresh,
            why_code: S,
            why: S,
            exit: 0,
            bytes_in: 0,
            bytes_sent: 0,
            spent: Default::default(),
            session: Some(S),
            conv_key: None,
            engine: S,
        };
        self.log_run(&run, 0)?;
        self.mark_draining(S)?;
        self.append_transcript(S, 0, b"{}\n", 0)?;
        // Its advisory lock is the session's, not the transaction's.
        self.release_lease(S)
    }
}
