//! The management commands' rows (see `store::report`), read from either
//! backend.

use super::runs::{Engine, Kind};

/// One managed turn from the runs log, with its local calendar day.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRow {
    /// `YYYY-MM-DD` in local time (SQLite's `localtime`).
    pub day: String,
    /// `None`: a kind this build does not write (a newer shim's).
    pub kind: Option<Kind>,
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
    /// `None`: a kind this build does not write (a newer shim's).
    pub kind: Option<Kind>,
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
    /// How the CLI ran; None in older rows (and a newer shim's engines).
    pub engine: Option<Engine>,
    /// Why a resumed turn wrote more to the prompt cache than it read.
    pub cache_miss: Option<crate::cache_miss::CacheMiss>,
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
