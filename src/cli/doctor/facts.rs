//! What doctor looked at: the [`Facts`] it gathers (effects) and its checks
//! judge (pure).

use crate::probe::Capabilities as Caps;
use crate::store::report::Health;
use serde::Serialize;
use std::path::PathBuf;

/// Everything doctor looked at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    pub shim_version: String,
    pub exe: PathBuf,
    pub shim_dir: PathBuf,
    /// `missing` | `current` | `stale` | `gone` | `foreign`: what `<shim dir>/claude` is.
    pub link: String,
    /// Where that link points, when it is a link of ours.
    pub link_target: Option<PathBuf>,
    /// Who installed this binary (npm, pip, uv, pipx, cargo, unknown), and
    /// the command that removes it.
    pub installed_by: String,
    pub remove_command: String,
    /// The first `claude` on PATH, and whether it resolves to this binary.
    pub path_claude: Option<PathBuf>,
    pub path_claude_is_shim: bool,
    /// `CLAUDE_SHIM_MODE` as found: what the init script sourced in the
    /// calling shell set up (`path` | `alias`).
    pub mode: Option<String>,
    /// The first `claude-shim` on PATH (alias mode calls it).
    pub claude_shim_on_path: Option<PathBuf>,
    /// The shim directory is on PATH (first or not).
    pub shim_dir_on_path: bool,
    /// The user's shell, from `$SHELL`: bash | zsh | fish.
    pub shell: String,
    /// The rc file that already runs `claude-shim init`, and that line.
    pub rc_file: Option<PathBuf>,
    pub rc_line: Option<String>,
    /// Where the init line goes for this shell, and the line (PATH mode).
    pub rc_suggested_file: String,
    pub rc_suggested_line: String,
    pub real: Option<PathBuf>,
    pub real_error: Option<String>,
    /// The real claude resolves to this binary (a loop).
    pub real_is_shim: bool,
    pub capabilities: Option<Caps>,
    /// `cached` | `probed` | `unavailable`.
    pub capabilities_source: String,
    pub claude_config_dir: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub data_dir_mode: Option<u32>,
    pub data_dir_owned: bool,
    /// Why the shim would not use the data directory, and the fix (then
    /// nothing in it is read: turns run as without the shim).
    pub data_dir_refused: Option<(String, String)>,
    pub db_path: Option<PathBuf>,
    /// The shared store (its URL without the password), when one is
    /// configured: it is the database turns use, not `db_path`.
    pub db_shared: Option<String>,
    pub db_exists: bool,
    pub db_mode: Option<u32>,
    pub db_owned: bool,
    pub db_size: u64,
    pub db_health: Option<Health>,
    pub db_error: Option<String>,
    /// The file system the data directory is on (or, before it exists,
    /// would be created on).
    pub data_dir_space: Option<Space>,
    /// How a turn's writes were tried (and undone): not when the data
    /// directory is refused or does not exist yet.
    pub write_trial: Option<Trial>,
    /// Why that failed, and what it comes down to (for the fix).
    pub write_error: Option<String>,
    pub write_cause: Option<WriteCause>,
    /// `CLAUDE_SHIM_GUARD` as found.
    pub guard: Option<String>,
    /// The last lines of `<data dir>/errors.log`.
    pub recent_errors: Vec<String>,
    /// Binaries and places whose live CLI did not answer lately (their
    /// turns run cold for a while): `<binary> in <cwd>: <why>`.
    pub warm_off: Vec<String>,
    /// The metrics endpoint `metrics = "ADDR"` in config.toml names.
    pub metrics: Option<MetricsEndpoint>,
}

/// What became of the metrics endpoint config.toml names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum MetricsEndpoint {
    /// The `metrics` value cannot be used: why.
    Unreadable { why: String },
    /// config.toml as a whole cannot be read: turns cannot read their
    /// store either, and run as without the shim.
    Broken { why: String },
    /// It answered with the shim's metrics of this data dir.
    Answers { addr: String },
    /// It answered with the metrics of another data dir.
    Elsewhere { addr: String },
    /// Nothing answered: why.
    Silent { addr: String, why: String },
    /// Something else answers there: what.
    Other { addr: String, what: String },
}

/// Room on the data directory's file system, as this user may use it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Space {
    /// Where it was measured: the data directory, or the nearest directory
    /// above it that exists.
    pub at: PathBuf,
    pub free_bytes: u64,
    pub free_inodes: u64,
    /// 0: the file system does not count them (no limit to run out of).
    pub total_inodes: u64,
    pub read_only: bool,
}

/// What a failed write comes down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteCause {
    ReadOnly,
    Full,
    Denied,
    Other,
}

/// How doctor tried a turn's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trial {
    /// In the store, rolled back (`Store::trial`).
    Store,
    /// A file written and removed in the data directory: beside a shared
    /// store, or a local one that fails its own check.
    File,
}
