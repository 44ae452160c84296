//! claude-shim: a drop-in `claude` that resumes the Claude Code session a
//! replayed conversation already lives in. See README.md for the flow.

pub mod argv;
pub mod invocation;
