//! The runs log: one row per managed turn, for `stats`, `log` and `status`.

pub use super::types::runs::{Engine, Kind, Run, Spent, UsageFrom};
use super::Store;
use anyhow::Result;
use rusqlite::params;

impl Store {
    pub fn log_run(&self, run: &Run<'_>) -> Result<()> {
        if let Some(mut pg) = self.pg() {
            return pg.log_run(run, self.now());
        }
        self.insert_run(run).map(drop)
    }

    /// The row of a run not over yet (the caller is about to have its
    /// reply): [`Store::end_run`] completes it.
    pub fn begin_run(&self, run: &Run<'_>) -> Result<i64> {
        if let Some(mut pg) = self.pg() {
            return pg.begin_run(run, self.now());
        }
        self.insert_run(run)
    }

    /// Complete a row [`Store::begin_run`] wrote (its time stays).
    pub fn end_run(&self, id: i64, run: &Run<'_>) -> Result<()> {
        if let Some(mut pg) = self.pg() {
            return pg.end_run(id, run);
        }
        let usage = run.spent.usage.map(|(u, _)| u);
        self.conn.execute(
            "UPDATE runs SET cwd = ?2, kind = ?3, exit = ?4, bytes_in = ?5, bytes_sent = ?6,
                input_tokens = ?7, cache_write_tokens = ?8, cache_read_tokens = ?9,
                output_tokens = ?10, cost_usd = ?11, session = ?12, why_code = ?13, why = ?14,
                total_cost_usd = ?15, usage_from = ?16, conv_key = ?17, engine = ?18
             WHERE id = ?1",
            params![
                id,
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
            ],
        )?;
        Ok(())
    }

    fn insert_run(&self, run: &Run<'_>) -> Result<i64> {
        let usage = run.spent.usage.map(|(u, _)| u);
        self.conn.execute(
            "INSERT INTO runs (at, cwd, kind, exit, bytes_in, bytes_sent, input_tokens,
                cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, session,
                why_code, why, total_cost_usd, usage_from, conv_key, engine)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
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
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// (kind, count) over all runs; used by tests and `stats`.
    pub fn run_counts(&self) -> Result<Vec<(String, i64)>> {
        if let Some(mut pg) = self.pg() {
            return pg.run_counts();
        }
        let mut stmt = self
            .conn
            .prepare("SELECT kind, COUNT(*) FROM runs GROUP BY kind ORDER BY kind")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Usage;

    #[test]
    fn logs_and_counts() {
        let s = Store::in_memory().unwrap();
        for kind in [Kind::Fresh, Kind::Resumed, Kind::Resumed] {
            let run = Run {
                cwd: "/w",
                kind,
                why_code: "resumed",
                why: "resumed in place",
                exit: 0,
                bytes_in: 10,
                bytes_sent: 3,
                spent: Spent {
                    usage: Some((Usage::default(), UsageFrom::Result)),
                    cost_usd: Some(0.1),
                    total_cost_usd: Some(0.3),
                },
                session: None,
                conv_key: None,
                engine: Engine::Cold,
            };
            s.log_run(&run).unwrap();
        }
        let counts = s.run_counts().unwrap();
        assert_eq!(
            counts,
            [("fresh".to_string(), 1), ("resumed".to_string(), 2)]
        );
    }
}
