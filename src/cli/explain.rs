//! `claude-shim explain`: a dry run of one turn. It shows how the shim reads
//! the invocation and prompt, which pin (if any) matches and why not, and
//! exactly what would be sent — computed by the same stages a turn runs,
//! without running the real claude or taking a lease.

use crate::dialect::Role;
use crate::invocation::{self, Class, InputFormat, Managed, Mode, OutputFormat, Policy};
use crate::prompt::{self, Prompt, SliceChunks};
use crate::turn::lookup::{self, Place};
use crate::turn::plan::{self, How, Plan};
use crate::turn::understand::{self, Understood};
use crate::turn::why::Reason;
use crate::turn::{attempt, Attempt};
use crate::{env, locate};
use anyhow::{Context, Result};
use serde::Serialize;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;

/// `input`: the caller's stdin (a file, or `-`/None for our stdin).
/// `args`: the claude argv to explain (default `-p`).
pub fn run(
    input: Option<&Path>,
    args: Vec<OsString>,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let args = if args.is_empty() {
        vec!["-p".into()]
    } else {
        args
    };
    let report = explain(input, &args)?;
    if as_json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        let width = super::style::terminal_width();
        out.write_all(human(&report, width).as_bytes())?;
    }
    Ok(())
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub argv: Vec<String>,
    pub managed: bool,
    /// Why the call passes straight through (when it does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_through: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    pub prompt_bytes: usize,
    pub dialect: Option<&'static str>,
    /// Which rule recognised the conversation: a dialect, or the earlier
    /// run it continues by content.
    pub rule: Option<String>,
    pub recognised: bool,
    pub why_not_recognised: Option<String>,
    pub preamble: Option<String>,
    pub prior_turns: Vec<TurnView>,
    pub current: Option<String>,
    pub suffix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<crate::probe::Capabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<PinView>,
    pub plan: Option<PlanView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_run_argv: Option<Vec<String>>,
    /// The prompt bytes the turn would hand the CLI (lossy UTF-8 here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_send: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_send_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_error: Option<String>,
    /// What becomes of the session's later messages (stream-json input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub later_messages: Option<String>,
    /// Why the turn would run in a new CLI where it might run in a live one
    /// (a `warm::Refusal`: code and sentence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_cold: Option<ColdView>,
}

#[derive(Debug, Serialize)]
pub struct ColdView {
    pub code: &'static str,
    pub text: &'static str,
}

#[derive(Debug, Serialize)]
pub struct TurnView {
    pub role: &'static str,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct IdentityView {
    pub scope: String,
    /// The node pins are looked up by.
    pub node: String,
    pub cwd: String,
    pub config_dir: String,
    pub cli_version: String,
    /// Session-shaping flags present.
    pub flags: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PinView {
    pub session: String,
    pub at: Option<String>,
    pub file_exists: bool,
    pub is_head: bool,
}

#[derive(Debug, Serialize)]
pub struct PlanView {
    /// `resume` | `fork` | `fresh` | `caller-resume` | `unchanged`
    pub kind: &'static str,
    pub session: Option<String>,
    /// For a fork: the session it branches from, and where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub why: WhyView,
}

#[derive(Debug, Serialize)]
pub struct WhyView {
    pub code: &'static str,
    pub text: String,
}

impl From<Reason> for WhyView {
    fn from(r: Reason) -> WhyView {
        WhyView {
            code: r.code,
            text: r.text,
        }
    }
}

fn read_input(input: Option<&Path>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match input {
        Some(p) if p != Path::new("-") => {
            bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?
        }
        _ => {
            std::io::stdin().read_to_end(&mut bytes)?;
        }
    }
    Ok(bytes)
}

fn lossy(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

pub fn explain(input: Option<&Path>, args: &[OsString]) -> Result<Report> {
    let mut report = Report {
        argv: lossy(args),
        ..Default::default()
    };
    let managed = match invocation::classify(args, Policy::from_env()) {
        Class::PassThrough(reason) => {
            report.pass_through = Some(reason.describe());
            return Ok(report);
        }
        Class::Managed(m) => m,
    };
    report.managed = true;
    report.mode = Some(match managed.mode {
        Mode::Print => "print",
        Mode::Sdk => "agent-sdk",
        Mode::Printed => "print (no -p: stdout is not a terminal)",
    });
    report.input_format = Some(match managed.input {
        InputFormat::Text => "text",
        InputFormat::StreamJson => "stream-json",
    });
    report.output_format = Some(match managed.output {
        OutputFormat::Text => "text",
        OutputFormat::Json => "json",
        OutputFormat::StreamJson => "stream-json",
    });
    report.ephemeral = Some(managed.ephemeral);
    report.runs_cold = env::warm()
        .then(|| crate::warm::refusal(&managed, env::warm_text()))
        .flatten()
        .map(|r| ColdView {
            code: r.code,
            text: r.text,
        });
    // As a turn does: a caller that turned persistence off runs without it.
    let args = match managed.ephemeral {
        true => crate::argv::without(args, &managed.args, "no-session-persistence"),
        false => args.to_vec(),
    };
    let managed = Managed {
        args: crate::argv::parse(&args).unwrap_or(managed.args.clone()),
        ..managed
    };
    let prompt = prompt_of(&managed, input)?;
    report.prompt_bytes = prompt.len();
    report.later_messages = later_messages(&managed, &prompt);
    let Some(u) = understand::understand(&prompt) else {
        report.plan = Some(PlanView {
            kind: "unchanged",
            session: None,
            from: None,
            at: None,
            why: match &prompt {
                Prompt::None { .. } if !prompt.is_empty() => {
                    Reason::no_user_message(prompt::CONTROL_PATIENCE.as_millis() as u64)
                }
                _ => Reason::not_text(),
            }
            .into(),
        });
        return Ok(report);
    };
    let looked = lookup_plan(&managed, u, prompt.text().as_deref());
    match looked {
        Ok((place, u, found, caps, plan)) => {
            describe_conversation(&mut report, &u);
            let send_preamble = env::preamble_keep() || found.preamble_changed;
            let a = attempt::attempt(&plan, &u.conv, send_preamble, &prompt, &args, managed.input);
            report.identity = Some(IdentityView {
                scope: found.scope.to_string(),
                node: found.node.to_string(),
                cwd: place.cwd.clone(),
                config_dir: place.config_dir.to_string_lossy().into_owned(),
                cli_version: caps.version.clone(),
                flags: found.parts.flags.keys().cloned().collect(),
            });
            report.capabilities = Some(caps);
            report.pin = found.candidate.as_ref().ok().map(|c| PinView {
                session: c.session.clone(),
                at: c.at.clone(),
                file_exists: c.file_exists,
                is_head: c.is_head,
            });
            report.plan = Some(plan_view(&plan, Reason::of(&plan, found.busy)));
            sent(&mut report, &a, &prompt);
        }
        Err(failed) => {
            let (e, u) = *failed;
            describe_conversation(&mut report, &u);
            report.store_error = Some(format!("{e:#}"));
            report.plan = Some(PlanView {
                kind: "unchanged",
                session: None,
                from: None,
                at: None,
                why: Reason::store_unavailable(&format!("{e:#}")).into(),
            });
        }
    }
    Ok(report)
}

/// For a stream-json session: whether its later messages that re-send the
/// transcript would go as their new part only (see `crate::resend`).
fn later_messages(m: &Managed, prompt: &Prompt) -> Option<String> {
    let Prompt::StreamJson { line, more, .. } = prompt else {
        return None;
    };
    if crate::env::resend_kept() {
        return Some(format!("passed whole ({}=keep)", crate::env::RESEND));
    }
    Some(
        match (
            crate::resend::armed(m),
            crate::resend::starts(line, more.is_empty()),
        ) {
            (true, true) => "a later message that re-sends this session's transcript exactly \
                             (this message, a label, the reply, something new) goes as its \
                             new part only; `claude-shim log` counts them"
                .into(),
            (false, _) => "passed whole (cutting a re-sent transcript needs stream-json \
                           output, without --replay-user-messages)"
                .into(),
            (true, false) => "passed whole (the first message is not one text)".into(),
        },
    )
}

fn describe_conversation(report: &mut Report, u: &Understood) {
    let conv = &u.conv;
    report.recognised = u.unrecognised.is_none();
    report.dialect = report.recognised.then_some(conv.dialect);
    report.rule = report.recognised.then(|| conv.rule());
    report.why_not_recognised = u.unrecognised.clone();
    report.preamble = conv.preamble.as_deref().map(preview);
    report.prior_turns = conv
        .prior
        .iter()
        .map(|t| TurnView {
            role: match t.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
            text: preview(&t.text),
        })
        .collect();
    report.current = Some(preview(&conv.current));
    report.suffix = conv.suffix.clone();
}

fn sent(report: &mut Report, a: &Attempt, prompt: &Prompt) {
    let bytes = a.prompt_bytes(prompt);
    report.would_run_argv = Some(lossy(&a.args));
    report.would_send_bytes = Some(bytes.len());
    report.would_send = Some(String::from_utf8_lossy(&bytes).into_owned());
}

fn plan_view(plan: &Plan, why: Reason) -> PlanView {
    let (kind, session, from, at) = match plan {
        Plan::Resume {
            session,
            how: How::InPlace,
        } => ("resume", Some(session.clone()), None, None),
        Plan::Resume {
            session,
            how: How::ForkAt { at, new },
        } => (
            "fork",
            Some(new.clone()),
            Some(session.clone()),
            Some(at.clone()),
        ),
        Plan::Resume {
            session,
            how: How::ForkHead { new },
        } => ("fork", Some(new.clone()), Some(session.clone()), None),
        Plan::Fresh { session, .. } => ("fresh", Some(session.clone()), None, None),
        Plan::Caller { session } => ("caller-resume", Some(session.clone()), None, None),
        Plan::AsIs { .. } => ("unchanged", None, None, None),
        Plan::Continue { session, .. } => ("continue", Some(session.clone()), None, None),
    };
    PlanView {
        kind,
        session,
        from,
        at,
        why: why.into(),
    }
}

/// The prompt as the shim would read it, with `input` as the caller's stdin.
fn prompt_of(m: &Managed, input: Option<&Path>) -> Result<Prompt> {
    if m.input == InputFormat::StreamJson {
        let bytes = read_input(input)?;
        return Ok(prompt::read_stream_json(&mut SliceChunks(&bytes))?);
    }
    if let Some((index, text)) = prompt::positional(&m.args) {
        return Ok(Prompt::Positional { index, text });
    }
    Ok(Prompt::Stdin {
        bytes: read_input(input)?.into(),
    })
}

type Looked = (
    Place,
    Understood,
    lookup::Found,
    crate::probe::Capabilities,
    Plan,
);

/// As a turn looks: by content too, then the pin and the plan. On failure,
/// the conversation as understood without the store.
fn lookup_plan(
    m: &Managed,
    u: Understood,
    text: Option<&str>,
) -> std::result::Result<Looked, Box<(anyhow::Error, Understood)>> {
    let place = match Place::here() {
        Ok(p) => p,
        Err(e) => return Err(Box::new((e, u))),
    };
    let caps = match locate::real_claude(Path::new("claude-shim"))
        .map_err(anyhow::Error::from)
        .and_then(|real| {
            let guard = format!("1:{}", std::process::id());
            place.capabilities(&real, &guard)
        }) {
        Ok(c) => c,
        Err(e) => return Err(Box::new((e, u))),
    };
    let (u, found) = match crate::turn::content::look(
        &place,
        &m.args,
        &caps,
        text,
        u.clone(),
        lookup::Mode::DryRun,
    ) {
        Ok(looked) => looked,
        Err(e) => return Err(Box::new((e, u))),
    };
    // As a turn decides it (`turn::managed`).
    let positional = m.input == crate::invocation::InputFormat::Text
        && crate::prompt::positional(&m.args).is_some();
    let send_preamble = env::preamble_keep() || found.preamble_changed;
    let delta = crate::turn::attempt::delta(&u.conv, send_preamble);
    let candidate = match plan::runs_a_subcommand(m.mode, positional, delta) {
        Some(miss) => Err(miss),
        None => found.candidate.clone(),
    };
    let plan = plan::plan(plan::Facts {
        caller_session: m.caller_resume.clone(),
        forced_fresh: env::fresh(),
        candidate,
        caps: caps.clone(),
        new_id: "<new session id>".into(),
        max_compactions: env::max_compactions(),
        interrupted: None,
    });
    Ok((place, u, found, caps, plan))
}

fn preview(text: &str) -> String {
    const MAX: usize = 160;
    let one_line = text.replace('\n', "⏎");
    if one_line.chars().count() <= MAX {
        one_line
    } else {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("{cut}… ({} chars)", text.chars().count())
    }
}

/// The report for people; the reason a plan was chosen wraps to `width`
/// columns under its label (`None`: a pipe, one line).
fn human(r: &Report, width: Option<usize>) -> String {
    let mut out = format!("argv:      {}\n", shell_words(&r.argv));
    if let Some(why) = &r.pass_through {
        out.push_str(&format!(
            "pass-through: {why}\n           the real claude runs with the same argv and streams\n"
        ));
        return out;
    }
    out.push_str(&format!(
        "mode:      {} (input {}, output {}), prompt {} bytes{}\n",
        r.mode.unwrap_or("-"),
        r.input_format.unwrap_or("-"),
        r.output_format.unwrap_or("-"),
        r.prompt_bytes,
        if r.ephemeral == Some(true) {
            "; persistence off (the shim owns the session)"
        } else {
            ""
        }
    ));
    match (&r.dialect, &r.why_not_recognised) {
        (Some(_), _) => out.push_str(&format!(
            "dialect:   {}\n",
            r.rule
                .as_deref()
                .unwrap_or("-")
                .trim_start_matches("dialect ")
        )),
        (None, Some(why)) => out.push_str(&format!("dialect:   none ({why})\n")),
        (None, None) => {}
    }
    if let Some(p) = &r.preamble {
        out.push_str(&format!("preamble:  {p}\n"));
    }
    for t in &r.prior_turns {
        out.push_str(&format!("  {:<9} {}\n", t.role, t.text));
    }
    if let Some(c) = &r.current {
        out.push_str(&format!("current:   {c}\n"));
    }
    if let Some(e) = &r.store_error {
        out.push_str(&format!("store:     {e}\n"));
    }
    if let Some(id) = &r.identity {
        let flags = if id.flags.is_empty() {
            "no session-shaping flags".to_owned()
        } else {
            id.flags
                .iter()
                .map(|f| format!("--{f}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push_str(&format!(
            "identity:  {} · Claude Code {} · {} · {flags}\n",
            id.cwd, id.cli_version, id.config_dir
        ));
    }
    if let Some(pin) = &r.pin {
        out.push_str(&format!(
            "pin:       session {} at {} (file {}, {})\n",
            pin.session,
            pin.at.as_deref().unwrap_or("?"),
            if pin.file_exists {
                "present"
            } else {
                "missing"
            },
            if pin.is_head {
                "its latest point"
            } else {
                "behind its latest point"
            }
        ));
    }
    if let Some(plan) = &r.plan {
        let what = match (plan.kind, &plan.session, &plan.from) {
            ("fork", Some(new), Some(from)) => format!("fork {from} into {new}"),
            (kind, Some(s), _) => format!("{kind} {s}"),
            (kind, None, _) => kind.to_owned(),
        };
        out.push_str(&format!("plan:      {what}\n"));
        let why = format!("{} ({})", plan.why.text, plan.why.code);
        for l in super::human::hanging("why:       ", &why, width) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    if let Some(cold) = &r.runs_cold {
        let why = format!("{} ({})", cold.text, cold.code);
        for l in super::human::hanging("cold:      ", &why, width) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    if let Some(argv) = &r.would_run_argv {
        out.push_str(&format!("would run: claude {}\n", shell_words(argv)));
    }
    if let (Some(bytes), Some(text)) = (r.would_send_bytes, &r.would_send) {
        out.push_str(&format!("would send ({bytes} bytes):\n{text}\n"));
    }
    if let Some(later) = &r.later_messages {
        for l in super::human::hanging("later:     ", later, width) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// argv as a person would type it (quoted where needed).
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| crate::text::quote::posix(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_report_of_a_pass_through_has_no_debug_formatting() {
        let r = Report {
            argv: vec!["--version".into()],
            pass_through: Some("--version".into()),
            ..Default::default()
        };
        let text = human(&r, None);
        assert!(text.contains("pass-through: --version"), "{text}");
        let r = Report {
            argv: vec!["-p".into(), "a b".into()],
            managed: true,
            plan: Some(plan_view(
                &Plan::Fresh {
                    session: "N".into(),
                    why: plan::Why::Missed(plan::PinMiss::NoHistory),
                },
                Reason::from_miss(&plan::PinMiss::NoHistory),
            )),
            ..Default::default()
        };
        let text = human(&r, None);
        assert!(text.contains("argv:      -p 'a b'"), "{text}");
        assert!(text.contains("plan:      fresh N"), "{text}");
        assert!(text.contains("(first-turn)"), "{text}");
        for debug in ["Fresh {", "Missed(", "Some(", "\"]"] {
            assert!(!text.contains(debug), "{text}");
        }
    }

    #[test]
    fn the_why_line_wraps_under_its_label() {
        let miss = plan::PinMiss::NoHistory;
        let r = Report {
            argv: vec!["-p".into()],
            managed: true,
            plan: Some(plan_view(
                &Plan::Fresh {
                    session: "N".into(),
                    why: plan::Why::Missed(miss.clone()),
                },
                Reason::from_miss(&miss),
            )),
            ..Default::default()
        };
        let text = human(&r, Some(40));
        let why: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("why:"))
            .take_while(|l| l.starts_with("why:") || l.starts_with("    "))
            .collect();
        assert!(why.len() > 1, "{text}");
        for l in &why[1..] {
            assert!(l.starts_with(&" ".repeat(11)), "{text}");
        }
        assert!(why.iter().all(|l| l.chars().count() <= 40), "{text}");
    }

    #[test]
    fn a_turn_that_runs_cold_says_why() {
        let r = Report {
            argv: vec!["-p".into()],
            managed: true,
            runs_cold: Some(ColdView {
                code: crate::warm::SINGLE_SHOT.code,
                text: crate::warm::SINGLE_SHOT.text,
            }),
            ..Default::default()
        };
        let text = human(&r, Some(200));
        assert!(
            text.lines()
                .any(|l| l.starts_with("cold:") && l.contains("single-shot")),
            "{text}"
        );
    }

    #[test]
    fn later_messages_of_a_stream_json_session() {
        let managed = |args: &[&str]| {
            let args: Vec<OsString> = args.iter().map(OsString::from).collect();
            match invocation::classify(&args, Policy::default()) {
                Class::Managed(m) => m,
                Class::PassThrough(r) => panic!("{}", r.describe()),
            }
        };
        let sdk = ["-p", "--input-format", "stream-json", "--output-format"];
        let line = |content: &str| {
            format!(
                "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":{content}}}}}\n"
            )
            .into_bytes()
        };
        let stream = |content: &str| Prompt::StreamJson {
            before: Vec::new(),
            line: line(content),
            text: None,
            more: Vec::new(),
            after: Vec::new(),
        };
        let json = managed(&[&sdk[..], &["stream-json", "--verbose"]].concat());
        let said = |m: &Managed, p: &Prompt| later_messages(m, p).unwrap_or_default();
        assert!(said(&json, &stream("\"u1\"")).contains("new part only"));
        let image = stream(r#"[{"type":"image","source":{}}]"#);
        assert!(said(&json, &image).starts_with("passed whole"));
        let echo = managed(
            &[
                &sdk[..],
                &["stream-json", "--verbose", "--replay-user-messages"],
            ]
            .concat(),
        );
        assert!(said(&echo, &stream("\"u1\"")).starts_with("passed whole"));
        let text = Prompt::Positional {
            index: 1,
            text: "u1".into(),
        };
        assert_eq!(later_messages(&managed(&["-p", "u1"]), &text), None);
    }

    #[test]
    fn preview_is_one_line_and_bounded() {
        assert_eq!(preview("a\nb"), "a⏎b");
        let long = "x".repeat(500);
        assert!(preview(&long).ends_with("… (500 chars)"));
    }
}
