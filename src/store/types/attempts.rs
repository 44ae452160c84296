//! An attempt's vocabulary (see `store::attempts`), shared by both backends.

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result arrived (success or error).
    Result,
    /// The run ended without a result: killed, timed out, crashed.
    NoResult,
}

impl Outcome {
    pub(crate) fn parse(s: &str) -> Outcome {
        if s == "result" {
            Outcome::Result
        } else {
            Outcome::NoResult
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::NoResult => "no-result",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub id: i64,
    pub session: String,
    pub pid: i32,
    pub started_at: i64,
    /// `None`: still running, or its shim was killed before it could say.
    pub outcome: Option<Outcome>,
    /// How many continues in a row led to this attempt.
    pub continues: i64,
}
