//! `Report` ([`crate::store::report`]) in the SQLite file.

use super::local::Local;
use crate::store::engine::Engine;
use crate::store::report::*;
use crate::store::types::report::{Health, LogRow, PinRow, Removed, RunRow, Tokens};
use crate::store::types::runs;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

/// Usage from four nullable columns: None when all four are NULL.
fn tokens_at(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Option<Tokens>> {
    Ok(Tokens::of_columns([
        r.get(first)?,
        r.get(first + 1)?,
        r.get(first + 2)?,
        r.get(first + 3)?,
    ]))
}

/// Drop session rows no pin refers to (they only carried a head and lease).
const ORPHAN_SESSIONS: &str =
    "DELETE FROM sessions WHERE session NOT IN (SELECT session FROM pins)";

impl Report for Local {
    fn runs_since(&self, since: i64, cwd: Option<&str>) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT date(at, 'unixepoch', 'localtime'), kind, bytes_in, bytes_sent,
                    input_tokens, cache_write_tokens, cache_read_tokens, output_tokens, cost_usd,
                    exit, replay_misses_prefix
             FROM runs WHERE at >= ?1 AND (?2 IS NULL OR cwd = ?2) ORDER BY at, id",
        )?;
        let rows = stmt.query_map(params![since, cwd], |r| {
            Ok(RunRow {
                day: r.get(0)?,
                kind: runs::Kind::from_stored(&r.get::<_, String>(1)?),
                bytes_in: r.get(2)?,
                bytes_sent: r.get(3)?,
                tokens: tokens_at(r, 4)?,
                cost_usd: r.get(8)?,
                exit: r.get(9)?,
                replay_misses_prefix: r.get::<_, Option<bool>>(10)?.unwrap_or(false),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn recent_runs(
        &self,
        since: i64,
        cwd: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<LogRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT at, strftime('%Y-%m-%d %H:%M', at, 'unixepoch', 'localtime'), cwd, kind,
                    why_code, why, session, conv_key, exit, bytes_in, bytes_sent,
                    input_tokens, cache_write_tokens, cache_read_tokens, output_tokens,
                    usage_from, cost_usd, total_cost_usd, engine, cache_miss
             FROM runs WHERE at >= ?1 AND (?2 IS NULL OR cwd = ?2)
             ORDER BY at DESC, id DESC LIMIT ?3",
        )?;
        // SQLite: a negative LIMIT is no limit.
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = stmt.query_map(params![since, cwd, limit], |r| {
            Ok(LogRow {
                at: r.get(0)?,
                local: r.get(1)?,
                cwd: r.get(2)?,
                kind: runs::Kind::from_stored(&r.get::<_, String>(3)?),
                why_code: r.get(4)?,
                why: r.get(5)?,
                session: r.get(6)?,
                conv_key: r.get(7)?,
                exit: r.get(8)?,
                bytes_in: r.get(9)?,
                bytes_sent: r.get(10)?,
                tokens: tokens_at(r, 11)?,
                usage_from: r.get(15)?,
                cost_usd: r.get(16)?,
                total_cost_usd: r.get(17)?,
                engine: r
                    .get::<_, Option<String>>(18)?
                    .as_deref()
                    .and_then(runs::Engine::from_stored),
                cache_miss: r
                    .get::<_, Option<String>>(19)?
                    .as_deref()
                    .and_then(crate::cache_miss::CacheMiss::from_stored),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn local_day(&self, at: i64) -> Result<String> {
        Ok(self
            .conn
            .query_row("SELECT date(?1, 'unixepoch', 'localtime')", [at], |r| {
                r.get(0)
            })?)
    }

    fn count_pinned(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(DISTINCT session) FROM pins", [], |r| r.get(0))?)
    }

    fn latest_pins(&self, cwd: Option<&str>) -> Result<Vec<PinRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT p.session, p.cwd, p.turns, p.created_at, COALESCE(p.reply_preview, ''), m.n
             FROM pins p
             JOIN (SELECT session, MAX(id) AS id, COUNT(*) AS n FROM pins GROUP BY session) m
               ON p.id = m.id
             WHERE ?1 IS NULL OR p.cwd = ?1
             ORDER BY p.id DESC",
        )?;
        let rows = stmt.query_map(params![cwd], |r| {
            Ok(PinRow {
                session: r.get(0)?,
                cwd: r.get(1)?,
                turns: r.get(2)?,
                created_at: r.get(3)?,
                reply_preview: r.get(4)?,
                pins: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn pinned_sessions(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT session FROM pins ORDER BY session")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn forget_sessions(&mut self, sessions: &[String]) -> Result<Removed> {
        let tx = self.conn.transaction()?;
        let mut removed = Removed::default();
        for s in sessions {
            removed.pins += tx.execute("DELETE FROM pins WHERE session = ?1", [s])?;
            removed.sessions += tx.execute("DELETE FROM sessions WHERE session = ?1", [s])?;
        }
        tx.commit()?;
        Ok(removed)
    }

    fn forget_cwd(&mut self, cwd: &str) -> Result<Removed> {
        let tx = self.conn.transaction()?;
        let pins = tx.execute("DELETE FROM pins WHERE cwd = ?1", [cwd])?;
        let sessions = tx.execute(ORPHAN_SESSIONS, [])?;
        tx.commit()?;
        Ok(Removed {
            pins,
            sessions,
            runs: 0,
        })
    }

    fn forget_all(&mut self) -> Result<Removed> {
        let tx = self.conn.transaction()?;
        let pins = tx.execute("DELETE FROM pins", [])?;
        let sessions = tx.execute("DELETE FROM sessions", [])?;
        tx.commit()?;
        Ok(Removed {
            pins,
            sessions,
            runs: 0,
        })
    }

    fn count_prunable(
        &self,
        gone: &[String],
        pins_before: i64,
        runs_before: i64,
    ) -> Result<Removed> {
        let mut pins: usize = self.conn.query_row(
            "SELECT COUNT(*) FROM pins WHERE created_at < ?1",
            [pins_before],
            |r| r.get(0),
        )?;
        for s in gone {
            pins += self.conn.query_row(
                "SELECT COUNT(*) FROM pins WHERE session = ?1 AND created_at >= ?2",
                params![s, pins_before],
                |r| r.get::<_, usize>(0),
            )?;
        }
        // The session rows prune leaves without a pin: those with none
        // younger than the cutoff, and those of gone sessions that still had one.
        let mut sessions: usize = self.conn.query_row(
            "SELECT COUNT(*) FROM sessions s WHERE NOT EXISTS
               (SELECT 1 FROM pins p WHERE p.session = s.session AND p.created_at >= ?1)",
            [pins_before],
            |r| r.get(0),
        )?;
        for s in gone {
            sessions += self.conn.query_row(
                "SELECT COUNT(*) FROM sessions s WHERE s.session = ?1 AND EXISTS
                   (SELECT 1 FROM pins p WHERE p.session = s.session AND p.created_at >= ?2)",
                params![s, pins_before],
                |r| r.get::<_, usize>(0),
            )?;
        }
        let runs = self.conn.query_row(
            "SELECT COUNT(*) FROM runs WHERE at < ?1",
            [runs_before],
            |r| r.get(0),
        )?;
        Ok(Removed {
            pins,
            sessions,
            runs,
        })
    }

    fn prune(&mut self, gone: &[String], pins_before: i64, runs_before: i64) -> Result<Removed> {
        let tx = self.conn.transaction()?;
        let mut removed = Removed::default();
        for s in gone {
            removed.pins += tx.execute("DELETE FROM pins WHERE session = ?1", [s])?;
        }
        removed.pins += tx.execute("DELETE FROM pins WHERE created_at < ?1", [pins_before])?;
        removed.sessions = tx.execute(ORPHAN_SESSIONS, [])?;
        removed.runs = tx.execute("DELETE FROM runs WHERE at < ?1", [runs_before])?;
        tx.commit()?;
        Ok(removed)
    }

    fn vacuum(&self) -> Result<()> {
        self.conn.execute_batch("VACUUM")?;
        // WAL mode: fold the log back so the size on disk shrinks now.
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .optional()?;
        Ok(())
    }

    fn health(&self) -> Result<Health> {
        let mut stmt = self.conn.prepare("PRAGMA quick_check")?;
        let problems: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Health {
            quick_check: problems.join("; "),
            schema_version: Engine::schema_version(self)?,
            schema_expected: crate::store::migrations::COUNT as i64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::pins::tests::new_pin;
    use super::*;
    use crate::store::pins::Ownership;
    use crate::store::Store;

    fn pin(s: &mut Store, session: &str, cwd: &str, turns: usize, preview: &str) {
        let t = format!("{session}{turns}");
        let mut p = new_pin(session, "a", &[t.as_str()], preview);
        p.cwd = cwd.into();
        p.turns = turns;
        s.add_pin(&p, Ownership::Kept, "/c").unwrap();
    }

    fn count(s: &Store, table: &str) -> i64 {
        s.sqlite()
            .unwrap()
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn prune_drops_gone_old_orphans_and_old_runs() {
        let mut s = Store::in_memory().unwrap();
        pin(&mut s, "OLD", "/a", 1, "");
        pin(&mut s, "GONE", "/a", 1, "");
        pin(&mut s, "KEEP", "/a", 1, "");
        s.sqlite()
            .unwrap()
            .execute("UPDATE pins SET created_at = 100 WHERE session = 'OLD'", [])
            .unwrap();
        for at in [50, 500] {
            s.sqlite().unwrap()
                .execute(
                    "INSERT INTO runs (at, cwd, kind, bytes_in, bytes_sent) VALUES (?1, '/a', 'fresh', 1, 1)",
                    [at],
                )
                .unwrap();
        }
        let gone = vec!["GONE".to_string()];
        let would = s.count_prunable(&gone, 200, 200).unwrap();
        assert_eq!(count(&s, "pins"), 3, "counting removes nothing");
        let r = s.prune(&gone, 200, 200).unwrap();
        assert_eq!(would, r, "a dry run counts what the real one removes");
        assert_eq!(
            r,
            Removed {
                pins: 2,
                sessions: 2,
                runs: 1
            }
        );
        assert_eq!(s.pinned_sessions().unwrap(), ["KEEP"]);
        assert_eq!(count(&s, "runs"), 1);
        s.vacuum().unwrap();
    }

    #[test]
    fn runs_since_filters_and_keeps_missing_usage_apart() {
        let s = Store::in_memory().unwrap();
        let insert = |at: i64, cwd: &str, input: Option<i64>| {
            s.sqlite()
                .unwrap()
                .execute(
                    "INSERT INTO runs (at, cwd, kind, bytes_in, bytes_sent, input_tokens, cost_usd)
                     VALUES (?1, ?2, 'resumed', 10, 4, ?3, 0.5)",
                    params![at, cwd, input],
                )
                .unwrap();
        };
        insert(10, "/a", Some(7));
        insert(1000, "/a", None);
        insert(1000, "/b", Some(1));
        let rows = s.runs_since(100, Some("/a")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].tokens, None);
        assert_eq!(rows[0].bytes_in - rows[0].bytes_sent, 6);
        assert_eq!(s.runs_since(0, None).unwrap().len(), 3);
        assert_eq!(
            s.runs_since(0, None).unwrap()[0].tokens.map(|t| t.input),
            Some(7)
        );
    }

    #[test]
    fn recent_runs_newest_first_filtered_and_limited_with_unknowns_kept() {
        use crate::events::Usage;
        use crate::store::runs::{Kind, Run, Spent, UsageFrom};
        let t = tempfile::tempdir().unwrap();
        let log = |at: i64, cwd: &str, kind: Kind, spent: Spent| {
            let s = Store::open_in(t.path()).unwrap().with_clock(move || at);
            s.log_run(&Run {
                cwd,
                kind,
                why_code: kind.as_str(),
                why: "because",
                exit: 0,
                bytes_in: 100,
                bytes_sent: 10,
                spent,
                session: Some("S"),
                conv_key: Some("K"),
                engine: crate::store::runs::Engine::Warm,
                replay_misses_prefix: false,
                cache_miss: None,
                prefix: None,
                timing: None,
                errors: 0,
                cold: None,
            })
            .unwrap();
        };
        let known = Spent {
            usage: Some((
                Usage {
                    input_tokens: 1,
                    cache_creation_input_tokens: 2,
                    cache_read_input_tokens: 3,
                    output_tokens: 4,
                    ..Default::default()
                },
                UsageFrom::SessionFile,
            )),
            cost_usd: Some(0.5),
            total_cost_usd: Some(1.5),
        };
        log(100, "/a", Kind::Fresh, known);
        log(200, "/a", Kind::Resumed, Spent::default());
        log(300, "/b", Kind::Forked, known);
        let s = Store::open_in(t.path()).unwrap();
        let rows = s.recent_runs(0, None, None).unwrap();
        let kinds: Vec<_> = rows.iter().map(|r| runs::Kind::text(r.kind)).collect();
        assert_eq!(kinds, ["forked", "resumed", "fresh"]);
        let unknown = &rows[1];
        assert_eq!(
            (
                unknown.tokens,
                unknown.cost_usd,
                unknown.usage_from.as_deref()
            ),
            (None, None, None)
        );
        let fresh = &rows[2];
        assert_eq!(fresh.tokens.map(|t| t.cache_read), Some(3));
        assert_eq!(fresh.usage_from.as_deref(), Some("session-file"));
        assert_eq!(
            (fresh.cost_usd, fresh.total_cost_usd),
            (Some(0.5), Some(1.5))
        );
        assert_eq!(fresh.why_code.as_deref(), Some("fresh"));
        assert_eq!(fresh.session.as_deref(), Some("S"));
        assert_eq!(fresh.engine, Some(runs::Engine::Warm));
        assert_eq!(fresh.local.len(), "1970-01-01 00:00".len());
        assert_eq!(s.recent_runs(150, Some("/a"), None).unwrap().len(), 1);
        assert_eq!(s.recent_runs(0, None, Some(2)).unwrap().len(), 2);
        assert_eq!(s.local_day(0).unwrap().len(), "1970-01-01".len());
    }

    #[test]
    fn health_reads_without_creating() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("none.db");
        assert!(Store::open_read_only(&missing).is_err());
        assert!(!missing.exists());
        let store = Store::open_in(t.path()).unwrap();
        // Into the main file: the store does not checkpoint on close.
        store
            .sqlite()
            .unwrap()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let path = store.path.clone();
        drop(store);
        let h = Store::open_read_only(&path).unwrap().health().unwrap();
        assert_eq!(h.quick_check, "ok");
        assert_eq!(h.schema_version, h.schema_expected);
        assert!(super::super::size_on_disk(&path) > 0);
        // Damage past the header: quick_check or opening must say so.
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        bytes[len / 2..].fill(0xA5);
        std::fs::write(&path, bytes).unwrap();
        let damaged = Store::open_read_only(&path).and_then(|s| s.health());
        assert!(
            !matches!(&damaged, Ok(h) if h.quick_check == "ok"),
            "{damaged:?}"
        );
    }
}
