//! claude-shim: a drop-in `claude` that resumes the Claude Code session a
//! replayed conversation already lives in. Modules in the order a call
//! flows through them (see docs/how-it-works.md):

// The shim face: which binary, which call, pass through or manage.
/// Claude Code's flag grammar (commander's rules).
pub mod argv;
/// Recursion guard across nested shims.
pub mod guard;
/// Pass-through or managed, and why (pure).
pub mod invocation;
/// The real `claude` behind the shim.
pub mod locate;
/// Exec the real binary untouched.
pub mod passthrough;
/// argv[0] dispatch's shim face: guard, locate, classify.
pub mod shim;

// One managed turn.
/// The environment variables Claude Code reads, classified: credentials,
/// session-shaping, inert.
pub mod cli_env;
/// Continuation by content: a prompt that holds an earlier run's prompt and
/// reply, then something new.
pub mod continuation;
/// The call's own cost in the results the caller reads.
pub mod cost;
/// Transcript dialects → conversation.
pub mod dialect;
/// stream-json lines, typed and parsed once.
pub mod events;
/// Scope parts, chains, nodes, reply hashes.
pub mod identity;
/// The CLI's output, read on the side.
pub mod observe;
/// What the real binary supports.
pub mod probe;
/// Where the prompt is; reading it; splicing it back.
pub mod prompt;
/// Spawn, stdin feed, tee with hold, signals, exit status.
pub mod runner;
/// Claude Code's session files: scans, listing, undoing a killed turn.
pub mod sessions;
/// The store: capabilities, pins, leases, runs, attempts, scans (SQLite or
/// a shared PostgreSQL).
pub mod store;
/// The stages: understand, lookup, plan, attempt, run, record.
pub mod turn;
/// Live CLIs kept for a conversation's next turn (the keeper).
pub mod warm;

// Around it.
/// The management face (`claude-shim …` commands).
pub mod cli;
/// The data directory, trusted only when private.
pub mod data_dir;
/// Every environment variable, typed.
pub mod env;
/// `claude-shim explain`: a dry run of one turn.
pub mod explain;
/// Replicas sharing a PostgreSQL store: transcripts travel.
pub mod fleet;
/// Debug log and errors.log.
pub mod log;
/// Linux-only calls with portable fallbacks.
pub mod platform;
/// Files replaced whole (write beside, rename over).
pub mod whole_file;
