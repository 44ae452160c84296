//! Parse the real CLI's stdout on the side while it streams to the caller:
//! session id, assistant message uuids and texts, the final result, usage.
//! The observer never alters or delays the bytes; it only reads copies.

use crate::invocation::OutputFormat;
use serde_json::Value;

/// Text output kept for proof of receipt; a longer reply is not pinned.
const TEXT_CAP: usize = 4 << 20;
/// A longer stream-json line is skipped (its facts are lost, not the bytes).
const LINE_CAP: usize = 64 << 20;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResultEvent {
    pub is_error: bool,
    pub subtype: String,
    pub text: Option<String>,
    pub session_id: Option<String>,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub errors: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Observation {
    /// Session id from the init event.
    pub init_session: Option<String>,
    /// uuids of assistant events, in order.
    pub assistant_uuids: Vec<String>,
    /// Text blocks of assistant events, in order.
    pub assistant_texts: Vec<String>,
    pub result: Option<ResultEvent>,
    /// Result events seen (an SDK session may answer several messages).
    pub results: usize,
    /// Text mode: stdout as printed (None when over the cap or not text mode).
    pub text: Option<String>,
    /// Bytes seen on stdout.
    pub bytes: u64,
}

impl Observation {
    /// The reply as the final result text (json modes) or the printed text.
    pub fn reply(&self) -> Option<&str> {
        match &self.result {
            Some(r) => r.text.as_deref(),
            None => self.text.as_deref(),
        }
    }

    pub fn is_error_result(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.is_error)
    }
}

pub struct Observer {
    format: OutputFormat,
    line: Vec<u8>,
    overflow: bool,
    text: Vec<u8>,
    obs: Observation,
}

impl Observer {
    pub fn new(format: OutputFormat) -> Self {
        Observer {
            format,
            line: Vec::new(),
            overflow: false,
            text: Vec::new(),
            obs: Observation::default(),
        }
    }

    pub fn observation(&self) -> &Observation {
        &self.obs
    }

    /// Whether later bytes can still change the observation. Text output
    /// past the proof-of-receipt cap cannot: the tee may then move bytes
    /// without showing them to the observer (see `skipped`).
    pub fn wants_bytes(&self) -> bool {
        !(self.format == OutputFormat::Text && self.overflow)
    }

    /// Count bytes that went past without being fed.
    pub fn skipped(&mut self, n: u64) {
        self.obs.bytes += n;
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.obs.bytes += chunk.len() as u64;
        if self.format == OutputFormat::Text {
            if self.text.len() + chunk.len() <= TEXT_CAP {
                self.text.extend_from_slice(chunk);
            } else {
                self.overflow = true;
            }
            return;
        }
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.push_line_part(&rest[..pos]);
            self.end_line();
            rest = &rest[pos + 1..];
        }
        self.push_line_part(rest);
    }

    pub fn finish(mut self) -> Observation {
        if self.format == OutputFormat::Text {
            if !self.overflow {
                self.obs.text = String::from_utf8(std::mem::take(&mut self.text)).ok();
            }
        } else {
            self.end_line();
        }
        self.obs
    }

    fn push_line_part(&mut self, part: &[u8]) {
        if self.line.len() + part.len() > LINE_CAP {
            self.overflow = true;
            self.line.clear();
        } else if !self.overflow {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        if !std::mem::take(&mut self.overflow) && worth_parsing(&line) {
            if let Ok(event) = serde_json::from_slice::<Value>(&line) {
                self.event(&event);
            }
        }
        // Keep a modest allocation for the next line.
        if line.capacity() <= 1 << 20 {
            line.clear();
            self.line = line;
        }
    }

    fn event(&mut self, e: &Value) {
        let s = |v: &Value| v.as_str().map(str::to_owned);
        match e.get("type").and_then(Value::as_str) {
            Some("system") if e.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.obs.init_session = e.get("session_id").and_then(s);
            }
            Some("assistant") if e.get("parent_tool_use_id").is_none_or(Value::is_null) => {
                if let Some(uuid) = e.get("uuid").and_then(s) {
                    self.obs.assistant_uuids.push(uuid);
                }
                let blocks = e.pointer("/message/content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("text") {
                        if let Some(text) = block.get("text").and_then(s) {
                            self.obs.assistant_texts.push(text);
                        }
                    }
                }
            }
            Some("result") => {
                self.obs.results += 1;
                self.obs.result = Some(result_event(e));
            }
            _ => {}
        }
    }
}

/// The CLI writes `"type"` first on most events; those the observer never
/// reads (tool results, partial-message stream events, …) are skipped
/// without parsing. Anything else (the result event starts with other keys)
/// is parsed.
fn worth_parsing(line: &[u8]) -> bool {
    match line.strip_prefix(br#"{"type":""#) {
        Some(rest) => [&b"system\""[..], b"assistant\"", b"result\""]
            .iter()
            .any(|t| rest.starts_with(t)),
        None => true,
    }
}

fn result_event(e: &Value) -> ResultEvent {
    let n = |k: &str| {
        e.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    ResultEvent {
        is_error: e.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        subtype: e
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        text: e.get("result").and_then(Value::as_str).map(str::to_owned),
        session_id: e
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: Usage {
            input_tokens: n("input_tokens"),
            cache_creation_input_tokens: n("cache_creation_input_tokens"),
            cache_read_input_tokens: n("cache_read_input_tokens"),
            output_tokens: n("output_tokens"),
        },
        cost_usd: e.get("total_cost_usd").and_then(Value::as_f64),
        errors: e
            .get("errors")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        r#"{"type":"system","subtype":"init","session_id":"S1","uuid":"i"}"#,
        "\n",
        r#"{"type":"assistant","uuid":"A1","parent_tool_use_id":null,"message":{"content":[{"type":"text","text":"Hel"},{"type":"tool_use","id":"t"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"SUB","parent_tool_use_id":"t","message":{"content":[{"type":"text","text":"sub"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"A2","message":{"content":[{"type":"text","text":"lo"}]}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"S1","total_cost_usd":0.5,"usage":{"input_tokens":3,"cache_creation_input_tokens":4,"cache_read_input_tokens":5,"output_tokens":6}}"#,
        "\n"
    );

    fn feed_in(format: OutputFormat, data: &[u8], step: usize) -> Observation {
        let mut o = Observer::new(format);
        for c in data.chunks(step) {
            o.feed(c);
        }
        o.finish()
    }

    #[test]
    fn stream_json_in_any_chunking() {
        for step in [1, 2, 7, 64, 4096] {
            let obs = feed_in(OutputFormat::StreamJson, STREAM.as_bytes(), step);
            assert_eq!(obs.init_session.as_deref(), Some("S1"));
            assert_eq!(obs.assistant_uuids, ["A1", "A2"]);
            assert_eq!(obs.assistant_texts, ["Hel", "lo"]);
            let r = obs.result.as_ref().unwrap();
            assert_eq!((r.is_error, r.text.as_deref()), (false, Some("Hello")));
            assert_eq!(r.usage.cache_read_input_tokens, 5);
            assert_eq!(r.cost_usd, Some(0.5));
            assert_eq!(obs.reply(), Some("Hello"));
            assert_eq!(obs.bytes, STREAM.len() as u64);
        }
    }

    #[test]
    fn events_the_observer_never_reads_are_not_parsed() {
        assert!(worth_parsing(br#"{"type":"assistant","uuid":"a"}"#));
        assert!(worth_parsing(br#"{"duration_ms":1,"type":"result"}"#));
        assert!(!worth_parsing(br#"{"type":"user","message":{}}"#));
        assert!(!worth_parsing(br#"{"type":"stream_event","event":{}}"#));
        assert!(!worth_parsing(br#"{"type":"assistantX"}"#));
    }

    #[test]
    fn json_error_result_without_trailing_newline() {
        let line = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"X","errors":["No conversation found with session ID: S"]}"#;
        let obs = feed_in(OutputFormat::Json, line.as_bytes(), 5);
        assert!(obs.is_error_result());
        assert_eq!(
            obs.result.unwrap().errors,
            ["No conversation found with session ID: S"]
        );
    }

    #[test]
    fn text_mode_keeps_printed_text_and_garbage_is_harmless() {
        let obs = feed_in(OutputFormat::Text, b"the answer\n", 3);
        assert_eq!(obs.reply(), Some("the answer\n"));
        let obs = feed_in(OutputFormat::StreamJson, b"\xff\xfe{not json\n{}\n", 2);
        assert_eq!(
            obs,
            Observation {
                bytes: 15,
                ..Default::default()
            }
        );
        let obs = feed_in(OutputFormat::Text, b"\xff\xfe", 1);
        assert_eq!(obs.text, None);
    }
}
