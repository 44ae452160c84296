//! Stream-json lines, typed: what the CLI prints (`system`, `assistant`,
//! `result`, `control_response`) and what callers write (`user`,
//! `control_request`). Each line is parsed once, borrowing its strings where
//! it can; types and fields the shim never reads are skipped.

use serde::Deserialize;
use std::borrow::Cow;

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    System(#[serde(borrow)] System<'a>),
    Assistant(#[serde(borrow)] Assistant<'a>),
    Result(#[serde(borrow)] ResultLine<'a>),
    User(#[serde(borrow)] User<'a>),
    ControlRequest(#[serde(borrow)] ControlRequest<'a>),
    ControlResponse(#[serde(borrow)] ControlResponse<'a>),
    #[serde(other)]
    Other,
}

impl<'a> Event<'a> {
    /// The line as an event; `None` when it is not a JSON object with a
    /// `type` (garbage, or half a line).
    pub fn parse(line: &'a [u8]) -> Option<Event<'a>> {
        serde_json::from_slice(line).ok()
    }
}

#[derive(Debug, Deserialize)]
pub struct System<'a> {
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub session_id: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub struct Assistant<'a> {
    #[serde(borrow, default)]
    pub uuid: Option<Cow<'a, str>>,
    /// Set on a subagent's messages; the main thread's are null or absent.
    #[serde(borrow, default)]
    pub parent_tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub message: Message<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub content: Content<'a>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// A message's content: a string, or blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Blocks(#[serde(borrow)] Vec<Block<'a>>),
}

impl Default for Content<'_> {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

impl Content<'_> {
    /// The text blocks, in order (a string content is one).
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Content::Text(t) => vec![t.as_ref()],
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|b| b.kind == "text")
                .filter_map(|b| b.text.as_deref())
                .collect(),
        }
    }
}

impl Content<'_> {
    /// Blocks other than text (images, documents, tool results).
    pub fn others(&self) -> usize {
        match self {
            Content::Text(_) => 0,
            Content::Blocks(blocks) => blocks.iter().filter(|b| b.kind != "text").count(),
        }
    }

    /// Whether a tool call starts work that outlives the turn's reply
    /// (`run_in_background`, a monitor, a wake-up): the CLI calls the model
    /// again when it ends.
    pub fn starts_background(&self) -> bool {
        match self {
            Content::Text(_) => false,
            Content::Blocks(blocks) => blocks.iter().any(|b| {
                b.kind == "tool_use"
                    && (b.input.as_ref().and_then(|i| i.run_in_background) == Some(true)
                        || b.name.as_deref().is_some_and(|n| WAKE_LATER.contains(&n)))
            }),
        }
    }

    /// Blocks that call a tool (the CLI's, or the server's).
    pub fn tool_calls(&self) -> usize {
        match self {
            Content::Text(_) => 0,
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|b| b.kind.ends_with("tool_use"))
                .count(),
        }
    }
}

/// A content block; text blocks are read, and of a tool call what says
/// whether it starts work that goes on in the background.
#[derive(Debug, Deserialize)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
    /// A tool call's tool.
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub input: Option<ToolInput>,
}

/// What of a tool call's input is read.
#[derive(Debug, Default, Deserialize)]
pub struct ToolInput {
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// Tools whose call leaves work that wakes the model later (2.1.330): a
/// monitor, a scheduled wake-up, a recurring job.
const WAKE_LATER: &[&str] = &["Monitor", "ScheduleWakeup", "CronCreate"];

/// Token usage as the CLI reports it (a result's, or an API call's).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// The cache writes by lifetime, where the API says.
    #[serde(default, skip_serializing)]
    pub cache_creation: CacheCreation,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: u64,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: u64,
}

impl Usage {
    /// The turn wrote to the one-hour cache (it lives an hour, not five
    /// minutes).
    pub fn one_hour_cache(&self) -> bool {
        self.cache_creation.ephemeral_1h_input_tokens > 0
    }

    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.cache_creation_input_tokens += o.cache_creation_input_tokens;
        self.cache_read_input_tokens += o.cache_read_input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_creation.ephemeral_5m_input_tokens += o.cache_creation.ephemeral_5m_input_tokens;
        self.cache_creation.ephemeral_1h_input_tokens += o.cache_creation.ephemeral_1h_input_tokens;
    }
}

#[derive(Debug, Deserialize)]
pub struct ResultLine<'a> {
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(borrow, default)]
    pub result: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The session's running total, not the turn's.
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    /// Why the run ended (`completed`, `prompt_too_long`, `api_error`, …).
    #[serde(borrow, default)]
    pub terminal_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub errors: Vec<Cow<'a, str>>,
    /// This turn's own usage and cost per model (stream-json output only):
    /// since the process's previous result, or its start.
    #[serde(default)]
    pub model_usage_since_last_result: Option<std::collections::HashMap<String, ModelCost>>,
}

#[derive(Debug, Deserialize)]
pub struct ModelCost {
    #[serde(rename = "costUSD", default)]
    pub cost_usd: f64,
}

#[derive(Debug, Deserialize)]
pub struct User<'a> {
    #[serde(borrow)]
    pub message: Message<'a>,
}

#[derive(Debug, Deserialize)]
pub struct ControlRequest<'a> {
    #[serde(borrow, default)]
    pub request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub request: Option<Request<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Request<'a> {
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub struct ControlResponse<'a> {
    #[serde(borrow)]
    pub response: Response<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Response<'a> {
    #[serde(borrow, default)]
    pub request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
}

/// The type of a line the CLI wrote with `"type"` first (as it writes
/// most events), read from its first bytes without parsing; `None` when
/// the line does not start that way (the result event starts with other
/// keys).
pub fn leading_type(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_parses_and_unknown_ones_are_skipped() {
        let cases: &[&str] = &[
            r#"{"type":"system","subtype":"init","session_id":"S","tools":[1,2]}"#,
            r#"{"type":"assistant","uuid":"A","parent_tool_use_id":null,"message":{"id":"m","content":[{"type":"text","text":"hi \"x\""},{"type":"tool_use","id":"t","input":{}}],"usage":{"input_tokens":3,"output_tokens":4}}}"#,
            r#"{"duration_ms":1,"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"S","usage":{"input_tokens":1},"total_cost_usd":0.5,"modelUsage":{}}"#,
            r#"{"type":"user","session_id":"","message":{"role":"user","content":"hello"},"parent_tool_use_id":null}"#,
            r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"req_1","response":{}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#,
        ];
        let got: Vec<String> = cases
            .iter()
            .map(|l| match Event::parse(l.as_bytes()).unwrap() {
                Event::System(s) => format!("system {:?}", s.session_id.as_deref()),
                Event::Assistant(a) => format!(
                    "assistant {:?} {:?} {:?}",
                    a.uuid.as_deref(),
                    a.message.content.texts(),
                    a.message.usage.map(|u| u.output_tokens)
                ),
                Event::Result(r) => format!(
                    "result {:?} {:?} {:?}",
                    r.result.as_deref(),
                    r.total_cost_usd,
                    r.usage.map(|u| u.input_tokens)
                ),
                Event::User(u) => format!("user {:?}", u.message.content.texts()),
                Event::ControlRequest(c) => format!(
                    "control_request {:?} {:?}",
                    c.request_id.as_deref(),
                    c.request
                        .and_then(|r| r.subtype)
                        .as_deref()
                        .map(str::to_owned)
                ),
                Event::ControlResponse(c) => {
                    format!("control_response {:?}", c.response.request_id.as_deref())
                }
                Event::Other => "other".into(),
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"system Some("S")"#,
                r#"assistant Some("A") ["hi \"x\""] Some(4)"#,
                r#"result Some("ok") Some(0.5) Some(1)"#,
                r#"user ["hello"]"#,
                r#"control_request Some("req_1") Some("initialize")"#,
                r#"control_response Some("req_1")"#,
                "other",
            ]
        );
        for bad in ["", "{", "[1]", "{\"a\":1}", "not json"] {
            assert!(Event::parse(bad.as_bytes()).is_none(), "{bad}");
        }
    }

    #[test]
    fn leading_type_reads_only_the_first_bytes() {
        assert_eq!(
            leading_type(br#"{"type":"stream_event","x":1}"#),
            Some(&b"stream_event"[..])
        );
        assert_eq!(leading_type(br#"{"duration_ms":1,"type":"result"}"#), None);
        assert_eq!(leading_type(br#"{"type":"unterminated"#), None);
    }
}
