//! Kept prompts' vocabulary (see `store::prompts`), shared by both backends.

use crate::identity::{Chain, ConvKey};

/// Prompts kept per scope, newest first; older ones are let go.
pub const PER_SCOPE: i64 = 256;

/// A pin whose prompt is kept, without the prompt (read apart, and only for
/// a pin whose reply the new prompt holds).
#[derive(Debug, Clone, PartialEq)]
pub struct Prompted {
    pub pin: i64,
    /// The pin's chain: what the next turn's chain extends.
    pub chain: Chain,
    pub session: String,
    pub turns: usize,
    pub conv_key: Option<ConvKey>,
    pub prompt_len: usize,
    pub replies: Vec<String>,
}

/// What a pin's run was given and got.
pub struct Kept<'a> {
    pub prompt: &'a str,
    pub replies: &'a [String],
    /// The pin the run continued by content, if it did.
    pub continues: Option<i64>,
}

/// A row as read from either backend; `None` when it is not whole.
pub(crate) fn prompted_row(
    pin: i64,
    chain: Option<String>,
    session: String,
    turns: i64,
    conv_key: Option<String>,
    prompt_len: i64,
    replies: Option<String>,
) -> Option<Prompted> {
    Some(Prompted {
        pin,
        chain: Chain::from_stored(chain?),
        session,
        turns: turns.max(0) as usize,
        conv_key: conv_key.map(ConvKey::from_stored),
        prompt_len: prompt_len.max(0) as usize,
        replies: serde_json::from_str(&replies?).ok()?,
    })
}
