//! Shared support for the integration tests: a Messages-API server that logs and models
//! prompt caching, sandboxes that run the real Claude Code CLI directly or through the
//! shim, and masking of run-to-run noise in CLI output.
//!
//! Use from a test file with `mod support;`.
#![allow(dead_code, unused_imports)]

pub mod api;
pub mod cli;
pub mod clients;
pub mod mask;
pub mod postgres;
pub mod sandbox;
pub mod sdk;

pub use api::{ApiServer, CacheModel, LoggedRequest, RequestKind, UsageTotals};
pub use cli::{shim_exe, RealCli};
pub use mask::{mask_volatile, Masker};
pub use sandbox::{describe, run, run_with_timeout, Sandbox};
