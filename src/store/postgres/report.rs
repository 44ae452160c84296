//! The management queries (`stats`, `pins`, `forget`, `gc`, `doctor`) on
//! the shared store. Same meaning as `store::report`.

use super::conn::{call, call_tx, Pg, Typed};
use crate::store::sqlite::LocalTime;
use crate::store::types::report::{Health, LogRow, PinRow, Removed, RunRow, Tokens};
use crate::store::types::runs;
use anyhow::Result;

/// Drop session rows no pin refers to, and the transcripts of sessions
/// that are gone.
const ORPHANS: &str = "DELETE FROM sessions WHERE session NOT IN (SELECT session FROM pins)";
const ORPHAN_TRANSCRIPTS: &str =
    "DELETE FROM transcript_chunks WHERE session NOT IN (SELECT session FROM sessions)";

impl Pg {
    pub fn runs_since(&mut self, since: i64, cwd: Option<&str>) -> Result<Vec<RunRow>> {
        let rows = call!(self, "reading runs", |c| {
            c.q(
                "SELECT at, kind, bytes_in, bytes_sent, input_tokens, cache_write_tokens,
                        cache_read_tokens, output_tokens, cost_usd, exit, replay_misses_prefix
                 FROM runs WHERE at >= $1 AND ($2::TEXT IS NULL OR cwd = $2) ORDER BY at, id",
                &[&since, &cwd],
            )
            .await
        })?;
        // The day in this machine's local time, as the SQLite store says it.
        let local = LocalTime::new()?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(RunRow {
                day: local.format("%Y-%m-%d", r.get(0))?,
                kind: runs::Kind::from_stored(r.get(1)),
                bytes_in: r.get(2),
                bytes_sent: r.get(3),
                tokens: Tokens::of_columns([r.get(4), r.get(5), r.get(6), r.get(7)]),
                cost_usd: r.get(8),
                exit: r.get::<_, Option<i32>>(9).map(i64::from),
                replay_misses_prefix: r.get::<_, Option<bool>>(10).unwrap_or(false),
            });
        }
        Ok(out)
    }

    /// As `Store::recent_runs`: newest first, at most `limit`.
    pub fn recent_runs(
        &mut self,
        since: i64,
        cwd: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<LogRow>> {
        let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = call!(self, "reading runs", |c| {
            c.q(
                "SELECT at, cwd, kind, why_code, why, session, conv_key, exit, bytes_in,
                        bytes_sent, input_tokens, cache_write_tokens, cache_read_tokens,
                        output_tokens, usage_from, cost_usd, total_cost_usd, engine, cache_miss
                 FROM runs WHERE at >= $1 AND ($2::TEXT IS NULL OR cwd = $2)
                 ORDER BY at DESC, id DESC LIMIT $3",
                &[&since, &cwd, &limit],
            )
            .await
        })?;
        let local = LocalTime::new()?;
        rows.iter()
            .map(|r| {
                Ok(LogRow {
                    at: r.get(0),
                    local: local.format("%Y-%m-%d %H:%M", r.get(0))?,
                    cwd: r.get(1),
                    kind: runs::Kind::from_stored(r.get(2)),
                    why_code: r.get(3),
                    why: r.get(4),
                    session: r.get(5),
                    conv_key: r.get(6),
                    exit: r.get::<_, Option<i32>>(7).map(i64::from),
                    bytes_in: r.get(8),
                    bytes_sent: r.get(9),
                    tokens: Tokens::of_columns([r.get(10), r.get(11), r.get(12), r.get(13)]),
                    usage_from: r.get(14),
                    cost_usd: r.get(15),
                    total_cost_usd: r.get(16),
                    engine: r
                        .get::<_, Option<&str>>(17)
                        .and_then(runs::Engine::from_stored),
                    cache_miss: r
                        .get::<_, Option<&str>>(18)
                        .and_then(crate::cache_miss::CacheMiss::from_stored),
                })
            })
            .collect()
    }

    pub fn count_pinned(&mut self) -> Result<i64> {
        call!(self, "counting pinned sessions", |c| {
            c.q_one("SELECT COUNT(DISTINCT session) FROM pins", &[])
                .await
                .map(|r| r.get::<_, i64>(0))
        })
    }

    pub fn latest_pins(&mut self, cwd: Option<&str>) -> Result<Vec<PinRow>> {
        let rows = call!(self, "reading pins", |c| {
            c.q(
                "SELECT p.session, p.cwd, p.turns, p.created_at, COALESCE(p.reply_preview, ''), m.n
                 FROM pins p
                 JOIN (SELECT session, MAX(id) AS id, COUNT(*) AS n FROM pins GROUP BY session) m
                   ON p.id = m.id
                 WHERE $1::TEXT IS NULL OR p.cwd = $1
                 ORDER BY p.id DESC",
                &[&cwd],
            )
            .await
        })?;
        Ok(rows
            .iter()
            .map(|r| PinRow {
                session: r.get(0),
                cwd: r.get(1),
                turns: r.get(2),
                created_at: r.get(3),
                reply_preview: r.get(4),
                pins: r.get(5),
            })
            .collect())
    }

    pub fn pinned_sessions(&mut self) -> Result<Vec<String>> {
        let rows = call!(self, "reading sessions", |c| {
            c.q("SELECT DISTINCT session FROM pins ORDER BY session", &[])
                .await
        })?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub fn forget_sessions(&mut self, sessions: &[String]) -> Result<Removed> {
        self.manifests.clear();
        call_tx!(self, "forgetting sessions", |c| {
            let tx = c.transaction().await?;
            let mut removed = Removed::default();
            for s in sessions {
                removed.pins += tx.x("DELETE FROM pins WHERE session = $1", &[s]).await? as usize;
                removed.sessions += tx
                    .x("DELETE FROM sessions WHERE session = $1", &[s])
                    .await? as usize;
                tx.x("DELETE FROM transcript_chunks WHERE session = $1", &[s])
                    .await?;
            }
            tx.commit().await?;
            Ok(removed)
        })
    }

    pub fn forget_cwd(&mut self, cwd: &str) -> Result<Removed> {
        self.manifests.clear();
        call_tx!(self, "forgetting a directory", |c| {
            let tx = c.transaction().await?;
            let pins = tx.x("DELETE FROM pins WHERE cwd = $1", &[&cwd]).await? as usize;
            let sessions = tx.x(ORPHANS, &[]).await? as usize;
            tx.x(ORPHAN_TRANSCRIPTS, &[]).await?;
            tx.commit().await?;
            Ok(Removed {
                pins,
                sessions,
                runs: 0,
            })
        })
    }

    pub fn forget_all(&mut self) -> Result<Removed> {
        self.manifests.clear();
        call_tx!(self, "forgetting everything", |c| {
            let tx = c.transaction().await?;
            let pins = tx.x("DELETE FROM pins", &[]).await? as usize;
            let sessions = tx.x("DELETE FROM sessions", &[]).await? as usize;
            tx.x("DELETE FROM transcript_chunks", &[]).await?;
            tx.commit().await?;
            Ok(Removed {
                pins,
                sessions,
                runs: 0,
            })
        })
    }

    pub fn count_prunable(
        &mut self,
        gone: &[String],
        pins_before: i64,
        runs_before: i64,
    ) -> Result<Removed> {
        call!(self, "counting what gc would drop", |c| {
            let mut pins: i64 = c
                .q_one(
                    "SELECT COUNT(*) FROM pins WHERE created_at < $1",
                    &[&pins_before],
                )
                .await?
                .get(0);
            for s in gone {
                pins += c
                    .q_one(
                        "SELECT COUNT(*) FROM pins WHERE session = $1 AND created_at >= $2",
                        &[s, &pins_before],
                    )
                    .await?
                    .get::<_, i64>(0);
            }
            // The session rows prune leaves without a pin: those with none
            // younger than the cutoff, and those of gone sessions that still had one.
            let mut sessions: i64 = c
                .q_one(
                    "SELECT COUNT(*) FROM sessions s WHERE NOT EXISTS
                       (SELECT 1 FROM pins p WHERE p.session = s.session AND p.created_at >= $1)",
                    &[&pins_before],
                )
                .await?
                .get(0);
            for s in gone {
                sessions += c
                    .q_one(
                        "SELECT COUNT(*) FROM sessions s WHERE s.session = $1 AND EXISTS
                           (SELECT 1 FROM pins p WHERE p.session = s.session AND p.created_at >= $2)",
                        &[s, &pins_before],
                    )
                    .await?
                    .get::<_, i64>(0);
            }
            let runs: i64 = c
                .q_one("SELECT COUNT(*) FROM runs WHERE at < $1", &[&runs_before])
                .await?
                .get(0);
            Ok(Removed {
                pins: pins as usize,
                sessions: sessions as usize,
                runs: runs as usize,
            })
        })
    }

    pub fn prune(
        &mut self,
        gone: &[String],
        pins_before: i64,
        runs_before: i64,
    ) -> Result<Removed> {
        call_tx!(self, "dropping old pins and runs", |c| {
            let tx = c.transaction().await?;
            let mut removed = Removed::default();
            for s in gone {
                removed.pins += tx.x("DELETE FROM pins WHERE session = $1", &[s]).await? as usize;
            }
            removed.pins += tx
                .x("DELETE FROM pins WHERE created_at < $1", &[&pins_before])
                .await? as usize;
            removed.sessions = tx.x(ORPHANS, &[]).await? as usize;
            tx.x(ORPHAN_TRANSCRIPTS, &[]).await?;
            removed.runs = tx
                .x("DELETE FROM runs WHERE at < $1", &[&runs_before])
                .await? as usize;
            tx.commit().await?;
            Ok(removed)
        })
    }

    pub fn vacuum(&mut self) -> Result<()> {
        call!(self, "vacuuming", |c| c
            .batch_execute(
                "VACUUM ANALYZE pins, sessions, runs, attempts, capabilities, transcript_chunks",
            )
            .await)
    }

    pub fn health(&mut self) -> Result<Health> {
        let version = self.schema_version()?;
        Ok(Health {
            quick_check: "ok".into(),
            schema_version: version,
            schema_expected: super::migrations::COUNT as i64,
        })
    }
}
