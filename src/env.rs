//! Every environment variable the shim reads, each in one typed getter.

use std::ffi::OsString;
use std::path::PathBuf;

/// Path of the real `claude`; wins over the PATH search.
pub const REAL: &str = "CLAUDE_SHIM_REAL";
/// `1`: exec the real binary at once, touching nothing.
pub const BYPASS: &str = "CLAUDE_SHIM_BYPASS";
/// Data directory (database, logs).
pub const HOME: &str = "CLAUDE_SHIM_HOME";
/// `1`: run this turn fresh with the full transcript (still pinned).
pub const FRESH: &str = "CLAUDE_SHIM_FRESH";
/// `keep` | `dedupe`: whether an unchanged preamble is sent again on resume.
pub const PREAMBLE: &str = "CLAUDE_SHIM_PREAMBLE";
/// Force one dialect by name.
pub const DIALECT: &str = "CLAUDE_SHIM_DIALECT";
/// Debug log file; never the caller's streams.
pub const LOG: &str = "CLAUDE_SHIM_LOG";
/// Recursion guard set on every child: `<depth>:<pid of the shim>`.
pub const GUARD: &str = "CLAUDE_SHIM_GUARD";
/// `respect`: pass `--no-session-persistence` calls through untouched.
pub const PERSISTENCE: &str = "CLAUDE_SHIM_PERSISTENCE";
/// `keep`: a live stream-json session's later messages pass whole, even when
/// they re-send its transcript (`crate::resend`).
pub const RESEND: &str = "CLAUDE_SHIM_RESEND";
/// How long an ephemeral session (of a `--no-session-persistence` caller)
/// may sit idle before the shim deletes it.
pub const EPHEMERAL_TTL: &str = "CLAUDE_SHIM_EPHEMERAL_TTL";
/// `path` | `alias`: set by the `init` scripts, so `doctor` and `status`
/// can tell how the shell that started them reaches the shim.
pub const MODE: &str = "CLAUDE_SHIM_MODE";
/// `portable`: use the portable fallbacks of the Linux-only calls (tests).
pub const PLATFORM: &str = "CLAUDE_SHIM_PLATFORM";
/// Compactions after which a session's turn runs fresh (`0`: no ceiling).
pub const MAX_COMPACTIONS: &str = "CLAUDE_SHIM_MAX_COMPACTIONS";
/// `continue`: a retry of a turn killed before its result continues it.
pub const ON_RETRY: &str = "CLAUDE_SHIM_ON_RETRY";
/// How long after a killed attempt its retry may continue it.
pub const RETRY_WINDOW: &str = "CLAUDE_SHIM_RETRY_WINDOW";
/// `0`: no warm turns (every turn starts a cold CLI).
pub const WARM: &str = "CLAUDE_SHIM_WARM";
/// Most live processes the keeper holds.
pub const WARM_MAX: &str = "CLAUDE_SHIM_WARM_MAX";
/// How long a live process may sit idle.
pub const WARM_TTL: &str = "CLAUDE_SHIM_WARM_TTL";
/// The most resident memory the live processes may hold together.
pub const WARM_MEMORY: &str = "CLAUDE_SHIM_WARM_MEMORY";
/// `1`: calls with text input run in live CLIs too, although the model is
/// then asked as in a multi-turn session (see `warm::SINGLE_SHOT`).
pub const WARM_TEXT: &str = "CLAUDE_SHIM_WARM_TEXT";
/// `0`: no CLI started ahead of a scope's next new conversation.
pub const WARM_READY: &str = "CLAUDE_SHIM_WARM_READY";
/// How long a new live process may stay silent before it is taken for one
/// that cannot answer.
pub const WARM_START_PATIENCE: &str = "CLAUDE_SHIM_WARM_START_PATIENCE";
/// Where the store lives: `sqlite` (default: `<data dir>/shim.db`) or a
/// `postgres://…` URL shared by a fleet of replicas.
pub const STORE: &str = "CLAUDE_SHIM_STORE";
/// `0`: turns on a shared store connect themselves (no connection readied
/// by the keeper).
pub const STORE_READY: &str = "CLAUDE_SHIM_STORE_READY";
/// The descriptor a keeper says it listens on (set by the shim that starts
/// it; not for users).
pub const KEEPER_READY: &str = "CLAUDE_SHIM_KEEPER_READY";
/// An opaque tenant value a multi-user server sets per end user: part of
/// what identifies a conversation (two scopes never share a session).
pub const SCOPE: &str = "CLAUDE_SHIM_SCOPE";
/// `1`: panic inside the turn's decision (tests prove a panic never reaches
/// the caller: the turn runs as asked).
pub const TEST_PANIC: &str = "CLAUDE_SHIM_TEST_PANIC";

/// All variables with a one-line description, for `--help` and the README.
pub const ALL: &[(&str, &str)] = &[
    (
        KEEPER_READY,
        "set by the shim for the keeper it starts (the descriptor it says it is ready on); not for users to set",
    ),
    (
        SCOPE,
        "tenant: an opaque value a multi-user server sets per end user; calls of different scopes never share a session",
    ),
    (
        HOME,
        "data directory (default $XDG_DATA_HOME/claude-shim or ~/.local/share/claude-shim)",
    ),
    (
        STORE,
        "sqlite (default) | postgres://user@host/db: a store shared by replicas (also `store = \"…\"` in <data dir>/config.toml)",
    ),
    (
        STORE_READY,
        "0 = each turn on a shared store connects itself (default: the keeper readies the next turn's connection)",
    ),
    (
        REAL,
        "path of the real claude (default: next `claude` on PATH after the shim)",
    ),
    (
        FRESH,
        "1 = run this turn fresh with the full transcript (it is still pinned)",
    ),
    (
        BYPASS,
        "1 = exec the real claude directly, the shim does nothing",
    ),
    (
        PREAMBLE,
        "keep | dedupe (default): resend an unchanged preamble on resume or not",
    ),
    (
        DIALECT,
        "force a transcript dialect by name instead of detecting it",
    ),
    (
        LOG,
        "append debug lines to this file (never to the caller's streams)",
    ),
    (
        PERSISTENCE,
        "respect = pass --no-session-persistence calls through (default: resume them in ephemeral sessions)",
    ),
    (
        RESEND,
        "keep = a live stream-json session's later messages pass whole (default cut: one that re-sends the session's transcript goes as its new part only)",
    ),
    (
        EPHEMERAL_TTL,
        "idle time after which an ephemeral session's file is deleted (default 1h)",
    ),
    (
        MODE,
        "path | alias: set by the init scripts; how this shell reaches the shim (doctor, status)",
    ),
    (
        PLATFORM,
        "portable = use the portable fallbacks of Linux-only calls (for tests)",
    ),
    (
        MAX_COMPACTIONS,
        "compactions after which a conversation's turn runs fresh with the full transcript (default 3; 0 = no ceiling)",
    ),
    (
        ON_RETRY,
        "continue = a retry of a turn killed before its result continues that run's session (default: starts over)",
    ),
    (
        RETRY_WINDOW,
        "how long after a killed attempt a retry may continue it (default 1h)",
    ),
    (
        WARM,
        "0 = no warm turns: every turn starts a cold CLI (default: a conversation's CLI stays alive for its next turn)",
    ),
    (
        WARM_MAX,
        "most live CLIs kept (default 4; fewer when their memory would pass CLAUDE_SHIM_WARM_MEMORY)",
    ),
    (
        WARM_TTL,
        "idle time after which a live CLI is ended (default 5m)",
    ),
    (
        WARM_MEMORY,
        "most memory the live CLIs may hold together, e.g. 1G or 512M (default: an eighth of RAM, at most 1G)",
    ),
    (
        WARM_TEXT,
        "1 = calls with text input (a prompt argument or piped text) run in live CLIs too, although the model is then asked as in a multi-turn session, and background work may outlive the call (default: they run cold)",
    ),
    (
        WARM_READY,
        "0 = no CLI kept ready for a new conversation's first turn (default: after a turn, one per directory and flags, for a minute)",
    ),
    (
        WARM_START_PATIENCE,
        "how long a new live CLI may say nothing before its turn runs cold and warm turns go off for an hour there (default 20s)",
    ),
    (
        TEST_PANIC,
        "1 = panic inside the turn's decision (for tests: the turn still runs as asked)",
    ),
];

fn var_os(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

fn flag(name: &str) -> bool {
    matches!(
        std::env::var(name).as_deref().map(str::trim),
        Ok("1" | "true" | "yes" | "on")
    )
}

/// The model the CLI's environment names (`ANTHROPIC_MODEL`): part of
/// what moves a turn's cached prefix.
pub fn cli_model() -> Option<String> {
    var_os("ANTHROPIC_MODEL").map(|v| v.to_string_lossy().into_owned())
}

pub fn bypass() -> bool {
    flag(BYPASS)
}

/// The keeper's ready pipe (see [`KEEPER_READY`]): a descriptor above 2.
pub fn keeper_ready() -> Option<i32> {
    let fd: i32 = std::env::var(KEEPER_READY).ok()?.trim().parse().ok()?;
    (fd > 2).then_some(fd)
}

pub fn fresh() -> bool {
    flag(FRESH)
}

pub fn real() -> Option<PathBuf> {
    var_os(REAL).map(PathBuf::from)
}

pub fn log_file() -> Option<PathBuf> {
    var_os(LOG).map(PathBuf::from)
}

/// The store's location as set in the environment (see `store::backend`).
pub fn store() -> Option<String> {
    std::env::var(STORE).ok().filter(|v| !v.trim().is_empty())
}

pub fn dialect() -> Option<String> {
    std::env::var(DIALECT).ok().filter(|v| !v.is_empty())
}

/// Preamble policy; anything unrecognised means the default (dedupe).
pub fn preamble_keep() -> bool {
    std::env::var(PREAMBLE).is_ok_and(|v| v.trim().eq_ignore_ascii_case("keep"))
}

/// Whether `--no-session-persistence` calls pass through untouched.
pub fn respect_persistence() -> bool {
    std::env::var(PERSISTENCE).is_ok_and(|v| v.trim().eq_ignore_ascii_case("respect"))
}

/// Whether a live session's later messages pass whole (`CLAUDE_SHIM_RESEND=keep`);
/// anything else means the default (cut a re-sent transcript).
pub fn resend_kept() -> bool {
    std::env::var(RESEND).is_ok_and(|v| v.trim().eq_ignore_ascii_case("keep"))
}

/// Idle time after which an ephemeral session is deleted: `30m`, `1h`, `2d`,
/// or plain seconds; default one hour.
pub fn ephemeral_ttl() -> std::time::Duration {
    std::env::var(EPHEMERAL_TTL)
        .ok()
        .and_then(|v| span(&v))
        .unwrap_or(std::time::Duration::from_secs(3600))
}

/// The compaction ceiling: `CLAUDE_SHIM_MAX_COMPACTIONS` (default 3; `0`:
/// none).
pub fn max_compactions() -> Option<u32> {
    match std::env::var(MAX_COMPACTIONS)
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(3),
    }
}

pub fn on_retry_continue() -> bool {
    std::env::var(ON_RETRY).is_ok_and(|v| v.trim().eq_ignore_ascii_case("continue"))
}

pub fn retry_window() -> std::time::Duration {
    std::env::var(RETRY_WINDOW)
        .ok()
        .and_then(|v| span(&v))
        .unwrap_or(std::time::Duration::from_secs(3600))
}

/// Warm turns are on unless `CLAUDE_SHIM_WARM` says `0`/`false`/`off`/`no`.
pub fn warm() -> bool {
    !matches!(
        std::env::var(WARM).as_deref().map(str::trim),
        Ok("0" | "false" | "off" | "no")
    )
}

/// Calls with text input run in live CLIs only when `CLAUDE_SHIM_WARM_TEXT`
/// says `1`/`true`/`yes`/`on` (and warm turns are on).
pub fn warm_text() -> bool {
    warm() && flag(WARM_TEXT)
}

/// A CLI is kept ready for new conversations unless `CLAUDE_SHIM_WARM_READY`
/// says `0`/`false`/`off`/`no` (or warm turns are off).
pub fn warm_ready() -> bool {
    warm()
        && !matches!(
            std::env::var(WARM_READY).as_deref().map(str::trim),
            Ok("0" | "false" | "off" | "no")
        )
}

/// The keeper readies store connections unless `CLAUDE_SHIM_STORE_READY`
/// says `0`/`false`/`off`/`no`.
pub fn store_ready() -> bool {
    !matches!(
        std::env::var(STORE_READY).as_deref().map(str::trim),
        Ok("0" | "false" | "off" | "no")
    )
}

pub fn warm_max() -> Option<usize> {
    std::env::var(WARM_MAX)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

pub fn warm_ttl() -> std::time::Duration {
    std::env::var(WARM_TTL)
        .ok()
        .and_then(|v| span(&v))
        .unwrap_or(std::time::Duration::from_secs(300))
}

/// How long a new live CLI may say nothing (`CLAUDE_SHIM_WARM_START_PATIENCE`,
/// default 20 s).
pub fn warm_start_patience() -> std::time::Duration {
    std::env::var(WARM_START_PATIENCE)
        .ok()
        .and_then(|v| span(&v))
        .filter(|d| !d.is_zero())
        .unwrap_or(std::time::Duration::from_secs(20))
}

/// `CLAUDE_SHIM_WARM_MEMORY` in bytes: `1G`, `512M`, `300000K` or plain bytes.
pub fn warm_memory() -> Option<u64> {
    size(&std::env::var(WARM_MEMORY).ok()?)
}

/// A size like `1G`, `512M`, `64K` (powers of 1024) or plain bytes.
pub fn size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().ok()?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift).filter(|b| *b > 0)
}

pub fn test_panic() -> bool {
    flag(TEST_PANIC)
}

/// How the `init` script sourced in the calling shell set it up, as set.
pub fn mode() -> Option<String> {
    std::env::var(MODE).ok().filter(|v| !v.is_empty())
}

pub fn portable_platform() -> bool {
    std::env::var(PLATFORM).is_ok_and(|v| v.trim().eq_ignore_ascii_case("portable"))
}

/// A span like `90s`, `30m`, `24h`, `7d`, `2w`.
pub fn span(text: &str) -> Option<std::time::Duration> {
    crate::text::duration::parse(text).ok()
}

/// The data directory: `CLAUDE_SHIM_HOME`, else `$XDG_DATA_HOME/claude-shim`,
/// else `~/.local/share/claude-shim`.
pub fn data_dir() -> Option<PathBuf> {
    if let Some(dir) = var_os(HOME) {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = var_os("XDG_DATA_HOME") {
        return Some(PathBuf::from(xdg).join("claude-shim"));
    }
    var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/claude-shim"))
}

/// Claude Code's config dir: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    if let Some(dir) = var_os("CLAUDE_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    var_os("HOME").map(|h| PathBuf::from(h).join(".claude"))
}

/// The recursion guard as found on entry: (depth, pid of the shim that set it).
pub fn guard() -> Option<(u32, u32)> {
    let raw = std::env::var(GUARD).ok()?;
    let (depth, pid) = raw.split_once(':')?;
    Some((depth.parse().ok()?, pid.parse().ok()?))
}

// What the shim reads of the rest of the environment: the caller's, which
// the CLI reads too (a scope and a live CLI's fingerprint hold all of it),
// and the places shells, completions and reports look.

/// The whole environment, as the CLI would get it.
pub fn all() -> std::env::VarsOs {
    std::env::vars_os()
}

/// `HOME` as set (even empty): where Claude Code reads the user's files.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// `HOME` as text, for writing paths under it as `~` in reports.
pub fn home_text() -> Option<String> {
    std::env::var("HOME").ok()
}

/// A directory variable that is set and not empty (`ZDOTDIR`,
/// `XDG_CONFIG_HOME`, …).
pub fn dir(name: &str) -> Option<PathBuf> {
    var_os(name).map(PathBuf::from)
}

/// `CARGO_HOME` as set, even empty (where `cargo install` puts binaries).
pub fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME").map(PathBuf::from)
}

/// The directories of `PATH`.
pub fn path() -> OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

/// The directories of `FPATH` (where zsh finds completions).
pub fn fpath() -> Vec<PathBuf> {
    std::env::var_os("FPATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default()
}

/// `SHELL`: the user's login shell.
pub fn shell() -> OsString {
    std::env::var_os("SHELL").unwrap_or_default()
}

/// `NO_COLOR` set and not empty: no colour, even on a terminal.
pub fn no_color() -> bool {
    var_os("NO_COLOR").is_some()
}

/// `COLUMNS`, where it is a width.
pub fn columns() -> Option<usize> {
    std::env::var("COLUMNS").ok()?.trim().parse().ok()
}

/// The recursion guard as set on entry, unparsed (for `doctor`).
pub fn guard_text() -> Option<String> {
    std::env::var(GUARD).ok()
}

/// `CLAUDE_CODE_ATTRIBUTION_HEADER`: whether the CLI sends its billing
/// header, which changes its system prompt (see `cost`).
pub fn attribution_header() -> Option<String> {
    std::env::var("CLAUDE_CODE_ATTRIBUTION_HEADER").ok()
}
