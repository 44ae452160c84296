//! The keeper's settings, and the bounds its pool keeps to.

use crate::data_dir::DataDir;
use crate::warm::protocol;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub dir: DataDir,
    pub max: usize,
    /// The most resident memory the live processes may hold together.
    pub memory: u64,
    pub ttl: Duration,
    /// How long the keeper stays with nothing to hold.
    pub linger: Duration,
    pub build: String,
}

impl Config {
    /// The keeper's settings, from the environment it was started with.
    pub fn from_env(dir: &DataDir) -> Config {
        let ttl = crate::env::warm_ttl();
        Config {
            dir: dir.clone(),
            max: crate::env::warm_max().unwrap_or(DEFAULT_MAX),
            memory: crate::env::warm_memory().unwrap_or_else(default_memory),
            ttl,
            linger: ttl.min(Duration::from_secs(60)),
            build: protocol::build_id(),
        }
    }

    /// The pool's share of the settings.
    pub fn limits(&self) -> Limits {
        Limits {
            max: self.max,
            memory: self.memory,
            ttl: self.ttl,
        }
    }
}

/// What the pool may hold: how many live processes, how much resident
/// memory together, and how long one stays idle.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max: usize,
    pub memory: u64,
    pub ttl: Duration,
}

/// How long a ready CLI waits for a new conversation. It took its snapshot
/// of the directory (git status, CLAUDE.md, …) when it started, as a cold
/// start does at the turn: a minute keeps that snapshot about as fresh as
/// the one a live CLI's second turn works from, and ends a CLI nobody came
/// for before it costs much.
pub const READY_FOR: Duration = Duration::from_secs(60);

/// How many of a scope's latest new conversations its arrival rate is taken
/// over, and how long one counts: older ones are no stream any more.
pub const ARRIVALS_KEPT: usize = 4;
pub const ARRIVALS_FOR: Duration = Duration::from_secs(30);

/// How long a new conversation's ready CLI takes to be replaced: the
/// conversation's turn (~0.2 s), after which the next is started, and that
/// one's start (0.4 s on a quiet 2-core machine, about 1 s at load 2). New
/// conversations that arrive within it need a CLI started earlier.
pub const READY_LEAD: Duration = Duration::from_millis(1500);

/// The most CLIs kept ready for one scope (within the pool's bounds).
pub const MAX_READY: usize = 3;

/// What a live CLI holds (measured on 2.1.330: ~215 MiB after ten turns).
pub const TYPICAL_RSS: u64 = 256 << 20;
/// Free memory left to the machine: below it no live process is started,
/// and idle ones end.
pub const RESERVE: u64 = 1 << 30;

/// The default bound on live processes (`CLAUDE_SHIM_WARM_MAX`): a few
/// conversations warm at once, as one person or one small server has.
pub const DEFAULT_MAX: usize = 4;

/// The default memory budget (`CLAUDE_SHIM_WARM_MEMORY`): an eighth of the
/// machine's memory, at most 1 GiB (four live CLIs).
pub fn default_memory() -> u64 {
    let budget = meminfo("MemTotal:").map_or(1 << 30, |total| total / 8);
    budget.min(1 << 30)
}

/// A `/proc/meminfo` line's amount, in bytes (Linux; elsewhere unknown).
pub fn meminfo(key: &str) -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with(key))?.to_owned();
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
