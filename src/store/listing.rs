//! What the shim knows of each session, for `claude-shim sessions`.

pub use super::types::listing::ShimSession;
use anyhow::Result;

pub trait Listing {
    /// Every session with a pin or a lease row, newest pin first.
    fn shim_sessions(&self) -> Result<Vec<ShimSession>>;
}
