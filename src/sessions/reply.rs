//! The reply of a session's last turn, as its file holds it. A run whose
//! caller stopped reading early was seen only in part; the file holds the
//! whole reply (the CLI appends each assistant record before it prints it).

use serde::Deserialize;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How far from the file's end a turn is looked for: a longer reply is
/// not pinned (as text output past the observer's cap is not).
const TAILS: [u64; 3] = [256 << 10, 1 << 20, 4 << 20];

/// The model's side of one turn.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reply {
    /// Its main-thread assistant records' uuids, in order.
    pub uuids: Vec<String>,
    /// Their text blocks, in order.
    pub texts: Vec<String>,
    /// The text of its last message (what a `result` reports).
    pub last: String,
}

/// The last turn's reply, when the file ends with a finished one: the
/// main-thread assistant records after the user record that began the turn
/// (a prompt, not a tool's result), the last of them a real answer that
/// stops for good. `None` otherwise, or when the turn began more than 4 MiB
/// before the end.
pub fn last_reply(path: &Path) -> Option<Reply> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    for tail in TAILS {
        let start = len.saturating_sub(tail);
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).ok()?;
        // A window that starts mid-record drops that record's rest.
        let whole = match (start, memchr::memchr(b'\n', &buf)) {
            (0, _) => &buf[..],
            (_, Some(nl)) => &buf[nl + 1..],
            (_, None) => continue,
        };
        if let Some(found) = turn_in(whole) {
            return found;
        }
        if start == 0 {
            break;
        }
    }
    None
}

/// The last turn in `records` (JSON lines): `None` when its beginning is
/// not among them; `Some(None)` when it holds no finished reply.
fn turn_in(records: &[u8]) -> Option<Option<Reply>> {
    let mut answer: Vec<Record> = Vec::new();
    for line in records.split(|&b| b == b'\n').rev() {
        let Ok(r) = serde_json::from_slice::<Record>(line) else {
            continue;
        };
        if r.sidechain == Some(true) {
            continue;
        }
        match r.kind.as_str() {
            "assistant" => answer.push(r),
            "user" if r.is_prompt() => {
                answer.reverse();
                return Some(reply_of(&answer));
            }
            _ => {}
        }
    }
    None
}

fn reply_of(records: &[Record]) -> Option<Reply> {
    let last = records.last()?;
    let message = last.message.as_ref()?;
    let answered = message.model.as_deref() != Some("<synthetic>")
        && message
            .stop_reason
            .as_deref()
            .is_some_and(|r| r != "tool_use");
    if !answered {
        return None;
    }
    let texts =
        |r: &Record| -> Vec<String> { r.message.as_ref().map(|m| m.texts()).unwrap_or_default() };
    // One message is written as one record per content block.
    let last_message = records
        .iter()
        .rev()
        .take_while(|r| r.message_id() == last.message_id())
        .collect::<Vec<_>>();
    Some(Reply {
        uuids: records.iter().filter_map(|r| r.uuid.clone()).collect(),
        texts: records.iter().flat_map(texts).collect(),
        last: last_message.into_iter().rev().flat_map(texts).collect(),
    })
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "isSidechain")]
    sidechain: Option<bool>,
    uuid: Option<String>,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    model: Option<String>,
    stop_reason: Option<String>,
    content: Option<Value>,
}

impl Record {
    /// A user record that begins a turn: text, not a tool's result.
    fn is_prompt(&self) -> bool {
        match self.message.as_ref().and_then(|m| m.content.as_ref()) {
            Some(Value::String(_)) => true,
            Some(Value::Array(blocks)) => blocks.iter().any(|b| b["type"] != "tool_result"),
            _ => false,
        }
    }

    fn message_id(&self) -> Option<&str> {
        self.message.as_ref()?.id.as_deref()
    }
}

impl Message {
    fn texts(&self) -> Vec<String> {
        let Some(Value::Array(blocks)) = &self.content else {
            return Vec::new();
        };
        blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(content: &str) -> String {
        format!(r#"{{"type":"user","uuid":"u","message":{{"role":"user","content":{content}}}}}"#)
    }

    fn assistant(uuid: &str, id: &str, blocks: &str, stop: Option<&str>) -> String {
        let stop = stop.map_or("null".to_owned(), |s| format!("\"{s}\""));
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","message":{{"id":"{id}","model":"m","role":"assistant","stop_reason":{stop},"content":[{blocks}]}}}}"#
        )
    }

    fn text(t: &str) -> String {
        format!(r#"{{"type":"text","text":"{t}"}}"#)
    }

    fn file(lines: &[String]) -> (tempfile::TempDir, std::path::PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
        (t, f)
    }

    #[test]
    fn the_last_turns_reply_from_its_prompt_on() {
        let tool = r#"{"type":"tool_use","id":"t1","name":"Bash","input":{}}"#;
        let (_t, f) = file(&[
            user("\"q1\""),
            assistant("a0", "m0", &text("old"), Some("end_turn")),
            user(r#"[{"type":"text","text":"q2"}]"#),
            r#"{"type":"attachment","uuid":"x"}"#.to_owned(),
            assistant(
                "a1",
                "m1",
                &format!("{},{tool}", text("let me look")),
                Some("tool_use"),
            ),
            user(r#"[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]"#),
            r#"{"type":"assistant","uuid":"s","isSidechain":true,"message":{"content":[]}}"#
                .to_owned(),
            assistant("a2", "m2", &text("Here "), None),
            assistant("a3", "m2", &text("it is."), Some("end_turn")),
            r#"{"type":"cost-state","totalCostUSD":0.1}"#.to_owned(),
        ]);
        let r = last_reply(&f).unwrap();
        assert_eq!(r.uuids, ["a1", "a2", "a3"]);
        assert_eq!(r.texts, ["let me look", "Here ", "it is."]);
        assert_eq!(r.last, "Here it is.");
    }

    #[test]
    fn no_reply_for_an_unfinished_turn_or_a_stand_in() {
        let (_t, f) = file(&[user("\"q\"")]);
        assert_eq!(last_reply(&f), None);
        let (_t, f) = file(&[
            user("\"q\""),
            assistant("a", "m", &text("calling"), Some("tool_use")),
        ]);
        assert_eq!(last_reply(&f), None);
        let synthetic = r#"{"type":"assistant","uuid":"a","message":{"id":"m","model":"<synthetic>","stop_reason":"stop_sequence","content":[{"type":"text","text":"API Error"}]}}"#;
        let (_t, f) = file(&[user("\"q\""), synthetic.to_owned()]);
        assert_eq!(last_reply(&f), None);
        // No prompt at all: nothing to say which records are the turn's.
        let (_t, f) = file(&[assistant("a", "m", &text("x"), Some("end_turn"))]);
        assert_eq!(last_reply(&f), None);
    }

    #[test]
    fn a_long_reply_is_found_by_a_longer_tail() {
        let long = "y".repeat(600 << 10);
        let (_t, f) = file(&[
            user("\"q\""),
            assistant("a", "m", &text(&long), Some("end_turn")),
        ]);
        assert_eq!(last_reply(&f).unwrap().last, long);
        let huge = "z".repeat(5 << 20);
        let (_t, f) = file(&[
            user("\"q\""),
            assistant("a", "m", &text(&huge), Some("end_turn")),
        ]);
        assert_eq!(last_reply(&f), None);
    }
}
