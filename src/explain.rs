//! `claude-shim explain`: a dry run of one turn. It shows how the shim reads
//! the invocation and prompt, which pin (if any) matches and why not, and
//! exactly what would be sent — without running the real claude or taking
//! a lease.

use crate::decide::{self, Gathered};
use crate::dialect::{Detection, Role};
use crate::invocation::{self, Class, InputFormat, Managed};
use crate::plan::{self, Plan};
use crate::prompt::{self, Prompt, SliceChunks};
use crate::{env, locate};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;

/// `input`: the caller's stdin (a file, or `-`/None for our stdin).
/// `args`: the claude argv to explain (default `-p`).
pub fn run(input: Option<&Path>, args: Vec<OsString>, as_json: bool) -> Result<i32> {
    let args = if args.is_empty() {
        vec!["-p".into()]
    } else {
        args
    };
    let report = explain(input, &args)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", human(&report));
    }
    Ok(0)
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

fn explain(input: Option<&Path>, args: &[OsString]) -> Result<Value> {
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let managed = match invocation::classify(args, env::bypass()) {
        Class::PassThrough(reason) => {
            return Ok(json!({
                "argv": argv,
                "managed": false,
                "pass_through": reason.describe(),
                "would_run": "the real claude, exec'd with the same argv and streams",
            }))
        }
        Class::Managed(m) => m,
    };
    let prompt = prompt_of(&managed, input)?;
    let Some((detection, conv)) = decide::understand(&prompt) else {
        return Ok(json!({
            "argv": argv,
            "managed": true,
            "prompt_bytes": prompt.len(),
            "dialect": null,
            "why": "the prompt is not text the shim can read (binary, several text blocks, or no user message); it runs unchanged",
        }));
    };
    let turns: Vec<Value> = conv
        .prior
        .iter()
        .map(|t| json!({"role": if t.role == Role::User {"user"} else {"assistant"}, "text": preview(&t.text)}))
        .collect();
    let mut report = json!({
        "argv": argv,
        "managed": true,
        "mode": format!("{:?}", managed.mode),
        "input_format": format!("{:?}", managed.input),
        "output_format": format!("{:?}", managed.output),
        "prompt_bytes": prompt.len(),
        "dialect": conv.dialect,
        "recognised": matches!(detection, Detection::Recognised(_)),
        "why_not_recognised": match &detection { Detection::Unrecognised(why) => json!(why), _ => Value::Null },
        "preamble": conv.preamble.as_deref().map(preview),
        "prior_turns": turns,
        "current": preview(&conv.current),
        "suffix": conv.suffix,
    });
    match lookup(&managed, (detection, conv.clone())) {
        Ok((g, plan)) => {
            let send_preamble = env::preamble_keep() || g.preamble_changed;
            let sent = match &plan {
                Plan::Resume { .. } | Plan::Caller { .. } => {
                    crate::rewrite::delta(&conv, send_preamble)
                }
                _ => String::from_utf8_lossy(&original_bytes(&prompt)).into_owned(),
            };
            let extra = report.as_object_mut().context("report is an object")?;
            extra.insert("scope".into(), json!(g.scope));
            extra.insert("capabilities".into(), json!({
                "version": g.caps.version, "resume": g.caps.resume, "fork_session": g.caps.fork_session,
                "session_id": g.caps.session_id, "resume_session_at": g.caps.resume_session_at,
            }));
            extra.insert("pin".into(), match &g.candidate {
                Ok(c) => json!({"session": c.session, "at": c.at, "file_exists": c.file_exists, "is_head": c.is_head}),
                Err(miss) => json!({"miss": format!("{miss:?}"), "why": miss_text(miss)}),
            });
            extra.insert("plan".into(), json!(format!("{plan:?}")));
            let new_args: Vec<String> = crate::rewrite::argv(&plan, args)
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            extra.insert("would_run_argv".into(), json!(new_args));
            extra.insert("would_send".into(), json!(sent));
            extra.insert("would_send_bytes".into(), json!(sent.len()));
        }
        Err(e) => {
            let extra = report.as_object_mut().context("report is an object")?;
            extra.insert("store_error".into(), json!(format!("{e:#}")));
            extra.insert(
                "plan".into(),
                json!("run unchanged (the shim bypasses itself)"),
            );
        }
    }
    Ok(report)
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
        bytes: read_input(input)?,
    })
}

fn original_bytes(p: &Prompt) -> Vec<u8> {
    match p {
        Prompt::Positional { text, .. } => text.clone().into_bytes(),
        Prompt::Stdin { bytes } | Prompt::None { bytes, .. } => bytes.clone(),
        Prompt::StreamJson { line, more, .. } => [&line[..], &more.concat()].concat(),
    }
}

fn lookup(
    m: &Managed,
    understood: (Detection, crate::dialect::Conversation),
) -> Result<(Gathered, Plan)> {
    let decide::Place {
        mut store,
        config_dir,
        cwd,
    } = decide::Place::here()?;
    let real = locate::real_claude(Path::new("claude-shim"))?;
    let guard = format!("1:{}", std::process::id());
    let g = decide::gather(
        &mut store,
        &real,
        m,
        understood,
        &config_dir,
        &cwd,
        &guard,
        false,
    )?;
    // Without a lease, an in-place resume shows as possible when the node is the head.
    let candidate = g.candidate.clone().map(|mut c| {
        c.leased = c.is_head;
        c
    });
    let plan = plan::plan(decide::facts(
        m,
        &g.caps,
        candidate,
        "<new session id>".into(),
    ));
    Ok((g, plan))
}

fn miss_text(miss: &plan::Miss) -> &'static str {
    match miss {
        plan::Miss::NoHistory => "no earlier turns in the prompt: a first turn runs fresh and is pinned",
        plan::Miss::NoPin => "the shim has not seen these user turns in this scope (cwd, config dir, binary, session-shaping flags)",
        plan::Miss::ReplyDiffers => "pins exist for these user turns, but none holds the last assistant turn as the caller sent it (edited, truncated, or never received)",
        plan::Miss::BadSessionId => "the pinned session id is not a UUID",
    }
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

fn human(r: &Value) -> String {
    let s = |k: &str| match &r[k] {
        Value::String(v) => v.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    };
    let mut out = format!("argv:      {}\n", s("argv"));
    if r["managed"] == json!(false) {
        out.push_str(&format!("pass-through: {}\n", s("pass_through")));
        return out;
    }
    out.push_str(&format!(
        "mode:      {} (input {}, output {}), prompt {} bytes\n",
        s("mode"),
        s("input_format"),
        s("output_format"),
        s("prompt_bytes")
    ));
    out.push_str(&format!("dialect:   {}", s("dialect")));
    if let Some(why) = r["why_not_recognised"].as_str() {
        out.push_str(&format!(" (not recognised: {why})"));
    }
    out.push('\n');
    if let Some(why) = r["why"].as_str() {
        out.push_str(&format!("note:      {why}\n"));
        return out;
    }
    if let Some(p) = r["preamble"].as_str() {
        out.push_str(&format!("preamble:  {p}\n"));
    }
    for t in r["prior_turns"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  {:<9} {}\n",
            t["role"].as_str().unwrap_or(""),
            t["text"].as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!("current:   {}\n", s("current")));
    if let Some(e) = r["store_error"].as_str() {
        out.push_str(&format!("store:     {e}\nplan:      {}\n", s("plan")));
        return out;
    }
    out.push_str(&format!("scope:     {}\n", s("scope")));
    let pin = &r["pin"];
    match pin["session"].as_str() {
        Some(session) => out.push_str(&format!(
            "pin:       session {session} at {} (file {}, head {})\n",
            pin["at"].as_str().unwrap_or("?"),
            if pin["file_exists"] == json!(true) {
                "present"
            } else {
                "MISSING"
            },
            pin["is_head"]
        )),
        None => out.push_str(&format!(
            "pin:       none — {}\n",
            pin["why"].as_str().unwrap_or("")
        )),
    }
    out.push_str(&format!("plan:      {}\n", s("plan")));
    out.push_str(&format!("would run: claude {}\n", s("would_run_argv")));
    out.push_str(&format!(
        "would send ({} bytes):\n{}\n",
        s("would_send_bytes"),
        s("would_send")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_report_of_a_pass_through() {
        let r = json!({"argv": ["--version"], "managed": false, "pass_through": "--version"});
        assert!(human(&r).contains("pass-through: --version"));
    }

    #[test]
    fn preview_is_one_line_and_bounded() {
        assert_eq!(preview("a\nb"), "a⏎b");
        let long = "x".repeat(500);
        assert!(preview(&long).ends_with("… (500 chars)"));
    }
}
