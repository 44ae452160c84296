//! Stage 4, attempt: what a planned turn runs — argv (the session flags in
//! front, where no variadic flag or `--` can swallow them), stdin, and the
//! prompt bytes sent. Pure: the turn runs it and `explain` shows it, so what
//! `explain` says would be sent is what is sent.

use super::plan::{How, Plan};
use crate::dialect::Conversation;
use crate::invocation::InputFormat;
use crate::prompt::{self, Prompt};
use crate::runner::StdinPlan;
use std::ffi::OsString;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub args: Vec<OsString>,
    pub stdin: StdinPlan,
    /// Prompt bytes sent (the caller's, or the delta).
    pub sent: usize,
    /// Hold the output until the run proves itself (`proof`), so a refusal
    /// can be rerun unseen (a resume attempt, or a transcript that may be
    /// too long).
    pub hold: bool,
    pub proof: crate::runner::Proof,
    /// Index in `args` of the positional prompt, if that is where it is.
    pub prompt_arg: Option<usize>,
    /// Variables added to the CLI's environment.
    pub env: Vec<(String, String)>,
    /// The CLI speaks stream-json; the caller gets its own format (see
    /// `runner::render`).
    pub render: bool,
    /// The session whose running totals the CLI restores, when the shim
    /// chose to resume it: the caller gets its call's own cost (see `cost`).
    pub own_cost: Option<String>,
}

impl Attempt {
    /// The prompt bytes this attempt hands the CLI, for `explain`: the
    /// positional prompt, stdin text, or the stream-json lines after the
    /// caller's control lines.
    pub fn prompt_bytes(&self, prompt: &Prompt) -> Vec<u8> {
        if let Some(at) = self.prompt_arg {
            return self
                .args
                .get(at)
                .map(|a| a.as_encoded_bytes().to_vec())
                .unwrap_or_default();
        }
        match (&self.stdin, prompt) {
            (StdinPlan::Bytes(b), _) => b.to_vec(),
            (StdinPlan::Stream { first, .. }, Prompt::StreamJson { before, .. }) => {
                first[before.len().min(first.len())..].to_vec()
            }
            (StdinPlan::Stream { first, .. }, _) => first.clone(),
            (StdinPlan::Inherit | StdinPlan::Manual | StdinPlan::Silent, _) => Vec::new(),
        }
    }
}

/// Flags that select the session for `plan`, to put before the caller's argv.
pub fn session_flags(plan: &Plan) -> Vec<OsString> {
    let v: Vec<&str> = match plan {
        Plan::Caller { .. } | Plan::AsIs { .. } => vec![],
        Plan::Continue { session, .. } => vec!["--resume", session],
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

/// argv for `plan`: the session flags, then the caller's argv.
pub fn argv(plan: &Plan, args: &[OsString]) -> Vec<OsString> {
    let mut out = session_flags(plan);
    out.extend_from_slice(args);
    out
}

/// The prompt text a resumed turn sends: the new user message, preceded by
/// the preamble when the session does not hold this version of it.
pub fn delta(conv: &Conversation, send_preamble: bool) -> &str {
    if send_preamble {
        &conv.delta_with_preamble
    } else {
        &conv.delta
    }
}

/// Exactly what the caller asked: its argv, and its input replayed.
pub fn original(prompt: &Prompt, args: &[OsString], input: InputFormat) -> Attempt {
    let stdin = match prompt {
        Prompt::Positional { .. } | Prompt::None { inherit: true, .. } => StdinPlan::Inherit,
        Prompt::Late => StdinPlan::Silent,
        Prompt::Stdin { bytes } => StdinPlan::Bytes(bytes.clone()),
        Prompt::StreamJson {
            before,
            line,
            more,
            after,
            ..
        } => StdinPlan::Stream {
            first: [&before[..], &line[..], &more.concat()].concat(),
            pending: after.clone(),
        },
        Prompt::Waiting { before: bytes, .. } => StdinPlan::Stream {
            first: bytes.clone(),
            pending: Vec::new(),
        },
        Prompt::None { bytes, .. } if input == InputFormat::StreamJson => StdinPlan::Stream {
            first: bytes.clone(),
            pending: Vec::new(),
        },
        Prompt::None { bytes, .. } => StdinPlan::Bytes(bytes.clone().into()),
    };
    let prompt_arg = match prompt {
        Prompt::Positional { index, .. } => Some(*index),
        _ => None,
    };
    Attempt {
        args: args.to_vec(),
        stdin,
        sent: prompt.len(),
        hold: false,
        proof: Default::default(),
        prompt_arg,
        env: Vec::new(),
        render: false,
        own_cost: None,
    }
}

/// The session a plan resumes that the caller did not (its running totals
/// are not the caller's call's).
fn restores(plan: &Plan) -> Option<String> {
    match plan {
        Plan::Resume { session, .. } | Plan::Continue { session, .. } => Some(session.clone()),
        Plan::Fresh { .. } | Plan::Caller { .. } | Plan::AsIs { .. } => None,
    }
}

/// Continue an interrupted turn: the CLI resumes the session with
/// `CLAUDE_CODE_RESUME_INTERRUPTED_TURN=1`, no prompt and stream-json input
/// at its end, so it finishes the killed turn without a second copy of the
/// message (checked on 2.1.330); its stream-json is rendered for the caller.
pub fn continuation(plan: &Plan, args: &[OsString]) -> Option<Attempt> {
    let parsed = crate::argv::parse(args).ok()?;
    let flags = crate::warm::caller_flags(args, &parsed)?;
    let argv = crate::warm::live_args(&session_flags(plan), &flags)?;
    Some(Attempt {
        args: argv.into_iter().map(OsString::from).collect(),
        stdin: StdinPlan::Bytes(Default::default()),
        sent: 0,
        hold: false,
        proof: Default::default(),
        prompt_arg: None,
        env: vec![("CLAUDE_CODE_RESUME_INTERRUPTED_TURN".into(), "1".into())],
        render: true,
        own_cost: restores(plan),
    })
}

/// What `plan` runs: the caller's input with the session flags (fresh), or
/// only the delta (resumed, caller-resumed).
pub fn attempt(
    plan: &Plan,
    conv: &Conversation,
    send_preamble: bool,
    prompt: &Prompt,
    args: &[OsString],
    input: InputFormat,
) -> Attempt {
    let as_asked = original(prompt, args, input);
    if matches!(plan, Plan::Continue { .. }) {
        return continuation(plan, args).unwrap_or(as_asked);
    }
    let with_flags = |a: Attempt| Attempt {
        args: argv(plan, &a.args),
        hold: matches!(plan, Plan::Resume { .. }),
        proof: Default::default(),
        prompt_arg: a.prompt_arg.map(|i| i + session_flags(plan).len()),
        own_cost: restores(plan),
        ..a
    };
    if !matches!(plan, Plan::Resume { .. } | Plan::Caller { .. }) {
        return with_flags(as_asked);
    }
    let delta = delta(conv, send_preamble);
    match prompt {
        Prompt::Positional { index, .. } => {
            let (args, index) = prompt::replace_positional(args, *index, delta);
            with_flags(Attempt {
                args,
                stdin: StdinPlan::Inherit,
                sent: delta.len(),
                hold: false,
                proof: Default::default(),
                prompt_arg: Some(index),
                env: Vec::new(),
                render: false,
                own_cost: None,
            })
        }
        Prompt::Stdin { .. } => with_flags(Attempt {
            args: args.to_vec(),
            stdin: StdinPlan::Bytes(delta.as_bytes().to_vec().into()),
            sent: delta.len(),
            hold: false,
            proof: Default::default(),
            prompt_arg: None,
            env: Vec::new(),
            render: false,
            own_cost: None,
        }),
        Prompt::StreamJson {
            before,
            line,
            more,
            after,
            ..
        } => {
            // One line per message: the session holds all but the last.
            let line = match more.last() {
                Some(last) => last.clone(),
                None => match prompt::replace_stream_text(line, delta) {
                    Some(l) => l,
                    // Cannot rewrite: run as the caller asked (nothing is
                    // pinned since the session seen will not be the planned one).
                    None => return as_asked,
                },
            };
            let sent = line.len();
            with_flags(Attempt {
                args: args.to_vec(),
                stdin: StdinPlan::Stream {
                    first: [&before[..], &line[..]].concat(),
                    pending: after.clone(),
                },
                sent,
                hold: false,
                proof: Default::default(),
                prompt_arg: None,
                env: Vec::new(),
                render: false,
                own_cost: None,
            })
        }
        Prompt::Waiting { .. } | Prompt::None { .. } | Prompt::Late => as_asked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::plan::Why;

    fn os(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    const N: &str = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";

    #[test]
    fn flags_go_first() {
        let args = os(&["-p", "--allowedTools", "A", "B", "--", "prompt"]);
        let plan = Plan::Resume {
            session: "S".into(),
            how: How::ForkAt {
                at: "A1".into(),
                new: "N".into(),
            },
        };
        let out = argv(&plan, &args);
        let want = os(&[
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
        ]);
        assert_eq!(out, want);
        let parsed = crate::argv::parse(&out).unwrap();
        assert_eq!(parsed.value("resume"), Some("S"));
        assert_eq!(parsed.values("allowedTools"), ["A", "B"]);
    }

    fn conv(text: &str) -> Conversation {
        crate::dialect::detect(text, None).conversation(text)
    }

    #[test]
    fn attempt_table() {
        let human = "System: be brief\n\nHuman: a\n\nAssistant: b\n\nHuman: c";
        let c = conv(human);
        let resume = Plan::Resume {
            session: S.into(),
            how: How::InPlace,
        };
        let fresh = Plan::Fresh {
            session: N.into(),
            why: Why::Forced,
        };
        let caller = Plan::Caller { session: S.into() };
        let stdin = Prompt::Stdin {
            bytes: human.as_bytes().to_vec().into(),
        };
        let positional = Prompt::Positional {
            index: 2,
            text: human.into(),
        };
        let user_line = |t: &str| {
            format!(
                "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":{}}}}}\n",
                serde_json::json!(t)
            )
        };
        let control = "{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"initialize\"}}\n";
        let stream = Prompt::StreamJson {
            before: control.as_bytes().to_vec(),
            line: user_line(human).into_bytes(),
            text: Some(human.into()),
            more: vec![],
            after: b"later\n".to_vec(),
        };
        // A rewritten line keeps every field; serde_json writes keys sorted.
        let rewritten = |t: &str| {
            format!(
                "{{\"message\":{{\"content\":{},\"role\":\"user\"}},\"type\":\"user\"}}\n",
                serde_json::json!(t)
            )
        };
        let p_args = os(&["-p", "--", human]);
        let t = InputFormat::Text;
        let s = InputFormat::StreamJson;
        struct Row<'a> {
            plan: &'a Plan,
            preamble: bool,
            prompt: &'a Prompt,
            args: Vec<OsString>,
            input: InputFormat,
            // → what the attempt runs and sends
            argv: Vec<OsString>,
            stdin: StdinPlan,
            sent: usize,
            hold: bool,
            bytes: Vec<u8>,
        }
        let bytes = |b: &[u8]| StdinPlan::Bytes(b.to_vec().into());
        let streamed = |line: &str| StdinPlan::Stream {
            first: [control, line].concat().into_bytes(),
            pending: b"later\n".to_vec(),
        };
        let with_preamble = b"System: be brief\n\nc";
        let rows = [
            Row {
                plan: &fresh,
                preamble: false,
                prompt: &stdin,
                args: os(&["-p"]),
                input: t,
                argv: os(&["--session-id", N, "-p"]),
                stdin: bytes(human.as_bytes()),
                sent: human.len(),
                hold: false,
                bytes: human.into(),
            },
            Row {
                plan: &resume,
                preamble: false,
                prompt: &stdin,
                args: os(&["-p"]),
                input: t,
                argv: os(&["--resume", S, "-p"]),
                stdin: bytes(b"c"),
                sent: 1,
                hold: true,
                bytes: b"c".to_vec(),
            },
            Row {
                plan: &resume,
                preamble: true,
                prompt: &stdin,
                args: os(&["-p"]),
                input: t,
                argv: os(&["--resume", S, "-p"]),
                stdin: bytes(with_preamble),
                sent: with_preamble.len(),
                hold: true,
                bytes: with_preamble.to_vec(),
            },
            Row {
                plan: &caller,
                preamble: false,
                prompt: &stdin,
                args: os(&["-p", "--resume", S]),
                input: t,
                argv: os(&["-p", "--resume", S]),
                stdin: bytes(b"c"),
                sent: 1,
                hold: false,
                bytes: b"c".to_vec(),
            },
            Row {
                plan: &resume,
                preamble: false,
                prompt: &positional,
                args: p_args.clone(),
                input: t,
                argv: os(&["--resume", S, "-p", "--", "c"]),
                stdin: StdinPlan::Inherit,
                sent: 1,
                hold: true,
                bytes: b"c".to_vec(),
            },
            Row {
                plan: &fresh,
                preamble: false,
                prompt: &positional,
                args: p_args.clone(),
                input: t,
                argv: os(&["--session-id", N, "-p", "--", human]),
                stdin: StdinPlan::Inherit,
                sent: human.len(),
                hold: false,
                bytes: human.into(),
            },
            Row {
                plan: &resume,
                preamble: false,
                prompt: &stream,
                args: os(&["-p"]),
                input: s,
                argv: os(&["--resume", S, "-p"]),
                stdin: streamed(&rewritten("c")),
                sent: rewritten("c").len(),
                hold: true,
                bytes: rewritten("c").into_bytes(),
            },
            Row {
                plan: &fresh,
                preamble: false,
                prompt: &stream,
                args: os(&["-p"]),
                input: s,
                argv: os(&["--session-id", N, "-p"]),
                stdin: streamed(&user_line(human)),
                sent: user_line(human).len(),
                hold: false,
                bytes: user_line(human).into_bytes(),
            },
        ];
        for (i, r) in rows.into_iter().enumerate() {
            let a = attempt(r.plan, &c, r.preamble, r.prompt, &r.args, r.input);
            assert_eq!(a.args, r.argv, "row {i}");
            assert_eq!(a.stdin, r.stdin, "row {i}");
            assert_eq!((a.sent, a.hold), (r.sent, r.hold), "row {i}");
            assert_eq!(a.prompt_bytes(r.prompt), r.bytes, "row {i}");
        }
        // As the caller asked: nothing added.
        let asked = original(&stdin, &os(&["-p"]), t);
        assert_eq!(
            (asked.args, asked.stdin, asked.hold),
            (os(&["-p"]), StdinPlan::Bytes(human.into()), false)
        );
    }
}
