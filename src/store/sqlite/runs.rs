//! `Runs` ([`crate::store::runs`]) in the SQLite file.

use super::local::Local;
use crate::cache_miss::{Prefix, Previous};
use crate::store::runs::*;
use crate::store::totals::{self, Total, Totals};
use crate::store::types::runs::Run;
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

impl Runs for Local {
    fn log_run(&self, run: &Run<'_>) -> Result<()> {
        self.put_counted(None, run)
    }

    fn begin_run(&self, run: &Run<'_>) -> Result<i64> {
        self.put_run(None, run)
    }

    fn end_run(&self, id: i64, run: &Run<'_>) -> Result<()> {
        self.put_counted(Some(id), run)
    }

    fn run_counts(&self) -> Result<Vec<(String, i64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT kind, COUNT(*) FROM runs GROUP BY kind ORDER BY kind")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Local {
    /// A finished run: its row and what it adds to the running totals
    /// (`store::totals`), in one transaction.
    /// A savepoint, not a transaction: `doctor`'s trial writes inside its
    /// own, which it rolls back.
    fn put_counted(&self, id: Option<i64>, run: &Run<'_>) -> Result<()> {
        self.conn.execute_batch("SAVEPOINT put_run")?;
        let written = self
            .put_run(id, run)
            .and_then(|_| add_totals(&self.conn, &totals::deltas(run, "sqlite")));
        match written {
            Ok(()) => Ok(self.conn.execute_batch("RELEASE put_run")?),
            Err(e) => {
                let _ = self
                    .conn
                    .execute_batch("ROLLBACK TO put_run; RELEASE put_run");
                Err(e)
            }
        }
    }

    /// Write a run's row: a new one, or row `id` replaced whole (its time
    /// kept). Returns its id.
    fn put_run(&self, id: Option<i64>, run: &Run<'_>) -> Result<i64> {
        let usage = run.spent.usage.map(|(u, _)| u);
        self.conn.execute(
            "INSERT OR REPLACE INTO runs (id, at, cwd, kind, exit, bytes_in, bytes_sent,
                input_tokens, cache_write_tokens, cache_read_tokens, output_tokens, cost_usd,
                session, why_code, why, total_cost_usd, usage_from, conv_key, engine,
                replay_misses_prefix, cache_miss, prefix)
             VALUES (?19, COALESCE((SELECT at FROM runs WHERE id = ?19), ?1), ?2, ?3, ?4, ?5,
                ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?20, ?21, ?22)",
            params![
                self.now(),
                run.cwd,
                run.kind.as_str(),
                run.exit,
                run.bytes_in as i64,
                run.bytes_sent as i64,
                usage.map(|u| u.input_tokens as i64),
                usage.map(|u| u.cache_creation_input_tokens as i64),
                usage.map(|u| u.cache_read_input_tokens as i64),
                usage.map(|u| u.output_tokens as i64),
                run.spent.cost_usd,
                run.session,
                run.why_code,
                run.why,
                run.spent.total_cost_usd,
                run.spent.usage.map(|(_, from)| from.as_str()),
                run.conv_key,
                run.engine.as_str(),
                id,
                run.replay_misses_prefix,
                run.cache_miss.map(|m| m.as_str()),
                run.prefix.map(|p| p.to_stored()),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }
}

/// Add a turn's deltas to the running totals: one short statement, parsed
/// once per connection and run per delta (a statement of every delta's
/// parameters cost more to parse than all the runs of this one).
fn add_totals(conn: &rusqlite::Connection, deltas: &[totals::Delta]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO metric_totals (family, labels, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (family, labels) DO UPDATE SET value = value + excluded.value",
    )?;
    for d in deltas {
        stmt.execute(params![d.family, d.labels, d.value])?;
    }
    Ok(())
}

impl Totals for Local {
    fn totals(&self) -> Result<Vec<Total>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT family, labels, value FROM metric_totals")?;
        let rows = stmt.query_map([], |r| {
            Ok(Total {
                family: r.get(0)?,
                labels: r.get(1)?,
                value: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn previous_run(&self, session: &str, except: Option<i64>) -> Result<Option<Previous>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT at, prefix, cache_read_tokens + cache_write_tokens FROM runs
             WHERE session = ?1 AND id IS NOT ?2 ORDER BY id DESC LIMIT 1",
        )?;
        let row = stmt
            .query_row(params![session, except], |r| {
                Ok(Previous {
                    ended_at: r.get(0)?,
                    prefix: r
                        .get::<_, Option<String>>(1)?
                        .as_deref()
                        .and_then(Prefix::from_stored),
                    cached: r
                        .get::<_, Option<i64>>(2)?
                        .and_then(|n| u64::try_from(n).ok()),
                })
            })
            .optional()?;
        Ok(row)
    }

    fn cli_versions(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT version FROM capabilities ORDER BY version")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_run_written_ahead_is_completed_in_place() {
        let t = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(100));
        let clock = t.clone();
        let s = Store::in_memory()
            .unwrap()
            .with_clock(move || clock.load(std::sync::atomic::Ordering::SeqCst));
        let mut run = Run {
            cwd: "/w",
            kind: Kind::Resumed,
            why_code: "resumed",
            why: "resumed in place",
            exit: 0,
            bytes_in: 10,
            bytes_sent: 3,
            spent: Spent::default(),
            session: Some("S"),
            conv_key: None,
            engine: Engine::Cold,
            replay_misses_prefix: true,
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        };
        let id = s.begin_run(&run).unwrap();
        s.log_run(&Run {
            kind: Kind::Fresh,
            replay_misses_prefix: false,
            ..run
        })
        .unwrap();
        t.store(200, std::sync::atomic::Ordering::SeqCst);
        run.exit = 1;
        run.engine = Engine::Warm;
        s.end_run(id, &run).unwrap();
        let rows: Vec<(i64, i64, String, i32, String)> = s
            .sqlite()
            .unwrap()
            .prepare("SELECT id, at, kind, exit, engine FROM runs ORDER BY id")
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0], (id, 100, "resumed".into(), 1, "warm".into()));
        let read: Vec<bool> = s
            .runs_since(0, None)
            .unwrap()
            .iter()
            .map(|r| r.replay_misses_prefix)
            .collect();
        assert_eq!(read, [true, false]);
    }
}
