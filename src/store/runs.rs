//! The runs log: one row per managed turn, for `stats`, `log` and `status`.

pub use super::types::runs::{Engine, Kind, Run, Spent, UsageFrom};
use anyhow::Result;

pub trait Runs {
    fn log_run(&self, run: &Run<'_>) -> Result<()>;

    /// The row of a run not over yet (the caller is about to have its
    /// reply): [`Store::end_run`] completes it.
    fn begin_run(&self, run: &Run<'_>) -> Result<i64>;

    /// Complete a row [`Store::begin_run`] wrote.
    fn end_run(&self, id: i64, run: &Run<'_>) -> Result<()>;

    /// (kind, count) over all runs; used by tests and `stats`.
    fn run_counts(&self) -> Result<Vec<(String, i64)>>;
}
