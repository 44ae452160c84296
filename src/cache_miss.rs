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

/// What moves the cached prefix, as short hashes: the model, the system
/// prompt, the tools, and a new process's start-up snapshot. Stored with
/// each turn (`m:…;s:…;t:…;v:…`) for the session's next turn to compare.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefix {
    pub model: String,
    pub system: String,
    pub tools: String,
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
        format!(
            "m:{};s:{};t:{};v:{}",
            self.model, self.system, self.tools, self.snapshot
        )
    }

    /// `None`: not one this build wrote.
    pub fn from_stored(text: &str) -> Option<Prefix> {
        let mut p = Prefix::default();
        for field in text.split(';') {
            let (k, v) = field.split_once(':')?;
            let slot = match k {
                "m" => &mut p.model,
                "s" => &mut p.system,
                "t" => &mut p.tools,
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
}

/// The cache's lifetime: 5 minutes from the last read or write, or 1 hour.
pub const LIFETIME_SECS: i64 = 5 * 60;
pub const LIFETIME_1H_SECS: i64 = 60 * 60;

/// Why the turn missed its cache; `None` where it read more than it wrote.
pub fn classify(f: &Facts<'_>) -> Option<CacheMiss> {
    if f.written <= f.read {
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
    // The model is part of the cache's key; then the tools array, which
    // comes first in the prefix. The system prompt and the snapshot are
    // kept with the session by Claude Code 2.1 (a resume sends the stored
    // ones), so they explain a miss only where nothing else does.
    if p.model != f.prefix.model {
        return Some(CacheMiss::Model);
    }
    if p.tools != f.prefix.tools {
        return Some(CacheMiss::Tools);
    }
    if p.system != f.prefix.system {
        return Some(CacheMiss::SystemPrompt);
    }
    if f.new_process && p.snapshot != f.prefix.snapshot {
        return Some(CacheMiss::Snapshot);
    }
    Some(CacheMiss::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(m: &str, s: &str, t: &str, v: &str) -> Prefix {
        Prefix {
            model: m.into(),
            system: s.into(),
            tools: t.into(),
            snapshot: v.into(),
        }
    }

    #[test]
    fn the_first_difference_that_explains_the_miss_names_it() {
        let before = prefix("m", "s", "t", "v");
        let prev = Previous {
            ended_at: 1_000,
            prefix: Some(before.clone()),
        };
        let facts = |prefix: &Prefix, started_at, new_process, compacted| {
            classify(&Facts {
                read: 100,
                written: 5_000,
                one_hour: false,
                started_at,
                previous: Some(&prev),
                prefix,
                new_process,
                compacted,
            })
        };
        let soon = 1_000 + 60;
        let later = 1_000 + LIFETIME_SECS + 1;
        let cases = [
            (prefix("m", "s", "t", "v"), soon, true, true, CacheMiss::Compaction),
            (prefix("M", "S", "T", "V"), later, true, false, CacheMiss::Idle),
            (prefix("M", "S", "T", "v"), soon, true, false, CacheMiss::Model),
            (prefix("m", "S", "T", "v"), soon, true, false, CacheMiss::Tools),
            (prefix("m", "S", "t", "V"), soon, false, false, CacheMiss::SystemPrompt),
            (prefix("m", "s", "t", "V"), soon, true, false, CacheMiss::Snapshot),
            // A live process keeps its snapshot whatever changed on disk.
            (prefix("m", "s", "t", "V"), soon, false, false, CacheMiss::Unknown),
            (prefix("m", "s", "t", "v"), soon, true, false, CacheMiss::Unknown),
        ];
        for (p, at, new, compacted, want) in cases {
            assert_eq!(facts(&p, at, new, compacted), Some(want), "{p:?} {at}");
        }
        // The one-hour cache lives longer.
        let hour = classify(&Facts {
            read: 0,
            written: 10,
            one_hour: true,
            started_at: 1_000 + LIFETIME_SECS + 1,
            previous: Some(&prev),
            prefix: &before,
            new_process: false,
            compacted: false,
        });
        assert_eq!(hour, Some(CacheMiss::Unknown));
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
        };
        assert_eq!(classify(&f), None);
        assert_eq!(classify(&Facts { read: 0, written: 0, ..f.clone() }), None);
        assert_eq!(
            classify(&Facts { read: 0, written: 1, compacted: false, ..f }),
            Some(CacheMiss::Unknown)
        );
    }

    #[test]
    fn codes_and_fingerprints_read_back() {
        for m in CacheMiss::ALL {
            assert_eq!(CacheMiss::from_stored(m.as_str()), Some(m));
        }
        assert_eq!(CacheMiss::from_stored("other"), None);
        let p = prefix(&part([&b"a"[..]]), "s1", "t1", "v1");
        assert_eq!(Prefix::from_stored(&p.to_stored()), Some(p));
        assert_eq!(Prefix::from_stored("garbage"), None);
        assert_ne!(part([&b"ab"[..], b""]), part([&b"a"[..], b"b"]));
    }
}
