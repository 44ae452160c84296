//! Calls without `-p` from a program (issue 39, item 1). The real CLI prints
//! when its stdout is not a terminal, with or without `-p` (2.1.302 to
//! 2.1.332 alike, whatever stdin is): `claude --model M PROMPT` run by a
//! plugin answers and exits. The shim used to pass every such call through,
//! so a client replaying its transcript this way never resumed (0 of 4
//! turns). It now manages them as print calls; at a terminal they stay the
//! interactive UI, passed through.

use crate::support::clients::labels;
use crate::support::process::{describe, run};
use crate::support::turns::mask_uuids;
use crate::support::World;
use serde_json::Value;

fn world() -> World {
    let w = World::warm(false);
    // The same reply to the same message, whoever asks.
    w.server
        .set_reply(|req| format!("the answer to {}", req.last_user_text().unwrap_or_default()));
    w
}

/// `claude [ARGS] PROMPT` without `-p` through the shim, stdin empty.
fn call(w: &World, args: &[&str], prompt: &str) -> crate::support::Ran {
    let mut all = args.to_vec();
    all.push(prompt);
    run(w.sb.shimmed(&all), b"")
}

fn converse(args: &[&str], reply_of: impl Fn(&[u8]) -> String) {
    let mut w = world();
    let messages = ["Question one.", "Question two.", "Question three."];
    for (i, msg) in messages.iter().enumerate() {
        let prompt = labels(&w.history, msg, "Human", "\n\n");
        if i == 0 {
            // What a program gets directly, it gets through the shim.
            let mut all = args.to_vec();
            all.push(&prompt);
            let direct = run(w.sb.direct(&all), b"");
            let through = call(&w, args, &prompt);
            assert_eq!(
                through.status.code(),
                direct.status.code(),
                "{}",
                describe(&through)
            );
            assert_eq!(shape(&through.stdout), shape(&direct.stdout));
            assert_eq!(through.stderr, direct.stderr);
            w.history.push((msg.to_string(), reply_of(&through.stdout)));
            continue;
        }
        w.server.clear_log();
        let out = call(&w, args, &prompt);
        assert!(out.status.success(), "{}\n{}", describe(&out), w.log());
        let users = w.server.last_main().expect("a request").user_texts();
        assert_eq!(
            users.iter().filter(|t| t.contains("Question one.")).count(),
            1,
            "{users:?}"
        );
        w.history.push((msg.to_string(), reply_of(&out.stdout)));
    }
    let why: Vec<String> = w.runs().into_iter().map(|r| r.why_code).collect();
    assert_eq!(why, ["first-turn", "resumed", "resumed"], "{}", w.log());
    // An edited history is another conversation: fresh, with all of it.
    let mut edited = w.history.clone();
    edited[0].1 = "an answer the shim never saw".to_owned();
    let prompt = labels(&edited, "Question four.", "Human", "\n\n");
    let out = call(&w, args, &prompt);
    assert!(out.status.success(), "{}", describe(&out));
    assert_ne!(
        w.runs().last().map(|r| r.kind.as_str()),
        Some("resumed"),
        "{}",
        w.log()
    );
    w.assert_no_shim_errors();
}

/// Output as two runs can agree on it: text as it is; a JSON result's keys,
/// and its values but the figures (timings, and the tokens the server's
/// prompt cache splits by who asked first), ids masked.
fn shape(out: &[u8]) -> String {
    let Ok(mut v) = serde_json::from_slice::<Value>(out) else {
        return mask_uuids(out);
    };
    fn figures(v: &mut Value) {
        match v {
            Value::Number(_) => *v = Value::from(0),
            Value::Object(m) => m.values_mut().for_each(figures),
            Value::Array(a) => a.iter_mut().for_each(figures),
            _ => {}
        }
    }
    figures(&mut v);
    mask_uuids(v.to_string().as_bytes())
}

#[test]
fn a_transcript_replayed_without_p_resumes_in_text() {
    converse(&[], |out| String::from_utf8_lossy(out).trim().to_owned());
}

#[test]
fn a_transcript_replayed_without_p_resumes_in_json() {
    converse(
        &["--output-format", "json", "--model", "claude-sonnet-4-5"],
        |out| {
            let v: Value = serde_json::from_slice(out).expect("json result");
            v["result"].as_str().expect("result text").to_owned()
        },
    );
}

/// A positional transcript whose new part starts with `-` (a client that puts
/// `---` between messages): sent as it is, the real CLI would read it as an
/// unknown option (`error: unknown option '---…'`). The shim puts it after a
/// `--`, so each turn resumes and the model gets each message once — with and
/// without `-p`.
#[test]
fn a_new_part_that_starts_with_a_dash_is_still_the_prompt() {
    for print in [true, false] {
        let mut w = world();
        let mut turns: Vec<String> = Vec::new();
        for k in 1..=3 {
            let mut parts = vec!["Rules: be brief.".to_owned()];
            for (u, a) in &w.history {
                parts.push(u.clone());
                parts.push(format!("Assistant: {a}"));
            }
            parts.push(format!("Question {k}."));
            let prompt = parts.join("\n---\n");
            let args: &[&str] = if print { &["-p"] } else { &[] };
            let out = call(&w, args, &prompt);
            assert!(
                out.status.success(),
                "print {print}, turn {k}: {}\n{}",
                describe(&out),
                w.log()
            );
            assert!(out.stderr.is_empty(), "{}", describe(&out));
            let users = w.server.last_main().expect("a request").user_texts();
            assert_eq!(
                users.iter().filter(|t| t.contains("Question 1.")).count(),
                1,
                "print {print}, turn {k}: {users:?}"
            );
            w.history.push((
                format!("Question {k}."),
                String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            ));
            turns.push(users.last().cloned().unwrap_or_default());
        }
        let kinds: Vec<String> = w.runs().into_iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            ["fresh", "resumed", "resumed"],
            "print {print}: {}",
            w.log()
        );
        assert!(
            turns[1].starts_with('-'),
            "the new part starts with a dash: {turns:?}"
        );
        w.assert_no_shim_errors();
    }
}

/// A resumed turn without `-p` whose new message is one word naming a
/// subcommand (issue 50, finding 1): sent alone as the positional prompt,
/// `claude --resume S doctor` runs the CLI's doctor (exit 0, no request), and
/// `help`, `mcp`… exit non-zero (taken for a refused resume, rerun fresh
/// after the subcommand ran). Directly the whole transcript is the prompt and
/// the model answers. The shim now runs such a turn fresh with the caller's
/// argv: the same bytes, status and request as the direct call.
#[test]
fn a_new_message_that_names_a_subcommand_stays_a_prompt() {
    for word in ["doctor", "mcp", "help", "sandbox"] {
        let mut w = world();
        let first = labels(&w.history, "Question one.", "Human", "\n\n");
        let out = call(&w, &[], &first);
        assert!(out.status.success(), "{word}: {}", describe(&out));
        w.history.push((
            "Question one.".into(),
            String::from_utf8_lossy(&out.stdout).trim().into(),
        ));
        let prompt = labels(&w.history, word, "Human", "\n\n");
        w.server.clear_log();
        let direct = run(w.sb.direct([&prompt]), b"");
        let asked_directly = w.server.main_requests();
        w.server.clear_log();
        let through = call(&w, &[], &prompt);
        let asked_through = w.server.main_requests();
        assert_eq!(
            through.status.code(),
            direct.status.code(),
            "{word}: {}\n{}",
            describe(&through),
            w.log()
        );
        assert_eq!(
            mask_uuids(&through.stdout),
            mask_uuids(&direct.stdout),
            "{word}"
        );
        assert_eq!(through.stderr, direct.stderr, "{word}");
        assert!(
            String::from_utf8_lossy(&direct.stdout).contains("the answer to"),
            "{word}: the model answered directly: {}",
            describe(&direct)
        );
        // The model was asked the same: once, the whole transcript.
        assert_eq!(asked_through.len(), 1, "{word}: {}", w.log());
        assert_eq!(
            asked_through[0].user_texts(),
            asked_directly[0].user_texts(),
            "{word}"
        );
        let runs = w.runs();
        let last = runs.last().expect("a run");
        assert_eq!(
            (last.kind.as_str(), last.why_code.as_str()),
            ("fresh", "subcommand-word"),
            "{word}: {}",
            w.log()
        );
        assert_eq!(runs.len(), 2, "{word}: no fallback: {}", w.log());
        w.assert_no_shim_errors();
    }
}

/// `claude -- doctor` and hidden subcommands (`claude sandbox`) run the
/// subcommand without `-p`: passed through, never a turn.
#[test]
fn hidden_subcommands_and_dashdash_pass_through_uncounted() {
    let w = world();
    for args in [
        &["--", "doctor"][..],
        &["sandbox"],
        &["--model", "m", "--", "doctor"],
    ] {
        let direct = run(w.sb.direct(args), b"");
        let through = run(w.sb.shimmed(args), b"");
        assert_eq!(through.status.code(), direct.status.code(), "{args:?}");
        assert_eq!(
            through.stderr.is_empty(),
            direct.stderr.is_empty(),
            "{args:?}"
        );
    }
    assert!(
        w.runs().is_empty(),
        "subcommands are not turns: {}",
        w.log()
    );
    assert!(w.server.main_requests().is_empty());
}
