//! Prompts kept with pins for continuation by content: the prompt a run was
//! given and the reply forms it got. Kept only where a next turn may need
//! them (first turns, turns recognised by content), two per conversation
//! (the newest run and the one before, for a redone last turn), and at most
//! [`PER_SCOPE`] per scope.

pub use super::types::prompts::{Kept, Prompted, PER_SCOPE};
use crate::identity::{Node, Scope};
use anyhow::Result;

/// How many of a scope's newest prompts a turn is matched against.
pub const CANDIDATES: i64 = 64;
/// A prompt longer than this is not kept.
pub const MAX_PROMPT: usize = 16 << 20;
/// Characters of a kept prompt that decide its call's system prompt: up to
/// UTF-16 unit 20 (`cost::system_key`), so 21 characters at most.
pub const HEAD: i64 = 21;

pub trait Prompts {
    /// Keep `kept` with pin `pin` (of `scope`); let go of the prompt two
    /// runs back in the same conversation and of the scope's oldest.
    fn keep_prompt(&mut self, pin: i64, scope: &Scope, kept: &Kept<'_>) -> Result<()>;

    /// The newest pins of `scope` whose prompts are kept.
    fn prompted(&self, scope: &Scope) -> Result<Vec<Prompted>>;

    /// The start of a kept prompt, [`HEAD`] characters at most: the one kept
    /// with `pin`, or else with the newest pin at `node` (the node a next
    /// turn looks its pin up by). What the system prompt of the call that
    /// was given it depends on (`cost::system_key`). `None`: none is kept.
    fn kept_prompt_head(&self, pin: Option<i64>, node: &Node) -> Result<Option<String>>;

    /// The prompt kept with `pin`.
    fn prompt_of(&self, pin: i64) -> Result<Option<String>>;
}
