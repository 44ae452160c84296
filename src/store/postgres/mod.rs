//! The shared store: the same tables as the SQLite file, in a PostgreSQL
//! database (schema `claude_shim`) that every replica of a fleet reaches.
//!
//! `conn` is the connection every statement goes through, each call
//! bounded; `open` starts one and checks the schema (`migrations`,
//! `schema`); `handoff` readies one ahead of a turn, in the keeper. Each
//! topic's file (`pins`, `runs`, …) adds its statements to [`Pg`], beside
//! its SQLite twin in `store/`, and shares its rows (`store::types`).
//!
//! The in-place lease is a session-level advisory lock held on this
//! process's connection (freed by the server when the process dies), plus
//! the session row's holder and draining flag for the others to read.

mod caps;
mod conn;
mod engine;
pub mod handoff;
mod leases;
mod migrations;
mod nss;
mod open;
mod ops;
mod pins;
mod report;
mod runs;
pub mod schema;
mod transcripts;

pub use conn::{lease_key, Patience, Pg, TURN_BUDGET};
pub use engine::Shared;
pub use migrations::COUNT;
pub use open::Schema;
