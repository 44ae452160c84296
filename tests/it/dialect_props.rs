//! Property tests: conversations rendered the way each real client renders
//! them parse back to the same turns; hostile input never panics and never
//! yields a resumable conversation by accident.

use claude_shim::dialect::{detect, Detection, Role};
use proptest::prelude::*;
use serde_json::json;

/// A message body: words and punctuation, possibly several lines, never
/// starting a line with something that reads as a role marker.
fn body() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9][a-z0-9 ,.?!']{0,30}", 1..4).prop_map(|lines| lines.join("\n"))
}

#[derive(Debug, Clone)]
struct Conv {
    preamble: Option<String>,
    /// (user, assistant) pairs before the current message.
    pairs: Vec<(String, String)>,
    current: String,
}

fn conv() -> impl Strategy<Value = Conv> {
    (
        prop::option::of(body()),
        prop::collection::vec((body(), body()), 1..6),
        body(),
    )
        .prop_map(|(preamble, pairs, current)| Conv {
            preamble,
            pairs,
            current,
        })
}

fn labels(c: &Conv, user: &str, join: &str, system: bool, cue: bool) -> String {
    let mut parts = Vec::new();
    if system {
        if let Some(p) = &c.preamble {
            parts.push(format!("System: {}", p.replace('\n', " ")));
        }
    }
    for (u, a) in &c.pairs {
        parts.push(format!("{user}: {u}"));
        parts.push(format!("Assistant: {a}"));
    }
    parts.push(format!("{user}: {}", c.current));
    if cue {
        parts.push("Assistant:".into());
    }
    parts.join(join)
}

fn markdown(c: &Conv) -> String {
    let instructions = c.preamble.clone().unwrap_or_else(|| "be helpful".into());
    let mut msgs = Vec::new();
    for (u, a) in &c.pairs {
        msgs.push(format!("## user\n{u}"));
        msgs.push(format!("## assistant\n{a}"));
    }
    msgs.push(format!("## user\n{}", c.current));
    format!(
        "# Instructions (read first)\n\n{instructions}\n\n---\n# User request\n\n{}",
        msgs.join("\n\n")
    )
}

fn xml(c: &Conv) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &c.preamble {
        parts.push(format!("<system>\n{p}\n</system>\n"));
    }
    for (u, a) in &c.pairs {
        parts.push(u.clone());
        parts.push(format!("<previous_response>\n{a}\n</previous_response>\n"));
    }
    parts.push(c.current.clone());
    parts.join("\n").trim().to_owned()
}

fn json_array(c: &Conv, roo: bool) -> String {
    let mut msgs = Vec::new();
    for (u, a) in &c.pairs {
        msgs.push(json!({"role": "user", "content": [{"type": "text", "text": u}]}));
        msgs.push(json!({"role": "assistant", "content": a}));
    }
    msgs.push(json!({"role": "user", "content": c.current}));
    if roo {
        json!({"systemPrompt": c.preamble.clone().unwrap_or_default(), "messages": msgs})
            .to_string()
    } else {
        serde_json::to_string(&msgs).unwrap()
    }
}

fn check(text: &str, want_dialect: &str, c: &Conv) -> Result<(), TestCaseError> {
    let Detection::Recognised(got) = detect(text, None) else {
        return Err(TestCaseError::fail(format!("not recognised: {text:?}")));
    };
    prop_assert_eq!(got.dialect, want_dialect);
    // Text dialects trim bodies; JSON keeps them exactly (hashing trims).
    let users: Vec<&str> = got.prior_user_turns().map(str::trim).collect();
    let want_users: Vec<&str> = c.pairs.iter().map(|(u, _)| u.trim()).collect();
    prop_assert_eq!(users, want_users);
    let assistants: Vec<&str> = got
        .prior
        .iter()
        .filter(|t| t.role == Role::Assistant)
        .map(|t| t.text.trim())
        .collect();
    let want_assistants: Vec<&str> = c.pairs.iter().map(|(_, a)| a.trim()).collect();
    prop_assert_eq!(assistants, want_assistants);
    prop_assert_eq!(got.current.trim(), c.current.trim());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_dialect_round_trips(c in conv()) {
        check(&labels(&c, "Human", "\n\n", false, false), "human-assistant", &c)?;
        check(&labels(&c, "Human", "\n", true, true), "human-assistant", &c)?;
        check(&labels(&c, "User", "\n\n", false, false), "user-assistant", &c)?;
        check(&markdown(&c), "markdown", &c)?;
        check(&xml(&c), "xml", &c)?;
        check(&json_array(&c, false), "json", &c)?;
        check(&json_array(&c, true), "json", &c)?;
    }

    #[test]
    fn hostile_text_never_panics(s in "\\PC{0,400}") {
        let _ = detect(&s, None);
        for name in ["human-assistant", "user-assistant", "markdown", "xml", "json", "generic"] {
            let _ = detect(&s, Some(name));
        }
    }

    #[test]
    fn marker_soup_never_panics(parts in prop::collection::vec(prop_oneof![
        Just("Human:"), Just("Assistant:"), Just("User:"), Just("## user"), Just("## assistant"),
        Just("<previous_response>"), Just("</previous_response>"), Just("<system>"), Just("</system>"),
        Just("[User]"), Just("**AI:**"), Just("\n"), Just("\r\n"), Just(" x "), Just("["), Just("{"),
        Just("\\## user"), Just("\u{0}"), Just("é"),
    ], 0..60)) {
        let s: String = parts.concat();
        if let Detection::Recognised(c) = detect(&s, None) {
            // Whatever was recognised is internally consistent.
            prop_assert!(c.alternates());
        }
    }

    #[test]
    fn argv_parser_never_panics(args in prop::collection::vec(prop_oneof![
        Just("-p".to_string()), Just("--".to_string()), Just("-".to_string()),
        Just("--resume".to_string()), Just("-r".to_string()), Just("--allowedTools".to_string()),
        Just("--model=x".to_string()), Just("-pc".to_string()), Just("--debug".to_string()),
        "[-a-zA-Z=]{0,12}", "\\PC{0,8}",
    ], 0..12)) {
        let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let _ = claude_shim::invocation::classify(&os, Default::default());
    }

    #[test]
    fn observer_never_panics(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..16)) {
        for format in [
            claude_shim::invocation::OutputFormat::Text,
            claude_shim::invocation::OutputFormat::Json,
            claude_shim::invocation::OutputFormat::StreamJson,
        ] {
            let mut o = claude_shim::observe::Observer::new(format);
            for c in &chunks {
                o.feed(c);
            }
            let obs = o.finish();
            prop_assert_eq!(obs.bytes as usize, chunks.iter().map(Vec::len).sum::<usize>());
        }
    }

    #[test]
    fn stream_json_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut input = claude_shim::prompt::SliceChunks(&bytes);
        let p = claude_shim::prompt::read_stream_json(&mut input).unwrap();
        // Nothing is lost: every byte is in the prompt's parts.
        let total = match &p {
            claude_shim::prompt::Prompt::StreamJson { before, line, more, after, .. } =>
                before.len() + line.len() + more.iter().map(Vec::len).sum::<usize>() + after.len(),
            claude_shim::prompt::Prompt::None { bytes, .. } => bytes.len(),
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert_eq!(total, bytes.len());
    }
}
