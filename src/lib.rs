//! claude-shim: a drop-in `claude` that resumes the Claude Code session a
//! replayed conversation already lives in. See README.md for the flow.

pub mod argv;
pub mod cli;
pub mod decide;
pub mod dialect;
pub mod env;
pub mod explain;
pub mod guard;
pub mod identity;
pub mod invocation;
pub mod locate;
pub mod log;
pub mod observe;
pub mod passthrough;
pub mod plan;
pub mod probe;
pub mod prompt;
pub mod rewrite;
pub mod runner;
pub mod sessions;
pub mod shim;
pub mod store;
pub mod turn;
