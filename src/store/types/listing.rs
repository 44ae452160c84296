//! A session as `claude-shim sessions` lists it (see `store::listing`),
//! read from either backend.

use serde::Serialize;

/// One session the shim pinned or leased.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShimSession {
    pub session: String,
    /// The working directory of its newest pin (`None`: leased, never pinned).
    pub cwd: Option<String>,
    /// Turns of the conversation its newest pin holds.
    pub turns: i64,
    /// Pins of this session (one per turn it reached through the shim).
    pub pins: i64,
    /// The pinned conversation's key (`claude-shim log --conv`).
    pub conversation: Option<String>,
    pub pinned_at: Option<i64>,
    /// Made for a caller that turned persistence off (swept after a TTL).
    pub ephemeral: bool,
    /// The config dir its file lives under, as the shim saw it.
    pub config_dir: Option<String>,
    /// The pid of the turn holding its lease, while the lease lasts.
    #[serde(skip)]
    pub lease_pid: Option<i32>,
}
