//! Queries behind the management commands (`stats`, `pins`, `forget`, `gc`,
//! `doctor`). Read-mostly; the deletions each run in one transaction.

pub use super::types::report::{Health, LogRow, PinRow, Removed, RunRow, Tokens};
use anyhow::Result;

pub trait Report {
    /// Managed turns since `since` (epoch seconds), optionally in one cwd.
    fn runs_since(&self, since: i64, cwd: Option<&str>) -> Result<Vec<RunRow>>;

    /// Managed turns since `since` (epoch seconds), optionally in one cwd,
    /// newest first, at most `limit` of them.
    fn recent_runs(
        &self,
        since: i64,
        cwd: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<LogRow>>;

    /// `YYYY-MM-DD` of `at` in local time, as the runs queries see it.
    fn local_day(&self, at: i64) -> Result<String>;

    /// How many conversations (sessions) have a pin.
    fn count_pinned(&self) -> Result<i64>;

    /// One row per conversation: the newest pin of each session, newest first.
    fn latest_pins(&self, cwd: Option<&str>) -> Result<Vec<PinRow>>;

    /// Sessions that have at least one pin.
    fn pinned_sessions(&self) -> Result<Vec<String>>;

    /// Forget these sessions: their pins and session rows.
    fn forget_sessions(&mut self, sessions: &[String]) -> Result<Removed>;

    /// Forget every conversation pinned in `cwd`.
    fn forget_cwd(&mut self, cwd: &str) -> Result<Removed>;

    /// Forget all pins and sessions (the runs log stays for `stats`).
    fn forget_all(&mut self) -> Result<Removed>;

    /// What [`Store::prune`] would remove, without removing it.
    fn count_prunable(
        &self,
        gone: &[String],
        pins_before: i64,
        runs_before: i64,
    ) -> Result<Removed>;

    /// Drop pins of sessions whose files are gone and pins created before
    /// `pins_before`, then session rows left without pins, then runs before
    /// `runs_before`. One transaction.
    fn prune(&mut self, gone: &[String], pins_before: i64, runs_before: i64) -> Result<Removed>;

    /// Give freed pages back to the file system.
    fn vacuum(&self) -> Result<()>;

    /// The store's own check (SQLite's `quick_check`) and the schema
    /// version. A damaged store reports here or fails here.
    fn health(&self) -> Result<Health>;
}
