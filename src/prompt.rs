//! Where the caller's prompt is and how to put a rewritten one back: the
//! positional argument, stdin text, or the first stream-json user message
//! (after any control_request lines). Reading is the only effect here; the
//! splice functions are pure.

use crate::argv::ParsedArgs;
use crate::invocation::InputFormat;
use serde_json::Value;
use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Read};

/// The prompt as found, with what is needed to replay the input untouched.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// `args[index]` is the prompt; stdin is left to the CLI.
    Positional { index: usize, text: String },
    /// All of stdin (text input format).
    Stdin { bytes: Vec<u8> },
    /// stream-json input: `before` (control lines) was read ahead of the
    /// user line; the rest of stdin is forwarded later.
    StreamJson { before: Vec<u8>, line: Vec<u8> },
    /// Nothing the shim can read (stdin is a terminal, or stream-json input
    /// ended before a user message); `bytes` is what was consumed.
    None { bytes: Vec<u8>, inherit: bool },
}

impl Prompt {
    /// The prompt text, when it is UTF-8 text the dialects can parse.
    pub fn text(&self) -> Option<String> {
        match self {
            Prompt::Positional { text, .. } => Some(text.clone()),
            Prompt::Stdin { bytes } => String::from_utf8(bytes.clone()).ok(),
            Prompt::StreamJson { line, .. } => stream_text(line),
            Prompt::None { .. } => None,
        }
    }

    /// Size of the prompt as the caller sent it.
    pub fn len(&self) -> usize {
        match self {
            Prompt::Positional { text, .. } => text.len(),
            Prompt::Stdin { bytes } => bytes.len(),
            Prompt::StreamJson { line, .. } => line.len(),
            Prompt::None { bytes, .. } => bytes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The positional prompt: the first positional argument (commander takes
/// the first operand as `[prompt]`).
pub fn positional(args: &ParsedArgs) -> Option<(usize, String)> {
    args.positionals.first().map(|p| (p.index, p.value.clone()))
}

/// Read the prompt from where this invocation carries it.
pub fn read(args: &ParsedArgs, input: InputFormat) -> std::io::Result<Prompt> {
    let stdin = std::io::stdin();
    if input == InputFormat::StreamJson {
        return read_stream_json(&mut stdin.lock());
    }
    if let Some((index, text)) = positional(args) {
        return Ok(Prompt::Positional { index, text });
    }
    if stdin.is_terminal() {
        return Ok(Prompt::None { bytes: Vec::new(), inherit: true });
    }
    let mut bytes = Vec::new();
    stdin.lock().read_to_end(&mut bytes)?;
    Ok(Prompt::Stdin { bytes })
}

/// Read stream-json lines until the first user message.
pub fn read_stream_json(input: &mut impl BufRead) -> std::io::Result<Prompt> {
    let mut before = Vec::new();
    loop {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(Prompt::None { bytes: before, inherit: false });
        }
        if is_user_line(&line) {
            return Ok(Prompt::StreamJson { before, line });
        }
        before.extend_from_slice(&line);
    }
}

fn is_user_line(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("user"))
}

/// The text of a stream-json user line when it has exactly one text part
/// (a string content or one text block); other shapes are not rewritten.
pub fn stream_text(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let content = v.pointer("/message/content")?;
    if let Some(s) = content.as_str() {
        return Some(s.to_owned());
    }
    let mut texts = content
        .as_array()?
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    let only = texts.next()?;
    if texts.next().is_some() {
        return None;
    }
    only.get("text")?.as_str().map(str::to_owned)
}

/// The same user line with its text replaced; every other field and block
/// is kept as it was, and the line ending is preserved.
pub fn replace_stream_text(line: &[u8], text: &str) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(line).ok()?;
    let content = v.pointer_mut("/message/content")?;
    if content.is_string() {
        *content = Value::String(text.to_owned());
    } else {
        let block = content
            .as_array_mut()?
            .iter_mut()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))?;
        block["text"] = Value::String(text.to_owned());
    }
    let mut out = serde_json::to_vec(&v).ok()?;
    if line.ends_with(b"\n") {
        out.push(b'\n');
    }
    Some(out)
}

/// argv with the positional prompt at `index` replaced.
pub fn replace_positional(args: &[OsString], index: usize, text: &str) -> Vec<OsString> {
    let mut out = args.to_vec();
    if let Some(slot) = out.get_mut(index) {
        *slot = OsString::from(text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_json_reads_past_control_lines_only() {
        let input = b"{\"type\":\"control_request\",\"request\":{\"subtype\":\"initialize\"}}\n\
            {\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n\
            {\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"later\"}}\n";
        let mut r = std::io::BufReader::new(&input[..]);
        let p = read_stream_json(&mut r).unwrap();
        let Prompt::StreamJson { before, line } = &p else { panic!("{p:?}") };
        assert!(before.starts_with(b"{\"type\":\"control_request\""));
        assert_eq!(p.text().as_deref(), Some("hi"));
        assert!(line.ends_with(b"\n"));
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert!(rest.contains("later"), "later lines stay unread");
    }

    #[test]
    fn stream_text_shapes() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"type":"user","message":{"role":"user","content":"a"}}"#, Some("a")),
            (r#"{"type":"user","message":{"content":[{"type":"text","text":"b"}]}}"#, Some("b")),
            (
                r#"{"type":"user","message":{"content":[{"type":"image","source":{}},{"type":"text","text":"c"}]}}"#,
                Some("c"),
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}}"#,
                None,
            ),
            (r#"{"type":"user","message":{"content":[]}}"#, None),
            ("not json", None),
        ];
        for (line, want) in cases {
            assert_eq!(stream_text(line.as_bytes()).as_deref(), *want, "{line}");
        }
    }

    #[test]
    fn replace_keeps_other_blocks_and_fields() {
        let line = br#"{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"image","source":{"data":"AAA"}},{"type":"text","text":"old"}]},"parent_tool_use_id":null}
"#;
        let out = replace_stream_text(line, "new").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["message"]["content"][0]["source"]["data"], "AAA");
        assert_eq!(v["message"]["content"][1]["text"], "new");
        assert_eq!(v["session_id"], "");
        assert!(v["parent_tool_use_id"].is_null());
        assert!(out.ends_with(b"\n"));
    }
}
