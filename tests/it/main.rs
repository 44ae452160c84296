//! Integration tests: the built shim against the fake CLI
//! (`tests/fixtures/fake-claude/`), one binary of modules. Only
//! `faults::real` and `load::storm_real_cli` also drive the real Claude Code
//! CLI, for the faults only it can tell; the end-to-end suites are
//! `tests/e2e`. `fleet_store` runs the shared store against a real PostgreSQL
//! server it starts on loopback.

#[path = "../support/mod.rs"]
mod support;

mod ci_choices;
mod cli;
mod continuation_props;
mod dialect_props;
mod faults;
mod fleet_store;
mod hostile;
mod layers;
mod load;
mod panic;
mod passthrough_exec;
mod runner;
mod security;
mod store_contract;
