//! claude-shim: a drop-in `claude` that resumes the Claude Code session a
//! replayed conversation already lives in (see docs/how-it-works.md, and
//! docs/layout.md for a drawing of the layers).
//!
//! # Layers
//!
//! Imports (`crate::…`) point down this list or stay within a layer, and no
//! two modules import each other, even through others. A lower layer that
//! needs an upper one takes a closure (the store its readied connection,
//! the fleet its `release`). `tests/it/layers.rs` reads this list and the
//! sources, and fails on an import the list does not allow.
//!
//! - front ends: `shim`, `cli`
//! - turn: `turn`
//! - services: `warm`, `fleet`, `store`, `probe`, `runner`
//! - domain: `cache_miss`, `invocation`, `dialect`, `continuation`, `identity`, `prompt`, `observe`, `resend`, `cost`, `sessions`, `guard`, `locate`
//! - leaves: `argv`, `env`, `cli_env`, `events`, `text`, `platform`, `data_dir`, `log`, `timeline`, `whole_file`

// Front ends.
/// The management face (`claude-shim …` commands).
pub mod cli;
/// argv[0] dispatch's shim face: guard, locate, classify, then exec or turn.
pub mod shim;

// One managed turn.
/// The stages: understand, lookup, plan, attempt, run, record.
pub mod turn;

// What a turn runs on.
/// Replicas sharing a PostgreSQL store: transcripts travel.
pub mod fleet;
/// What the real binary supports.
pub mod probe;
/// Spawn, exec, stdin feed, tee with hold, rendering, signals, exit status;
/// the processes that outlive a call.
pub mod runner;
/// The store: capabilities, pins, leases, runs, attempts, scans (SQLite or
/// a shared PostgreSQL).
pub mod store;
/// Live CLIs kept for a conversation's next turn (the keeper).
pub mod warm;

// What a turn is about.
/// Continuation by content: a prompt that holds an earlier run's prompt and
/// reply, then something new.
/// Why a resumed turn missed the prompt cache.
pub mod cache_miss;
pub mod continuation;
/// The call's own cost in the results the caller reads.
pub mod cost;
/// Transcript dialects → conversation.
pub mod dialect;
/// Recursion guard across nested shims.
pub mod guard;
/// Scope parts, chains, nodes, reply hashes.
pub mod identity;
/// Pass-through or managed, and why (pure).
pub mod invocation;
/// The real `claude` behind the shim.
pub mod locate;
/// The CLI's output, read on the side.
pub mod observe;
/// Where the prompt is; reading it; splicing it back.
pub mod prompt;
/// A live session's client re-sending its transcript: only the new part goes.
pub mod resend;
/// Claude Code's session files: scans, undoing a killed turn.
pub mod sessions;

// Leaves.
/// Claude Code's flag grammar (commander's rules).
pub mod argv;
/// The environment variables Claude Code reads, classified: credentials,
/// session-shaping, inert.
pub mod cli_env;
/// The data directory, trusted only when private.
pub mod data_dir;
/// Every environment variable the shim reads, typed.
pub mod env;
/// stream-json lines, typed and parsed once.
pub mod events;
/// Debug log and errors.log.
pub mod log;
/// Linux-only calls with portable fallbacks.
pub mod platform;
/// Shell quoting and durations.
pub mod text;
/// When the turn reached its marks (the metrics' histograms).
pub mod timeline;
/// Files replaced whole (write beside, rename over).
pub mod whole_file;
