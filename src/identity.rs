//! Identity: which pinned sessions a turn may land in. The scope binds a
//! conversation to its cwd, config dir, real binary and every flag that shapes
//! a session; the chain hash names a node by its turns (the user's and the
//! replies between them); reply hashes
//! prove the caller received the reply the session holds.

use crate::argv::ParsedArgs;
use crate::observe::Observation;
use sha2::{Digest, Sha256};

/// Flags whose value shapes the session (a resume would silently ignore a
/// change to most of them, so a change must mean a new session).
pub const SHAPING_FLAGS: &[&str] = &[
    "model",
    "system-prompt",
    "append-system-prompt",
    "system-prompt-file",
    "append-system-prompt-file",
    "agent",
    "agents",
    "tools",
    "allowedTools",
    "disallowedTools",
    "mcp-config",
    "strict-mcp-config",
    "permission-mode",
    "dangerously-skip-permissions",
    "settings",
    "setting-sources",
];

/// Flags whose values may name files whose contents matter.
const FILE_FLAGS: &[&str] = &[
    "system-prompt-file",
    "append-system-prompt-file",
    "agents",
    "mcp-config",
    "settings",
];

pub struct ScopeInput<'a> {
    pub cwd: &'a str,
    pub config_dir: &'a str,
    pub binary: &'a str,
    pub args: &'a ParsedArgs,
}

fn hex(d: Sha256) -> String {
    hex::encode(d.finalize())
}

/// Length-prefixed field, so concatenations cannot collide.
fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// The scope hash. `read` returns a file's contents (injected for tests).
pub fn scope(input: &ScopeInput<'_>, read: impl Fn(&str) -> Option<Vec<u8>>) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"claude-shim scope v1");
    field(&mut h, input.cwd.as_bytes());
    field(&mut h, input.config_dir.as_bytes());
    field(&mut h, input.binary.as_bytes());
    for name in SHAPING_FLAGS {
        if !input.args.has(name) {
            continue;
        }
        field(&mut h, name.as_bytes());
        for value in input.args.values(name) {
            field(&mut h, value.as_bytes());
            if FILE_FLAGS.contains(name) {
                if let Some(contents) = read(value) {
                    field(&mut h, b"file");
                    field(&mut h, &contents);
                }
            }
        }
    }
    hex(h)
}

/// A user turn as it is hashed: CRLF→LF, trimmed.
pub fn normalize_turn(text: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = text.trim();
    if trimmed.contains('\r') {
        trimmed.replace("\r\n", "\n").trim().to_owned().into()
    } else {
        trimmed.into()
    }
}

/// Node key: a chain over the user turns in order.
pub fn chain<'a>(scope: &str, user_turns: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"claude-shim chain v1");
    field(&mut h, scope.as_bytes());
    let start = hex(h);
    user_turns
        .into_iter()
        .fold(start, |node, turn| chain_step(&node, turn))
}

/// The node of a conversation's turns: user turns, and the replies between
/// them (an edited earlier reply is another conversation, which the session
/// does not hold). The last reply is not part of it: it is the proof of
/// receipt, matched against a pin's reply hashes.
pub fn chain_turns(scope: &str, turns: &[crate::dialect::Turn]) -> String {
    let start = chain(scope, std::iter::empty());
    turns.iter().fold(start, |node, t| match t.role {
        crate::dialect::Role::User => chain_step(&node, &t.text),
        crate::dialect::Role::Assistant => chain_reply(&node, &t.text),
    })
}

/// The node an assistant reply leads to (compared as for proof of receipt).
pub fn chain_reply(node: &str, reply: &str) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"reply");
    field(&mut h, node.as_bytes());
    field(&mut h, normalize_reply(reply).as_bytes());
    hex(h)
}

/// The node one more user turn leads to.
pub fn chain_step(node: &str, user_turn: &str) -> String {
    let mut h = Sha256::new();
    field(&mut h, node.as_bytes());
    field(&mut h, normalize_turn(user_turn).as_bytes());
    hex(h)
}

/// Reply text as compared for proof of receipt: `<thinking>` blocks removed,
/// whitespace runs collapsed, trimmed.
pub fn normalize_reply(text: &str) -> String {
    let mut rest = text;
    let mut kept = String::with_capacity(text.len());
    while let Some(start) = rest.find("<thinking>") {
        kept.push_str(&rest[..start]);
        match rest[start..].find("</thinking>") {
            Some(end) => rest = &rest[start + end + "</thinking>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    kept.push_str(rest);
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn reply_hash(text: &str) -> String {
    let mut h = Sha256::new();
    field(&mut h, b"claude-shim reply v1");
    field(&mut h, normalize_reply(text).as_bytes());
    hex(h)
}

/// Every form of this run's reply a client may replay: the final result (or
/// printed text), and all assistant text blocks joined with and without
/// separators.
pub fn reply_hashes(obs: &Observation) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    if let Some(reply) = obs.reply() {
        forms.push(reply.to_owned());
    }
    if !obs.assistant_texts.is_empty() {
        forms.push(obs.assistant_texts.concat());
        forms.push(obs.assistant_texts.join("\n"));
    }
    let mut hashes: Vec<String> = forms
        .iter()
        .filter(|f| !normalize_reply(f).is_empty())
        .map(|f| reply_hash(f))
        .collect();
    hashes.sort();
    hashes.dedup();
    hashes
}

pub fn preamble_hash(preamble: Option<&str>) -> Option<String> {
    preamble.map(|p| {
        let mut h = Sha256::new();
        field(&mut h, b"claude-shim preamble v1");
        field(&mut h, normalize_turn(p).as_bytes());
        hex(h)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn args(list: &[&str]) -> ParsedArgs {
        let v: Vec<OsString> = list.iter().map(OsString::from).collect();
        crate::argv::parse(&v).unwrap()
    }

    fn sc(list: &[&str], cwd: &str) -> String {
        let a = args(list);
        let input = ScopeInput {
            cwd,
            config_dir: "/h/.claude",
            binary: "b",
            args: &a,
        };
        scope(&input, |p| (p == "sp.txt").then(|| b"file body".to_vec()))
    }

    #[test]
    fn scope_changes_with_what_shapes_a_session_only() {
        let base = sc(&["-p", "--verbose"], "/w");
        assert_eq!(
            base,
            sc(&["--verbose", "-p", "--output-format", "json"], "/w")
        );
        for other in [
            sc(&["-p", "--model", "opus"], "/w"),
            sc(&["-p", "--append-system-prompt", "x"], "/w"),
            sc(&["-p", "--permission-mode", "plan"], "/w"),
            sc(&["-p", "--allowedTools", "Bash"], "/w"),
            sc(&["-p"], "/other"),
        ] {
            assert_ne!(base, other);
        }
        assert_ne!(
            sc(&["-p", "--system-prompt-file", "sp.txt"], "/w"),
            sc(&["-p", "--system-prompt-file", "other.txt"], "/w")
        );
    }

    #[test]
    fn chain_is_ordered_and_normalised() {
        assert_eq!(chain("s", ["a", "b"]), chain("s", [" a\r\n", "b\n"]));
        assert_ne!(chain("s", ["a", "b"]), chain("s", ["b", "a"]));
        assert_ne!(chain("s", ["a"]), chain("t", ["a"]));
        assert_ne!(chain("s", ["ab"]), chain("s", ["a", "b"]));
        assert_eq!(chain_step(&chain("s", ["a"]), "b"), chain("s", ["a", "b"]));
        // Replies between user turns are part of the node, normalised.
        use crate::dialect::{Role, Turn};
        let turn = |role, text: &str| Turn {
            role,
            text: text.into(),
        };
        let with = |reply: &str| {
            chain_turns(
                "s",
                &[
                    turn(Role::User, "a"),
                    turn(Role::Assistant, reply),
                    turn(Role::User, "b"),
                ],
            )
        };
        assert_eq!(with("x  y"), with(" x y\n"));
        assert_ne!(with("x y"), with("x y (edited)"));
        assert_ne!(with("a"), chain("s", ["a", "a", "b"]));
        assert_eq!(
            chain_turns("s", &[turn(Role::User, "a")]),
            chain("s", ["a"])
        );
    }

    #[test]
    fn replies_compare_whitespace_and_thinking_insensitively() {
        assert_eq!(reply_hash("Hello\n\n  world "), reply_hash("Hello world"));
        assert_eq!(
            reply_hash("<thinking>hm</thinking>Hello"),
            reply_hash("Hello")
        );
        assert_ne!(reply_hash("Hello"), reply_hash("Hello!"));
        let obs = Observation {
            assistant_texts: vec!["Hel".into(), "lo".into()],
            text: Some("Hello\n".into()),
            ..Default::default()
        };
        let hashes = reply_hashes(&obs);
        assert!(hashes.contains(&reply_hash("Hello")));
        assert!(hashes.contains(&reply_hash("Hel\nlo")));
    }
}
