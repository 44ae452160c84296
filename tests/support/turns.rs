//! Conversations through the shim against the fake CLI, for the fault, load
//! and security suites. The fake's reply lists the `<<tag>>`s of every user
//! message the "model" saw, so an answer tells which conversation (and how
//! much of it) reached the model; a replayed transcript run directly gives
//! the same answer as a resumed session through the shim.

use std::process::Command;

use super::clients::Chat;
use super::process::{assert_seen_same, run, Ran};
use super::sandbox::{Sandbox, NO_ARGS};
use super::store::{errors_log, pins, runs};

/// `<<tag>>` for turn `k` of conversation `conv`.
pub fn tag(conv: &str, k: usize) -> String {
    format!("<<{conv}.{k}>>")
}

/// Every `<<tag>>` in `text`, in order.
pub fn tags_in(text: &str) -> Vec<String> {
    let mut tags = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        let Some(len) = rest[start..].find(">>") else {
            break;
        };
        tags.push(rest[start..start + len + 2].to_string());
        rest = &rest[start + len + 2..];
    }
    tags
}

/// The reply the fake gives when the model saw exactly these tags.
pub fn ack(tags: &[String]) -> String {
    let names: Vec<&str> = tags
        .iter()
        .map(|t| t.trim_start_matches("<<").trim_end_matches(">>"))
        .collect();
    format!("ack {}", names.join(","))
}

/// The shim (with a debug log) in front of the fake.
pub fn shim(w: &Sandbox) -> Command {
    let mut cmd = w.shim();
    cmd.env("CLAUDE_SHIM_LOG", w.file("shim.log"));
    cmd
}

/// The fake run directly, as if there were no shim.
pub fn direct(w: &Sandbox) -> Command {
    w.direct(NO_ARGS)
}

/// One turn through the shim; panics unless it succeeded with clean stderr.
pub fn say(w: &Sandbox, chat: &mut Chat, current: &str) -> Ran {
    let mut cmd = shim(w);
    let input = chat.prepare(&mut cmd, current);
    let ran = run(cmd, input);
    assert!(
        ran.status.success() && ran.stderr.is_empty(),
        "turn {current:?}: {:?}\nstderr: {}\n{}",
        ran.status,
        ran.err(),
        context(w)
    );
    chat.keep(current, &ran);
    ran
}

/// The same turn through the shim and directly (`tweak` applied to both
/// commands), without keeping it in the history.
pub fn both_chat(
    w: &Sandbox,
    chat: &Chat,
    current: &str,
    tweak: impl Fn(&mut Command),
) -> (Ran, Ran) {
    let mut s = shim(w);
    let mut d = direct(w);
    tweak(&mut s);
    tweak(&mut d);
    let si = chat.prepare(&mut s, current);
    let di = chat.prepare(&mut d, current);
    (run(s, si), run(d, di))
}

/// Session ids and message uuids replaced by `<UUID>`: they differ between
/// two runs by nature (the shim picks its own `--session-id`).
pub fn mask_uuids(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if i + 36 <= chars.len() && is_uuid(&chars[i..i + 36]) {
            out.push_str("<UUID>");
            i += 36;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn is_uuid(c: &[char]) -> bool {
    c.iter().enumerate().all(|(i, ch)| match i {
        8 | 13 | 18 | 23 => *ch == '-',
        _ => ch.is_ascii_hexdigit(),
    })
}

/// The caller's view of both runs is the same, session ids aside.
#[track_caller]
pub fn assert_same_masked(shim: &Ran, direct: &Ran) {
    assert_seen_same(shim, direct, &|b| mask_uuids(b).into_bytes(), &|| {
        format!(
            "shim stderr: {}\ndirect stderr: {}",
            shim.err(),
            direct.err()
        )
    });
}

/// Everything useful when an assertion fails.
pub fn context(w: &Sandbox) -> String {
    format!(
        "runs: {:?}\npins: {:?}\nerrors.log: {}\ndebug log:\n{}",
        runs(w),
        pins(w),
        errors_log(w),
        std::fs::read_to_string(w.file("shim.log")).unwrap_or_default()
    )
}
