//! Why a turn ran as it did: a stable code (for `log --json`, scripts,
//! tests) and one sentence for people. Every managed turn records one.

use super::plan::{How, PinMiss, Plan, Why};
use crate::identity::Difference;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: &'static str,
    pub text: String,
}

impl Reason {
    fn new(code: &'static str, text: impl Into<String>) -> Reason {
        Reason {
            code,
            text: text.into(),
        }
    }

    /// Why a turn runs as planned. `busy`: the session's lease was held by
    /// another live turn (so a resume at its head branched instead).
    pub fn of(plan: &Plan, busy: bool) -> Reason {
        match plan {
            Plan::Resume {
                how: How::InPlace, ..
            } => Reason::new("resumed", "resumed the session in place at its head"),
            Plan::Resume { .. } if busy => Reason::new(
                "forked-busy",
                "another turn was still running in the session, so this one branched from the same point",
            ),
            Plan::Resume { .. } => Reason::new(
                "forked-branch",
                "this point of the conversation is not the session's latest (an earlier turn was redone or edited), so it branched from there",
            ),
            Plan::Caller { .. } => Reason::new(
                "caller-resume",
                "kept the caller's --resume and sent only what that session does not hold",
            ),
            Plan::Continue { continues, .. } => Reason::new(
                "continued",
                format!(
                    "continued an interrupted attempt: the session the killed run was writing finished the turn (continue {continues} in a row)"
                ),
            ),
            Plan::Fresh { why, .. } | Plan::AsIs { why } => Reason::from_why(why),
        }
    }

    pub fn from_why(why: &Why) -> Reason {
        match why {
            Why::Forced => Reason::new("forced", "CLAUDE_SHIM_FRESH=1 asked for a fresh turn"),
            Why::Missed(miss) => Reason::from_miss(miss),
            Why::NoResumeSupport => Reason::new(
                "no-resume-support",
                "this Claude Code (before 1.0.128) lacks --resume, --session-id, --fork-session or --resume-session-at, so the turn ran as the caller asked",
            ),
            Why::SessionFileGone => Reason::new(
                "session-gone",
                "the pinned session's file is gone (deleted, or cleaned up by Claude Code)",
            ),
            Why::CannotBranch => Reason::new(
                "cannot-branch",
                "the conversation would need a branch this Claude Code cannot make",
            ),
            Why::CallerSessionUnknown => Reason::new(
                "caller-session-unknown",
                "the caller resumes a session whose history the shim cannot vouch for, so the prompt went unchanged",
            ),
            Why::Refused => Reason::new(
                "resume-refused",
                "Claude Code refused the resume before any output, so the turn reran as the caller asked",
            ),
            Why::Compacted(n) => Reason::new(
                "compacted",
                format!(
                    "the session was compacted {n} time(s): its summary is not the conversation, so the turn ran fresh with the full transcript"
                ),
            ),
        }
    }

    pub fn from_miss(miss: &PinMiss) -> Reason {
        match miss {
            PinMiss::NoHistory => Reason::new(
                "first-turn",
                "no earlier turns in the prompt: a first turn runs fresh and is pinned for the next",
            ),
            PinMiss::NotRecognised(why) => Reason::new(
                "not-recognised",
                format!("the prompt fits no transcript dialect ({why}), so it ran as a first turn"),
            ),
            PinMiss::SubcommandWord(word) => Reason::new(
                "subcommand-word",
                format!(
                    "the new message `{word}` names a `claude` subcommand, which a resumed call \
                     without -p would run instead: the whole transcript ran fresh"
                ),
            ),
            PinMiss::NoPin { elsewhere } if elsewhere.is_empty() => Reason::new(
                "new-conversation",
                "the shim has not seen these earlier turns before",
            ),
            PinMiss::NoPin { elsewhere } => Reason::new(
                difference_code(&elsewhere[0]),
                format!(
                    "the same conversation was seen {}",
                    elsewhere
                        .iter()
                        .map(describe)
                        .collect::<Vec<_>>()
                        .join(", and ")
                ),
            ),
            PinMiss::ReplyDiffers => Reason::new(
                "reply-differs",
                "the last reply in the prompt is not the one the session holds (edited, truncated, or never received)",
            ),
            PinMiss::BadSessionId => Reason::new(
                "bad-session-id",
                "the pinned session id is not a UUID",
            ),
        }
    }

    /// The full transcript was refused as too long: the compacted session
    /// was resumed instead.
    pub fn compacted_too_long() -> Reason {
        Reason::new(
            "compacted-too-long",
            "the full transcript was refused as too long, so the compacted session was resumed after all",
        )
    }

    /// Run unchanged: the prompt could not be read as text.
    pub fn not_text() -> Reason {
        Reason::new(
            "not-text",
            "the prompt is not text the shim can read (binary, or no user message)",
        )
    }

    /// Run unchanged: piped text that had not begun to come when the CLI
    /// would have given up on it.
    pub fn late_stdin(waited_ms: u64) -> Reason {
        Reason::new(
            "late-stdin",
            format!(
                "no stdin data within {waited_ms} ms: the CLI ran as asked, and gave up on it as it \
                 does without the shim"
            ),
        )
    }

    /// Run unchanged: a stream-json caller sent control lines and then no
    /// user message in time (or closed its input).
    pub fn no_user_message(waited_ms: u64) -> Reason {
        Reason::new(
            "no-user-message",
            format!("no user message within {waited_ms} ms after a control line"),
        )
    }

    /// Run unchanged: the caller's input ended before a user message.
    pub fn input_ended() -> Reason {
        Reason::new(
            "no-user-message",
            "the caller's input ended before a user message",
        )
    }

    /// Run unchanged: the shim could not use its store or the real binary's
    /// capabilities.
    pub fn store_unavailable(error: &str) -> Reason {
        Reason::new(
            "store-unavailable",
            format!(
                "the shim could not use its store ({error}), so the turn ran as the caller asked"
            ),
        )
    }

    /// Run unchanged: the shim's own logic failed (see errors.log).
    pub fn internal_error() -> Reason {
        Reason::new(
            "internal-error",
            "the shim hit an internal error (see errors.log), so the turn ran as the caller asked",
        )
    }
}

fn difference_code(d: &Difference) -> &'static str {
    match d {
        Difference::Cwd(_) => "other-directory",
        Difference::ConfigDir(_) => "other-config-dir",
        Difference::Binary(_) => "other-cli",
        Difference::Flag(_) => "flags-changed",
        Difference::Credentials => "other-credentials",
        Difference::Env(_) => "environment-changed",
        Difference::Tenant => "other-tenant",
    }
}

fn describe(d: &Difference) -> String {
    match d {
        Difference::Cwd(dir) => format!("in another directory ({dir})"),
        Difference::ConfigDir(dir) => format!("with another Claude config dir ({dir})"),
        Difference::Binary(v) => format!("with another Claude Code ({v})"),
        Difference::Flag(flag) => format!("with another --{flag}"),
        Difference::Credentials => {
            "with other credentials (API key, token, endpoint or provider)".into()
        }
        Difference::Env(name) => format!("with another {name}"),
        Difference::Tenant => "for another tenant (CLAUDE_SHIM_SCOPE)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_has_a_stable_code_and_one_plain_sentence() {
        let fresh = |why| Plan::Fresh {
            session: "N".into(),
            why,
        };
        let cases: Vec<(Reason, &str)> = vec![
            (
                Reason::of(
                    &Plan::Resume {
                        session: "S".into(),
                        how: How::InPlace,
                    },
                    false,
                ),
                "resumed",
            ),
            (
                Reason::of(
                    &Plan::Resume {
                        session: "S".into(),
                        how: How::ForkHead { new: "N".into() },
                    },
                    true,
                ),
                "forked-busy",
            ),
            (
                Reason::of(
                    &Plan::Resume {
                        session: "S".into(),
                        how: How::ForkAt {
                            at: "A".into(),
                            new: "N".into(),
                        },
                    },
                    false,
                ),
                "forked-branch",
            ),
            (
                Reason::of(
                    &Plan::Caller {
                        session: "S".into(),
                    },
                    false,
                ),
                "caller-resume",
            ),
            (Reason::of(&fresh(Why::Forced), false), "forced"),
            (
                Reason::of(&fresh(Why::Missed(PinMiss::NoHistory)), false),
                "first-turn",
            ),
            (
                Reason::of(
                    &fresh(Why::Missed(PinMiss::NoPin {
                        elsewhere: vec![
                            Difference::Cwd("/a".into()),
                            Difference::Flag("model".into()),
                        ],
                    })),
                    false,
                ),
                "other-directory",
            ),
            (
                Reason::of(
                    &fresh(Why::Missed(PinMiss::NoPin {
                        elsewhere: vec![Difference::Flag("model".into())],
                    })),
                    false,
                ),
                "flags-changed",
            ),
            (
                Reason::of(
                    &Plan::AsIs {
                        why: Why::CallerSessionUnknown,
                    },
                    false,
                ),
                "caller-session-unknown",
            ),
            (Reason::no_user_message(50), "no-user-message"),
            (Reason::internal_error(), "internal-error"),
        ];
        for (reason, code) in &cases {
            assert_eq!(reason.code, *code);
            assert!(
                !reason.text.contains('\n') && !reason.text.contains('{'),
                "{reason:?}"
            );
        }
        let both = &cases[6].0.text;
        assert!(
            both.contains("another directory (/a)") && both.contains("another --model"),
            "{both}"
        );
    }
}
