//! End-to-end tests: the shim in front of the REAL Claude Code CLI (the
//! pinned install from `.ci/install-cli`, or `$CLAUDE_SHIM_TEST_CLI`) and the
//! loopback Messages-API server of `tests/support/api.rs`, offline; `clients`
//! also runs the pinned Agent SDKs (`.ci/install-sdks`), and `fleet` a real
//! PostgreSQL server (Debian's `postgresql`) it starts on loopback, and
//! `packages` the npm and PyPI packages `.ci/package` built into `dist/`.
//! They fail, never skip, without them.

#[path = "../support/mod.rs"]
mod support;

mod back_to_back;
mod background;
mod before_the_cli;
mod cache_miss;
mod caller_stops_reading;
mod cli_env;
mod clients;
mod compaction;
mod r#continue;
mod control;
mod costs;
mod deleted_cwd;
mod dialects;
mod differential;
mod fleet;
mod held;
mod isolation;
mod long_argv;
mod metrics;
mod packages;
mod passthrough;
mod resume;
mod retry;
mod sessions;
mod stopped;
mod streaming;
mod terminal;
mod unwritable_data_dir;
mod versions;
mod warm;
mod without_p;
