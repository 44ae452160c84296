//! Why a turn missed the prompt cache: a resumed, warm or forked turn that
//! wrote more to the cache than it read paid for its context again (a
//! write costs 1.25× the input price, a read 0.1×). The shim knows what it
//! changed and what the caller changed between the session's turns; each
//! turn keeps a fingerprint of what moves the cached prefix ([`Prefix`]),
//! and [`classify`] names the first difference that explains the miss.
//! Pure: the turn gathers the [`Facts`], the store keeps the code.
//!
//! What moves the real CLI's prefix on a resume (Claude Code 2.1.330,
//! checked offline against a loopback server that models the cache on the
//! request's bytes and its lifetime, `tests/e2e/cache_miss.rs`; the table
//! is in docs/metrics.md): the cache's lifetime (5 minutes from the last
//! read or write, 1 hour where the request asks for it); the model; the
//! tools array (`--disallowedTools`; `--tools` and MCP servers only append
//! a message); a compaction, which replaces the history. The system prompt
//! and the start-up snapshot (git status, CLAUDE.md) are kept with the
//! session and sent as stored, so on 2.1 they move nothing; older releases
//! computed them anew in each process.

use sha2::{Digest, Sha256};

/// The codes of `log --json`'s `cache_miss` and of the `reason` label of
/// `claude_shim_cache_misses_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMiss {
    /// The session sat idle past the cache's lifetime.
    Idle,
    /// Another model than the session's previous turn.
    Model,
    /// Another system prompt (`--system-prompt`, `--append-system-prompt`…).
    SystemPrompt,
    /// Other tools or MCP servers.
    Tools,
    /// The CLI compacted the session: its history became a summary.
    Compaction,
    /// A new CLI process started from another start-up snapshot (the
    /// CLI's version, its CLAUDE.md files).
    Snapshot,
    /// None the shim knows.
    Unknown,
}

impl CacheMiss {
    pub const ALL: [CacheMiss; 7] = [
        CacheMiss::Idle,
        CacheMiss::Model,
        CacheMiss::SystemPrompt,
        CacheMiss::Tools,
        CacheMiss::Compaction,
        CacheMiss::Snapshot,
        CacheMiss::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheMiss::Idle => "idle",
            CacheMiss::Model => "model",
            CacheMiss::SystemPrompt => "system_prompt",
            CacheMiss::Tools => "tools",
            CacheMiss::Compaction => "compaction",
            CacheMiss::Snapshot => "snapshot",
            CacheMiss::Unknown => "unknown",
        }
    }

    pub fn from_stored(text: &str) -> Option<CacheMiss> {
        CacheMiss::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// For people (`log`'s reason line).
    pub fn sentence(self) -> &'static str {
        match self {
            CacheMiss::Idle => "the session sat idle longer than the cache lives",
            CacheMiss::Model => "the model changed since the session's previous turn",
            CacheMiss::SystemPrompt => {
                "the system prompt changed since the session's previous turn"
            }
            CacheMiss::Tools => "the tools or MCP servers changed since the session's previous turn",
            CacheMiss::Compaction => "Claude Code compacted the session, replacing its history",
            CacheMiss::Snapshot => {
                "a new Claude Code process started from another snapshot (its version or CLAUDE.md changed)"
            }
            CacheMiss::Unknown => "no cause the shim knows",
        }
    }
}

/// What moves the cached prefix, as short hashes: the model, the request's
/// shape (its system prompt and tools), and a new process's start-up
/// snapshot. Stored with each turn (`m:…;s:…;v:…`) for the session's next
/// turn to compare. The model and shape are the CLI's own record of its
/// request (`o…`) where the session file has one, else what the flags and
/// environment name (`f…`); only like with like is compared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefix {
    pub model: String,
    pub shape: String,
    pub snapshot: String,
}

/// A short hash of a part's inputs, in order.
pub fn part<'a>(inputs: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut h = Sha256::new();
    for i in inputs {
        h.update((i.len() as u64).to_le_bytes());
        h.update(i);
    }
    hex::encode(&h.finalize()[..6])
}

impl Prefix {
    pub fn to_stored(&self) -> String {
        format!("m:{};s:{};v:{}", self.model, self.shape, self.snapshot)
    }

    /// `None`: not one this build wrote.
    pub fn from_stored(text: &str) -> Option<Prefix> {
        let mut p = Prefix::default();
        for field in text.split(';') {
            let (k, v) = field.split_once(':')?;
            let slot = match k {
                "m" => &mut p.model,
                "s" => &mut p.shape,
                "v" => &mut p.snapshot,
                _ => return None,
            };
            *slot = v.to_owned();
        }
        Some(p)
    }
}

/// The session's previous turn, as the runs log holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Previous {
    /// When it ended (epoch seconds).
    pub ended_at: i64,
    pub prefix: Option<Prefix>,
    /// The prefix it left in the cache, as recorded: what it read from the
    /// cache and wrote to it (`None`: its usage is unknown).
    pub cached: Option<u64>,
}

/// What a resumed turn knows when it is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts<'a> {
    pub read: u64,
    pub written: u64,
    /// The turn wrote to the one-hour cache.
    pub one_hour: bool,
    /// When the turn started (epoch seconds).
    pub started_at: i64,
    pub previous: Option<&'a Previous>,
    pub prefix: &'a Prefix,
    /// The turn ran in a new CLI process (not a live one's next turn).
    pub new_process: bool,
    /// The CLI compacted the session during the turn.
    pub compacted: bool,
    /// Where the request's shape moved since the previous turn, which part
    /// did: [`CacheMiss::Tools`] or [`CacheMiss::SystemPrompt`] (the turn
    /// tells, from the CLI's records of both shapes).
    pub shape_part: Option<CacheMiss>,
}

/// The cache's lifetime: 5 minutes from the last read or write, or 1 hour.
pub const LIFETIME_SECS: i64 = 5 * 60;
pub const LIFETIME_1H_SECS: i64 = 60 * 60;

/// Two fingerprints of one part differ: both known, from the same source
/// (`o…`: the model the CLI answered with; `f…`: the flags and environment
/// that name it), and unlike.
pub fn differs(a: &str, b: &str) -> bool {
    !a.is_empty() && !b.is_empty() && a.as_bytes()[0] == b.as_bytes()[0] && a != b
}

/// Why the turn missed its cache; `None` where it read more than it wrote,
/// or read all the previous turn left in the cache. A miss is a prefix
/// written before and not read: what a turn writes past it (a long new
/// message) is new, as on any turn.
pub fn classify(f: &Facts<'_>) -> Option<CacheMiss> {
    if f.written <= f.read {
        return None;
    }
    let cached = f.previous.and_then(|p| p.cached).unwrap_or(0);
    if cached > 0 && f.read >= cached {
        return None;
    }
    if f.compacted {
        return Some(CacheMiss::Compaction);
    }
    let Some(prev) = f.previous else {
        return Some(CacheMiss::Unknown);
    };
    // Past its lifetime the cache is gone whatever else changed.
    let lifetime = if f.one_hour {
        LIFETIME_1H_SECS
    } else {
        LIFETIME_SECS
    };
    if f.started_at - prev.ended_at > lifetime {
        return Some(CacheMiss::Idle);
    }
    let Some(p) = &prev.prefix else {
        return Some(CacheMiss::Unknown);
    };
    // The model is part of the cache's key; then the request's shape (the
    // tools array, the system prompt). The snapshot is kept with the
    // session by Claude Code 2.1 (a resume sends the stored one), so it
    // explains a miss only where nothing else does.
    if differs(&p.model, &f.prefix.model) {
        return Some(CacheMiss::Model);
    }
    if differs(&p.shape, &f.prefix.shape) {
        return Some(f.shape_part.unwrap_or(CacheMiss::Tools));
    }
    if f.new_process && !p.snapshot.is_empty() && p.snapshot != f.prefix.snapshot {
        return Some(CacheMiss::Snapshot);
    }
    Some(CacheMiss::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(m: &str, s: &str, v: &str) -> Prefix {
        Prefix {
            model: m.into(),
            shape: s.into(),
            snapshot: v.into(),
        }
    }

    fn facts<'a>(prev: &'a Previous, prefix: &'a Prefix) -> Facts<'a> {
        Facts {
            read: 100,
            written: 5_000,
            one_hour: false,
            started_at: prev.ended_at + 60,
            previous: Some(prev),
            prefix,
            new_process: true,
            compacted: false,
            shape_part: None,
        }
    }

    #[test]
    fn the_first_difference_that_explains_the_miss_names_it() {
        let prev = Previous {
            ended_at: 1_000,
            prefix: Some(prefix("om", "os", "v")),
            cached: None,
        };
        let later = 1_000 + LIFETIME_SECS + 1;
        let same = prefix("om", "os", "v");
        let moved = prefix("oM", "oS", "V");
        let shape = prefix("om", "oS", "V");
        let snapshot = prefix("om", "os", "V");
        let f = |p| facts(&prev, p);
        let cases = [
            (
                Facts {
                    compacted: true,
                    started_at: later,
                    ..f(&moved)
                },
                CacheMiss::Compaction,
            ),
            (
                Facts {
                    started_at: later,
                    ..f(&moved)
                },
                CacheMiss::Idle,
            ),
            (f(&moved), CacheMiss::Model),
            (f(&shape), CacheMiss::Tools),
            (
                Facts {
                    shape_part: Some(CacheMiss::SystemPrompt),
                    ..f(&shape)
                },
                CacheMiss::SystemPrompt,
            ),
            (f(&snapshot), CacheMiss::Snapshot),
            // A live process keeps its snapshot whatever changed on disk.
            (
                Facts {
                    new_process: false,
                    ..f(&snapshot)
                },
                CacheMiss::Unknown,
            ),
            (f(&same), CacheMiss::Unknown),
        ];
        for (facts, want) in cases {
            assert_eq!(classify(&facts), Some(want), "{facts:?}");
        }
        // What the flags name is not compared with what the CLI recorded
        // (an alias and its model are one), nor an unknown with anything.
        let flags = prefix("fm", "fs", "v");
        assert_eq!(classify(&f(&flags)), Some(CacheMiss::Unknown));
        let unknown = prefix("", "", "v");
        assert_eq!(classify(&f(&unknown)), Some(CacheMiss::Unknown));
        // The one-hour cache lives longer than five minutes.
        let hour = Facts {
            one_hour: true,
            started_at: later,
            ..f(&same)
        };
        assert_eq!(classify(&hour), Some(CacheMiss::Unknown));
    }

    #[test]
    fn a_turn_that_read_its_cache_missed_nothing() {
        let p = Prefix::default();
        let f = Facts {
            read: 5_000,
            written: 200,
            one_hour: false,
            started_at: 0,
            previous: None,
            prefix: &p,
            new_process: true,
            compacted: true,
            shape_part: None,
        };
        assert_eq!(classify(&f), None);
        assert_eq!(
            classify(&Facts {
                read: 0,
                written: 0,
                ..f.clone()
            }),
            None
        );
        assert_eq!(
            classify(&Facts {
                read: 0,
                written: 1,
                compacted: false,
                ..f
            }),
            Some(CacheMiss::Unknown)
        );
    }

    /// A miss is a prefix written before and not read: a turn that read all
    /// the previous turn left in the cache and wrote a long new message
    /// missed nothing, whatever else is said of it.
    #[test]
    fn what_a_turn_writes_past_its_cached_prefix_is_no_miss() {
        let same = prefix("om", "os", "v");
        let moved = prefix("oM", "os", "v");
        let prev = |cached| Previous {
            ended_at: 1_000,
            prefix: Some(same.clone()),
            cached,
        };
        // (previous turn's cached prefix, read, written, compacted, prefix, want)
        let cases = [
            // Read all of it, wrote a ~400 KB message: no miss.
            (Some(48_000), 48_000, 100_000, false, &same, None),
            (Some(48_000), 60_000, 100_000, false, &moved, None),
            (Some(48_000), 48_000, 100_000, true, &same, None),
            // Read less than was cached: a miss, named as before.
            (
                Some(48_000),
                0,
                100_000,
                false,
                &same,
                Some(CacheMiss::Unknown),
            ),
            (
                Some(48_000),
                0,
                100_000,
                false,
                &moved,
                Some(CacheMiss::Model),
            ),
            (
                Some(48_000),
                47_999,
                100_000,
                true,
                &same,
                Some(CacheMiss::Compaction),
            ),
            // The previous turn's usage unknown, or nothing cached: the
            // turn is judged by what it read and wrote alone.
            (
                None,
                48_000,
                100_000,
                false,
                &same,
                Some(CacheMiss::Unknown),
            ),
            (
                Some(0),
                48_000,
                100_000,
                false,
                &same,
                Some(CacheMiss::Unknown),
            ),
            // Read more than it wrote: never a miss.
            (Some(48_000), 200, 100, false, &same, None),
        ];
        for (i, (cached, read, written, compacted, p, want)) in cases.into_iter().enumerate() {
            let prev = prev(cached);
            let f = Facts {
                read,
                written,
                compacted,
                ..facts(&prev, p)
            };
            assert_eq!(classify(&f), want, "case {i}: {f:?}");
        }
    }

    #[test]
    fn codes_and_fingerprints_read_back() {
        for m in CacheMiss::ALL {
            assert_eq!(CacheMiss::from_stored(m.as_str()), Some(m));
        }
        assert_eq!(CacheMiss::from_stored("other"), None);
        let p = prefix(&format!("o{}", part([&b"a"[..]])), "os1", "v1");
        assert_eq!(Prefix::from_stored(&p.to_stored()), Some(p));
        assert_eq!(Prefix::from_stored("garbage"), None);
        assert_ne!(part([&b"ab"[..], b""]), part([&b"a"[..], b"b"]));
    }
}
