//! `route-key`: the stable key of a conversation, from the messages JSON a
//! client sends (OpenAI chat or Anthropic Messages style), so a load
//! balancer can keep a conversation's turns on one replica where it can
//! (fewer transcripts brought from the store). The key is the one the shim
//! records for the conversation (`conv_key` in runs and pins): a hash of
//! its first user message.

use super::command::Run;
use crate::identity::ConvKey;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;
use std::io::{Read, Write};

/// Print the conversation key of a messages JSON read on stdin:
/// `{"messages":[…]}` (OpenAI chat completions, Anthropic Messages) or a
/// bare `[…]` array. Hash on it to keep a conversation on one replica.
#[derive(Args)]
pub struct RouteKey {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

impl Run for RouteKey {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        let mut input = Vec::new();
        std::io::stdin()
            .read_to_end(&mut input)
            .context("reading stdin")?;
        let value: Value = serde_json::from_slice(&input).context("stdin is not JSON")?;
        let Some(first) = first_user_text(&value) else {
            bail!("no user message in the input (want {{\"messages\":[…]}} or […])");
        };
        let key = ConvKey::of(&first);
        if self.json {
            let v = serde_json::json!({
                "conv_key": key.as_str(),
                "first_user_message_chars": first.chars().count(),
            });
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "{key}")?;
        }
        Ok(())
    }
}

/// The first user message's text, as the shim's dialects take it: string
/// content, or text blocks (parts) joined with newlines; content with other
/// blocks is their canonical JSON, as the JSON dialect hashes it.
pub fn first_user_text(root: &Value) -> Option<String> {
    let messages = match root {
        Value::Array(m) => m,
        Value::Object(o) => o.get("messages")?.as_array()?,
        _ => return None,
    };
    let first = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    // The same text the JSON dialect hashes into the conversation key.
    crate::dialect::json::user_text(first.get("content")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_user_message_in_each_style() {
        let openai = json!({"model": "x", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "more"},
        ]});
        let anthropic = json!({"system": "be brief", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello there"}]},
        ]});
        let parts = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "hello"}, {"type": "text", "text": "there"}]},
        ]);
        assert_eq!(first_user_text(&openai).as_deref(), Some("hello there"));
        assert_eq!(first_user_text(&anthropic).as_deref(), Some("hello there"));
        assert_eq!(first_user_text(&parts).as_deref(), Some("hello\nthere"));
        assert_eq!(
            ConvKey::of(&first_user_text(&openai).unwrap()),
            ConvKey::of(&first_user_text(&anthropic).unwrap())
        );
        assert_eq!(first_user_text(&json!({"messages": []})), None);
        assert_eq!(first_user_text(&json!("text")), None);
    }
}
