//! Rewriting a turn: argv gains the session flags (in front, where no
//! variadic flag or `--` can swallow them), and the prompt shrinks to what
//! the resumed session does not already hold.

use crate::dialect::Conversation;
use crate::plan::{How, Plan};
use std::ffi::OsString;

/// Flags that select the session for `plan`, to put before the caller's argv.
pub fn session_flags(plan: &Plan) -> Vec<OsString> {
    let v: Vec<&str> = match plan {
        Plan::Caller { .. } | Plan::AsIs { .. } => vec![],
        Plan::Fresh { session, .. } => vec!["--session-id", session],
        Plan::Resume {
            session,
            how: How::InPlace,
        } => vec!["--resume", session],
        Plan::Resume {
            session,
            how: How::ForkHead { new },
        } => {
            vec!["--resume", session, "--fork-session", "--session-id", new]
        }
        Plan::Resume {
            session,
            how: How::ForkAt { at, new },
        } => vec![
            "--resume",
            session,
            "--resume-session-at",
            at,
            "--fork-session",
            "--session-id",
            new,
        ],
    };
    v.into_iter().map(OsString::from).collect()
}

pub fn argv(plan: &Plan, args: &[OsString]) -> Vec<OsString> {
    let mut out = session_flags(plan);
    out.extend_from_slice(args);
    out
}

/// The prompt text a resumed turn sends: the new user message, preceded by
/// the preamble when the session does not hold this version of it.
pub fn delta(conv: &Conversation, send_preamble: bool) -> String {
    if send_preamble {
        conv.delta_with_preamble.clone()
    } else {
        conv.delta.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Why;

    #[test]
    fn flags_go_first() {
        let args: Vec<OsString> = ["-p", "--allowedTools", "A", "B", "--", "prompt"]
            .map(Into::into)
            .to_vec();
        let plan = Plan::Resume {
            session: "S".into(),
            how: How::ForkAt {
                at: "A1".into(),
                new: "N".into(),
            },
        };
        let out = argv(&plan, &args);
        let want: Vec<OsString> = [
            "--resume",
            "S",
            "--resume-session-at",
            "A1",
            "--fork-session",
            "--session-id",
            "N",
            "-p",
            "--allowedTools",
            "A",
            "B",
            "--",
            "prompt",
        ]
        .map(Into::into)
        .to_vec();
        assert_eq!(out, want);
        let parsed = crate::argv::parse(&out).unwrap();
        assert_eq!(parsed.value("resume"), Some("S"));
        assert_eq!(parsed.values("allowedTools"), ["A", "B"]);
        let fresh = Plan::Fresh {
            session: "N".into(),
            why: Why::Forced,
        };
        assert_eq!(
            argv(&fresh, &[])[..2],
            ["--session-id".into(), "N".into()] as [OsString; 2]
        );
    }

    #[test]
    fn delta_with_and_without_preamble() {
        let c = Conversation::first_turn("now");
        assert_eq!(delta(&c, true), "now");
        let c = Conversation::new("x", Some("System: be brief".into()), vec![], "now".into());
        assert_eq!(delta(&c, false), "now");
        assert_eq!(delta(&c, true), "System: be brief\n\nnow");
    }
}
