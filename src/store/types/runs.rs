//! The runs log's vocabulary (see `store::runs`), shared by both backends.

use crate::events::Usage;

/// How a turn was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resumed,
    Forked,
    Fresh,
    /// A resume was refused and the turn reran fresh.
    Fallback,
    /// Managed but run unchanged (unrecognised prompt, store trouble…).
    Unchanged,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Resumed => "resumed",
            Kind::Forked => "forked",
            Kind::Fresh => "fresh",
            Kind::Fallback => "fallback",
            Kind::Unchanged => "unchanged",
        }
    }

    /// How `log` and `status` name a kind read back (`other`: one this
    /// build does not write).
    pub fn text(kind: Option<Kind>) -> &'static str {
        kind.map_or("other", Kind::as_str)
    }

    /// A kind as a row holds it; `None` for one this build does not write
    /// (a newer shim's, on a shared store).
    pub fn from_stored(text: &str) -> Option<Kind> {
        [
            Kind::Resumed,
            Kind::Forked,
            Kind::Fresh,
            Kind::Fallback,
            Kind::Unchanged,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// Where a turn's token counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageFrom {
    /// The result event the CLI printed (json, stream-json output).
    Result,
    /// The assistant records the turn appended to its session file (text
    /// output prints none).
    SessionFile,
}

impl UsageFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageFrom::Result => "result",
            UsageFrom::SessionFile => "session-file",
        }
    }
}

/// What one turn used and cost. `None` is unknown, never zero.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub usage: Option<(Usage, UsageFrom)>,
    /// The turn's own cost (the CLI's running total minus where it started).
    pub cost_usd: Option<f64>,
    /// The session's running total after the turn, as the CLI reported it.
    pub total_cost_usd: Option<f64>,
}

/// How a turn's last run ran (the runs log's `engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A new CLI process for the run.
    Cold,
    /// A live process's next turn.
    Warm,
    /// A new live process, kept for the next turn.
    Live,
    /// A CLI started ready for a new conversation, which took it.
    Ready,
    /// The CLI that already answered an Agent SDK caller's `initialize`.
    Handshake,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Cold => "cold",
            Engine::Warm => "warm",
            Engine::Live => "live",
            Engine::Ready => "ready",
            Engine::Handshake => "handshake",
        }
    }

    /// An engine as a row holds it; `None` for one this build does not
    /// write.
    pub fn from_stored(text: &str) -> Option<Engine> {
        [
            Engine::Cold,
            Engine::Warm,
            Engine::Live,
            Engine::Ready,
            Engine::Handshake,
        ]
        .into_iter()
        .find(|e| e.as_str() == text)
    }
}

pub struct Run<'a> {
    pub cwd: &'a str,
    pub kind: Kind,
    /// Stable reason code (see `turn::why`) and its sentence.
    pub why_code: &'a str,
    pub why: &'a str,
    pub exit: i32,
    pub bytes_in: usize,
    pub bytes_sent: usize,
    pub spent: Spent,
    pub session: Option<&'a str>,
    pub conv_key: Option<&'a str>,
    pub engine: Engine,
    /// Made without the shim, this turn's call would have sent another
    /// system prompt than the call before it (`cost::system_differs`), so
    /// written the cached prefix anew.
    pub replay_misses_prefix: bool,
    /// Why a resumed turn wrote more to the prompt cache than it read
    /// (`None`: it did not, or it was a first turn).
    pub cache_miss: Option<crate::cache_miss::CacheMiss>,
    /// What moves the cached prefix, for the session's next turn.
    pub prefix: Option<&'a crate::cache_miss::Prefix>,
    /// The turn's times (`None`: a row written ahead of its end).
    pub timing: Option<crate::timeline::Timing>,
    /// Failures the turn worked around (errors.log lines it wrote).
    pub errors: u64,
    /// Why it ran cold where it might have run in a live CLI (a
    /// `warm::Refusal` code; `None`: it did not, or nothing refused it).
    pub cold: Option<&'static str>,
}
