//! A JSON messages array on stdin (Cline, Roo Code): the Anthropic
//! `[{role, content}]` array, or Roo's `{"systemPrompt":…, "messages":[…]}`.
//! Content is a string or blocks; tool_use/tool_result blocks are part of
//! their turn. The delta keeps the shape: an array (or wrapper) holding the
//! current message only.

use super::conversation::{Conversation, Dialect};
use crate::identity::{Role, Turn};
use serde_json::{json, Value};

pub struct Json;

pub static JSON: Json = Json;

/// A turn's text for hashing: plain text when the content is text only,
/// else the canonical JSON of its blocks (serde_json sorts object keys).
pub(crate) fn user_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Option<Vec<&str>> = blocks
                .iter()
                .map(|b| {
                    (b.get("type")?.as_str()? == "text")
                        .then(|| b.get("text")?.as_str())
                        .flatten()
                })
                .collect();
            Some(match texts {
                Some(t) => t.join("\n"),
                None => serde_json::to_string(content).ok()?,
            })
        }
        _ => None,
    }
}

/// An assistant turn as the caller saw it: its text blocks.
fn assistant_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

impl Dialect for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn parse(&self, text: &str) -> Option<Conversation> {
        let trimmed = text.trim_start();
        if !trimmed.starts_with('[') && !trimmed.starts_with('{') {
            return None;
        }
        let root: Value = serde_json::from_str(text).ok()?;
        let (system, messages) = match &root {
            Value::Array(m) => (None, m),
            Value::Object(o) => (
                Some(o.get("systemPrompt")?.as_str()?.to_owned()),
                o.get("messages")?.as_array()?,
            ),
            _ => return None,
        };
        let mut c = parse_messages(self.name(), messages, system.clone())?;
        let last = messages.last()?;
        let one = |with_system: bool| -> Option<String> {
            let v = match (&root, with_system) {
                (Value::Array(_), _) => json!([last]),
                (_, true) => json!({ "systemPrompt": system, "messages": [last] }),
                (_, false) => json!({ "messages": [last] }),
            };
            serde_json::to_string(&v).ok()
        };
        c.delta = one(false)?;
        c.delta_with_preamble = one(true)?;
        Some(c)
    }

    fn ends_with_reply(&self, text: &str) -> bool {
        let Some(messages) = Json::messages(text) else {
            return false;
        };
        match messages.split_last() {
            Some((last, earlier)) => {
                last.get("role").and_then(Value::as_str) == Some("assistant")
                    && parse_messages(self.name(), earlier, None).is_some()
            }
            None => false,
        }
    }
}

impl Json {
    /// The messages of an array or a Roo wrapper.
    fn messages(text: &str) -> Option<Vec<Value>> {
        let trimmed = text.trim_start();
        if !trimmed.starts_with('[') && !trimmed.starts_with('{') {
            return None;
        }
        match serde_json::from_str(text).ok()? {
            Value::Array(m) => Some(m),
            Value::Object(mut o) => match o.remove("messages")? {
                Value::Array(m) => Some(m),
                _ => None,
            },
            _ => None,
        }
    }
}

/// `[{role, content}]` messages, alternating from the user and ending with
/// the user, as a conversation (also used for one stream-json line per
/// message, whose delta is the last line itself).
pub fn parse_messages(
    dialect: &'static str,
    messages: &[Value],
    system: Option<String>,
) -> Option<Conversation> {
    {
        let (last, earlier) = messages.split_last()?;
        let mut prior = Vec::new();
        for m in earlier {
            let content = m.get("content")?;
            let turn = match m.get("role")?.as_str()? {
                "user" => Turn {
                    role: Role::User,
                    text: user_text(content)?,
                },
                "assistant" => Turn {
                    role: Role::Assistant,
                    text: assistant_text(content)?,
                },
                _ => return None,
            };
            prior.push(turn);
        }
        if last.get("role")?.as_str()? != "user" {
            return None;
        }
        let current = user_text(last.get("content")?)?;
        let c = Conversation::new(dialect, system, prior, current);
        c.alternates().then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cline_array_with_tool_blocks() {
        let p = r#"[{"role":"user","content":[{"type":"text","text":"fix it"}]},
            {"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"read","input":{"p":"a"}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"file body"}]},
            {"role":"assistant","content":"Done."},
            {"role":"user","content":"thanks"}]"#;
        let c = JSON.parse(p).unwrap();
        let users: Vec<&str> = c.prior_user_turns().collect();
        assert_eq!(users[0], "fix it");
        assert!(users[1].contains("tool_result") && users[1].contains("file body"));
        assert_eq!(c.prior[1].text, "Reading.");
        assert_eq!(c.last_assistant(), Some("Done."));
        assert_eq!(c.current, "thanks");
        assert_eq!(c.delta, r#"[{"content":"thanks","role":"user"}]"#);
    }

    #[test]
    fn roo_wrapper_and_refusals() {
        let p = r#"{"systemPrompt":"sp","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}"#;
        let c = JSON.parse(p).unwrap();
        assert_eq!(c.preamble.as_deref(), Some("sp"));
        assert_eq!(c.delta, r#"{"messages":[{"content":"c","role":"user"}]}"#);
        assert!(c.delta_with_preamble.contains(r#""systemPrompt":"sp""#));
        for bad in [
            "[]",
            r#"[{"role":"assistant","content":"x"}]"#,
            r#"[{"role":"user","content":"x"},{"role":"user","content":"y"}]"#,
            r#"{"messages":[]}"#,
            "[1,2]",
            "[not json",
        ] {
            assert_eq!(JSON.parse(bad), None, "{bad}");
        }
    }
}
