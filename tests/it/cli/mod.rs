//! The management commands (`claude-shim …`), run by their own name in a
//! sandbox; the shells they print for must be installed (a missing shell
//! fails, it never skips).

mod broken_store;
mod complete;
mod completions;
mod doctor;
mod init;
mod install;
mod log;
mod metrics;
mod metrics_clients;
mod pins;
mod pipe;
mod stats;
mod stats_costs;
mod status;
mod uninstall;
