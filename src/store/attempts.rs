//! Attempts: each managed turn that runs the CLI, from its start to its end,
//! so a retry of a turn that was killed can find the session the killed run
//! was writing and continue it (`CLAUDE_SHIM_ON_RETRY=continue`).

pub use super::types::attempts::{AttemptRow, Outcome};
use crate::identity::Node;
use anyhow::Result;

pub trait Attempts {
    /// A run of the turn `(node, message)` starts, writing to `session`.
    fn start_attempt(
        &self,
        node: &Node,
        message: &str,
        session: &str,
        pid: i32,
        continues: i64,
    ) -> Result<i64>;

    fn end_attempt(&self, id: i64, outcome: Outcome) -> Result<()>;

    /// The latest attempt of the same turn started since `since`.
    fn last_attempt(&self, node: &Node, message: &str, since: i64) -> Result<Option<AttemptRow>>;

    /// Drop attempts older than `before` (gc).
    fn prune_attempts(&self, before: i64) -> Result<usize>;
}
