//! The management commands' rows (see `store::report`), read from either
//! backend.

use anyhow::Result;
use rusqlite::{params, Connection};

/// One managed turn from the runs log, with its local calendar day.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRow {
    /// `YYYY-MM-DD` in local time (SQLite's `localtime`).
    pub day: String,
    pub kind: String,
    pub bytes_in: i64,
    pub bytes_sent: i64,
    /// Usage of the result event; None when the turn printed none.
    pub tokens: Option<Tokens>,
    pub cost_usd: Option<f64>,
    /// The exit status the caller got: a code, or −signal; None in rows
    /// older shims wrote.
    pub exit: Option<i64>,
    /// See `Run::replay_misses_prefix`; false in rows older shims wrote.
    pub replay_misses_prefix: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: i64,
    pub cache_write: i64,
    pub cache_read: i64,
    pub output: i64,
}

/// One managed turn as `log` and `status` show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogRow {
    pub at: i64,
    /// `YYYY-MM-DD HH:MM` in local time (SQLite's `localtime`).
    pub local: String,
    pub cwd: String,
    pub kind: String,
    /// Stable reason code and its sentence; None in rows older shims wrote.
    pub why_code: Option<String>,
    pub why: Option<String>,
    pub session: Option<String>,
    pub conv_key: Option<String>,
    pub exit: Option<i64>,
    pub bytes_in: i64,
    pub bytes_sent: i64,
    pub tokens: Option<Tokens>,
    /// `result` | `session-file`: where the token counts come from.
    pub usage_from: Option<String>,
    /// The turn's own cost; None when unknown.
    pub cost_usd: Option<f64>,
    /// The session's running total after the turn, as the CLI reported it.
    pub total_cost_usd: Option<f64>,
    /// `cold` | `warm` | `live` | `handshake`; None in older rows.
    pub engine: Option<String>,
}

impl Tokens {
    /// Input, cache write, cache read, output as stored: None when all four
    /// are NULL (usage unknown), a missing one 0 otherwise.
    pub(crate) fn of_columns(usage: [Option<i64>; 4]) -> Option<Tokens> {
        match usage {
            [None, None, None, None] => None,
            [i, w, c, o] => Some(Tokens {
                input: i.unwrap_or(0),
                cache_write: w.unwrap_or(0),
                cache_read: c.unwrap_or(0),
                output: o.unwrap_or(0),
            }),
        }
    }
}

/// `at` (epoch seconds) in this machine's local time, formatted by SQLite's
/// `strftime` (`fmt`) — as the runs queries of the SQLite store say it. The
/// shared store's rows get their local times here, not from the server.
pub(crate) struct LocalTime(Connection);

impl LocalTime {
    pub(crate) fn new() -> Result<LocalTime> {
        Ok(LocalTime(Connection::open_in_memory()?))
    }

    pub(crate) fn format(&self, fmt: &str, at: i64) -> Result<String> {
        Ok(self
            .0
            .prepare_cached("SELECT strftime(?1, ?2, 'unixepoch', 'localtime')")?
            .query_row(params![fmt, at], |r| r.get(0))?)
    }
}

/// The newest pin of one conversation (session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    pub session: String,
    pub cwd: String,
    pub turns: i64,
    pub created_at: i64,
    pub reply_preview: String,
    /// Pins of this session in all (one per node it reached).
    pub pins: i64,
}

/// What a deletion removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    pub pins: usize,
    pub sessions: usize,
    pub runs: usize,
}

/// The database as `doctor` sees it, read without migrating or creating.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Health {
    /// `ok`, or what `PRAGMA quick_check` found.
    pub quick_check: String,
    pub schema_version: i64,
    /// The version this build migrates to.
    pub schema_expected: i64,
}
