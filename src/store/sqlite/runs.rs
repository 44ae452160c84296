//! `Runs` ([`crate::store::runs`]) in the SQLite file.

use super::local::Local;
use crate::store::runs::*;
use crate::store::types::runs::Run;
use anyhow::Result;
use rusqlite::params;

impl Runs for Local {
    fn log_run(&self, run: &Run<'_>) -> Result<()> {
        self.put_run(None, run).map(drop)
    }

    fn begin_run(&self, run: &Run<'_>) -> Result<i64> {
        self.put_run(None, run)
    }

    fn end_run(&self, id: i64, run: &Run<'_>) -> Result<()> {
        self.put_run(Some(id), run).map(drop)
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
    /// Write a run's row: a new one, or row `id` replaced whole (its time
    /// kept). Returns its id.
    fn put_run(&self, id: Option<i64>, run: &Run<'_>) -> Result<i64> {
        let usage = run.spent.usage.map(|(u, _)| u);
        self.conn.execute(
            "INSERT OR REPLACE INTO runs (id, at, cwd, kind, exit, bytes_in, bytes_sent,
                input_tokens, cache_write_tokens, cache_read_tokens, output_tokens, cost_usd,
                session, why_code, why, total_cost_usd, usage_from, conv_key, engine,
                replay_misses_prefix)
             VALUES (?19, COALESCE((SELECT at FROM runs WHERE id = ?19), ?1), ?2, ?3, ?4, ?5,
                ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?20)",
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
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
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
