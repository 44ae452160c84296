//! End-to-end tests: the shim in front of the REAL Claude Code CLI (the
//! pinned install from `.ci/install-cli`, or `$CLAUDE_SHIM_TEST_CLI`) and the
//! loopback Messages-API server of `tests/support/api.rs`, offline. They
//! fail, never skip, without the CLI.

#[path = "../support/mod.rs"]
mod support;

mod dialects;
mod passthrough;
mod resume;
