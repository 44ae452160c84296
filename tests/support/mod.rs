//! The one harness of the test binaries (`tests/it`, `tests/e2e`) and the
//! benches: a sandbox and a runner for every command, the fake CLI's
//! conversations, one client model, the shim's store seeded and read, a
//! Messages-API server that logs and models prompt caching for the real CLI,
//! the pinned Agent SDKs real clients run on, and one conversation with the
//! real CLI (`world`).
//!
//! Use with `#[path = "../support/mod.rs"] mod support;`.
#![allow(dead_code, unused_imports)]

pub mod api;
pub mod bundle;
pub mod cli;
pub mod clients;
pub mod dist;
pub mod figures;
pub mod mask;
pub mod mount;
pub mod postgres;
pub mod process;
pub mod prometheus;
pub mod requests;
pub mod sandbox;
pub mod sdk;
pub mod store;
pub mod turns;
pub mod world;

pub use api::{ApiServer, CacheModel, LoggedRequest, RequestKind, UsageTotals};
pub use cli::{shim_exe, RealCli, Version};
pub use clients::{Chat, Client};
pub use mask::{mask_volatile, Masker};
pub use process::{assert_seen_same, describe, ok, run, run_with_timeout, Input, Ran};
pub use sandbox::{shell, Sandbox, NO_ARGS};
pub use world::World;
