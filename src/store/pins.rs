//! Pins: a conversation node (scope + chain of its turns) and the reply the
//! caller received → the Claude Code session that holds it. Sessions: which
//! node is the head of each session, the in-place lease, and whether the
//! shim owns the session file (ephemeral: made for a caller that turned
//! persistence off).

pub use super::types::pins::{Elsewhere, Lease, NewPin, Ownership, Pin};
use crate::identity::{Chain, Node};
use anyhow::Result;

pub trait Pins {
    /// Pins of one node, newest first.
    fn find_pins(&self, node: &Node) -> Result<Vec<Pin>>;

    /// The newest pin of the same turns in any scope (for saying why a
    /// turn did not resume).
    fn find_elsewhere(&self, chain: &Chain) -> Result<Option<Elsewhere>>;

    /// Record a node reached by a successful run; it becomes its session's
    /// head. Returns the pin's id (to take it back should the run fail).
    fn add_pin(&mut self, pin: &NewPin, ownership: Ownership, config_dir: &str) -> Result<i64>;

    /// Take back a pin whose run failed after all; the session's head goes
    /// back to `head` (where the run started; `None` for a new session).
    fn unpin(&mut self, id: i64, session: &str, head: Option<&str>) -> Result<()>;

    /// Forget a session's pins (its file is gone or the CLI refused it).
    fn drop_session(&self, session: &str) -> Result<()>;

    fn session_head(&self, session: &str) -> Result<Option<String>>;

    /// Take the in-place lease on `session` for `pid` if its head is still
    /// `head` and no live holder has it. Head check and lease are one
    /// IMMEDIATE transaction, so a turn that just moved the head cannot be
    /// overwritten by one that read the old head.
    fn try_lease(
        &mut self,
        session: &str,
        head: Option<&str>,
        pid: i32,
        alive: &dyn Fn(i32) -> bool,
    ) -> Result<Lease>;

    /// The holder's turn has its result and its input is closed: it only
    /// finishes writing, so a next turn may wait for it rather than branch.
    fn mark_draining(&self, session: &str, pid: i32) -> Result<()>;

    fn release_lease(&self, session: &str, pid: i32) -> Result<()>;

    /// The session was used (resumed or branched from) just now.
    fn touch_session(&self, session: &str) -> Result<()>;

    /// Ephemeral sessions whose files may go now: idle since before
    /// `idle_before`, or superseded (every node they hold was pinned again,
    /// later, with the same reply, in another session), and not leased by a
    /// live turn. `(session, config dir)`.
    fn expired_ephemeral(
        &self,
        idle_before: i64,
        alive: &dyn Fn(i32) -> bool,
    ) -> Result<Vec<(String, String)>>;

    /// Whether the shim made this session for a caller that turned
    /// persistence off.
    fn is_ephemeral(&self, session: &str) -> Result<bool>;
}
