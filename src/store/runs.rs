//! The runs log: one row per managed turn, for `stats`.

use super::Store;
use crate::observe::ResultEvent;
use anyhow::Result;
use rusqlite::params;

/// How a turn was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resumed,
    Forked,
    Fresh,
    /// A resume was refused and the turn reran fresh.
    Fallback,
    /// Managed but run unchanged (unrecognised prompt, store trouble…).
    Unchanged,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Resumed => "resumed",
            Kind::Forked => "forked",
            Kind::Fresh => "fresh",
            Kind::Fallback => "fallback",
            Kind::Unchanged => "unchanged",
        }
    }
}

pub struct Run<'a> {
    pub cwd: &'a str,
    pub kind: Kind,
    pub exit: i32,
    pub bytes_in: usize,
    pub bytes_sent: usize,
    pub result: Option<&'a ResultEvent>,
    pub session: Option<&'a str>,
    pub note: Option<&'a str>,
}

impl Store {
    pub fn log_run(&self, run: &Run<'_>) -> Result<()> {
        let usage = run.result.map(|r| &r.usage);
        self.conn.execute(
            "INSERT INTO runs (at, cwd, kind, exit, bytes_in, bytes_sent, input_tokens,
                cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, session, note)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                super::now(),
                run.cwd,
                run.kind.as_str(),
                run.exit,
                run.bytes_in as i64,
                run.bytes_sent as i64,
                usage.map(|u| u.input_tokens as i64),
                usage.map(|u| u.cache_creation_input_tokens as i64),
                usage.map(|u| u.cache_read_input_tokens as i64),
                usage.map(|u| u.output_tokens as i64),
                run.result.and_then(|r| r.cost_usd),
                run.session,
                run.note,
            ],
        )?;
        Ok(())
    }

    /// (kind, count) over all runs; used by tests and `stats`.
    pub fn run_counts(&self) -> Result<Vec<(String, i64)>> {
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

    #[test]
    fn logs_and_counts() {
        let s = Store::in_memory().unwrap();
        let result = ResultEvent::default();
        for kind in [Kind::Fresh, Kind::Resumed, Kind::Resumed] {
            let run = Run {
                cwd: "/w",
                kind,
                exit: 0,
                bytes_in: 10,
                bytes_sent: 3,
                result: Some(&result),
                session: None,
                note: None,
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
