//! Pins' and sessions' vocabulary (see `store::pins`), shared by both
//! backends.

use crate::identity::{Chain, ConvKey, Node, PreambleHash, ReplyHash, Scope, ScopeParts};

#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    pub id: i64,
    pub session: String,
    pub assistant_uuid: Option<String>,
    pub reply_hashes: Vec<ReplyHash>,
    pub preamble_hash: Option<PreambleHash>,
    pub turns: i64,
    pub created_at: i64,
    /// Not read by the plan; kept for reports.
    pub total_cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewPin {
    pub scope: Scope,
    pub node: Node,
    /// The node's chain without scope (finds it from elsewhere).
    pub chain: Chain,
    pub parts: ScopeParts,
    pub conv_key: Option<ConvKey>,
    pub session: String,
    pub assistant_uuid: Option<String>,
    pub reply_hashes: Vec<ReplyHash>,
    pub preamble_hash: Option<PreambleHash>,
    pub turns: usize,
    pub cwd: String,
    pub reply_preview: String,
}

impl NewPin {
    /// A pin of the user turns `turns` (in order) in `cwd`, as a run with
    /// no session-shaping flags would record it: for tests and benchmarks
    /// that seed a store, and the made-up rows a readied store connection
    /// is warmed with.
    pub fn of_turns(
        session: &str,
        assistant_uuid: &str,
        cwd: &str,
        turns: &[&str],
        reply: &str,
    ) -> NewPin {
        let parts = ScopeParts {
            cwd: cwd.into(),
            ..Default::default()
        };
        let chain = turns.iter().fold(Chain::empty(), |c, t| c.user(t));
        NewPin {
            scope: parts.scope(),
            node: chain.node(&parts.scope()),
            chain,
            parts,
            conv_key: turns.first().map(|t| ConvKey::of(t)),
            session: session.into(),
            assistant_uuid: Some(assistant_uuid.into()),
            reply_hashes: vec![ReplyHash::of(reply)],
            preamble_hash: None,
            turns: turns.len(),
            cwd: cwd.into(),
            reply_preview: reply.into(),
        }
    }
}

/// The same turns, pinned in another scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elsewhere {
    pub parts: ScopeParts,
    pub created_at: i64,
}

/// What taking the in-place lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    Taken,
    /// The session's head moved on: this node is not the latest.
    NotHead,
    /// A live turn holds it. `draining`: that turn has its result and will
    /// end soon (it only writes its closing records).
    Held {
        draining: bool,
    },
}

/// How a session's file came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The caller's (kept as Claude Code keeps any session).
    Kept,
    /// Made by the shim for a caller that turned persistence off: deleted
    /// once superseded or idle.
    Ephemeral,
}
