//! Parse the real CLI's stdout on the side while it streams to the caller:
//! session id, assistant message uuids and texts, the final result, usage.
//! The observer never alters or delays the bytes; it only reads copies, and
//! copies only the lines it will parse (it decides from a line's first bytes).

use crate::events::{self, Event, Usage};
use crate::invocation::OutputFormat;

/// Text output kept for proof of receipt; a longer reply is not pinned.
const TEXT_CAP: usize = 4 << 20;
/// A longer stream-json line is skipped (its facts are lost, not the bytes).
const LINE_CAP: usize = 64 << 20;
/// Enough of a line's start to read its `{"type":"…"` prefix.
const PREFIX: usize = 32;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResultEvent {
    pub is_error: bool,
    pub subtype: String,
    pub text: Option<String>,
    pub session_id: Option<String>,
    pub usage: Usage,
    /// The session's running total (`total_cost_usd`), not the turn's.
    pub total_cost_usd: Option<f64>,
    /// The turn's own cost, where the CLI says it (stream-json output).
    pub turn_cost_usd: Option<f64>,
    pub terminal_reason: Option<String>,
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
    /// Tool calls among those events' blocks.
    pub assistant_tools: usize,
    /// One of them started work that goes on in the background (see
    /// `events::Content::starts_background`).
    pub background: bool,
    /// Compactions of the session (`compact_boundary` events).
    pub compactions: usize,
    pub result: Option<ResultEvent>,
    /// Result events seen (an SDK session may answer several messages).
    pub results: usize,
    /// A real answer came (an assistant message the model wrote, not the
    /// CLI's stand-in for an API error).
    pub answered: bool,
    /// Text mode: stdout as printed (None when over the cap or not text mode).
    pub text: Option<String>,
    /// Bytes seen on stdout.
    pub bytes: u64,
    /// The caller stopped reading before the output ended: what was seen is
    /// a part (the session file holds the whole reply).
    pub cut: bool,
    /// Stdout was a terminal (see `runner::terminal`): what was seen is
    /// what a terminal shows, stderr's bytes among it (the session file
    /// holds the reply).
    pub at_terminal: bool,
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

    /// A successful result event arrived (json and stream-json output).
    pub fn has_success_result(&self) -> bool {
        self.result.as_ref().is_some_and(|r| !r.is_error)
    }

    /// The CLI refused the prompt as longer than the context allows.
    pub fn too_long(&self) -> bool {
        const MESSAGE: &str = "Prompt is too long";
        match &self.result {
            Some(r) => {
                r.is_error
                    && (r.terminal_reason.as_deref() == Some("prompt_too_long")
                        || r.text.as_deref().is_some_and(|t| t.starts_with(MESSAGE)))
            }
            // Text output prints only the message.
            None => self.text.as_deref().is_some_and(|t| t.starts_with(MESSAGE)),
        }
    }
}

/// What one chunk brought, for the tee to act on before passing it on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// A result event was completed by this chunk.
    pub result: bool,
}

pub struct Observer {
    format: OutputFormat,
    /// The current line, while it may be worth parsing.
    line: Vec<u8>,
    /// The current line is skipped up to its newline.
    skipping: bool,
    overflow: bool,
    text: Vec<u8>,
    obs: Observation,
}

impl Observer {
    pub fn new(format: OutputFormat) -> Self {
        Observer {
            format,
            line: Vec::new(),
            skipping: false,
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

    /// The caller's end closed: nothing more is seen of this output.
    pub fn cut(&mut self) {
        self.obs.cut = true;
    }

    /// Count bytes that went past without being fed.
    pub fn skipped(&mut self, n: u64) {
        self.obs.bytes += n;
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Fed {
        self.obs.bytes += chunk.len() as u64;
        if self.format == OutputFormat::Text {
            if self.text.len() + chunk.len() <= TEXT_CAP {
                self.text.extend_from_slice(chunk);
            } else {
                self.overflow = true;
            }
            return Fed::default();
        }
        let results = self.obs.results;
        let mut rest = chunk;
        loop {
            if self.skipping {
                match memchr::memchr(b'\n', rest) {
                    Some(nl) => {
                        self.skipping = false;
                        rest = &rest[nl + 1..];
                        continue;
                    }
                    None => break,
                }
            }
            match memchr::memchr(b'\n', rest) {
                Some(nl) => {
                    self.push_line_part(&rest[..nl]);
                    self.end_line();
                    rest = &rest[nl + 1..];
                }
                None => {
                    self.push_line_part(rest);
                    break;
                }
            }
        }
        Fed {
            result: self.obs.results > results,
        }
    }

    pub fn finish(mut self) -> Observation {
        if self.format == OutputFormat::Text {
            if !self.overflow {
                self.obs.text = String::from_utf8(std::mem::take(&mut self.text)).ok();
            }
        } else if !self.skipping {
            self.end_line();
        }
        self.obs
    }

    fn push_line_part(&mut self, part: &[u8]) {
        if self.overflow {
            return;
        }
        if self.line.len() + part.len() > LINE_CAP {
            self.overflow = true;
            self.line.clear();
            return;
        }
        let before = self.line.len();
        self.line.extend_from_slice(part);
        // Decide once the prefix is known: lines the observer never reads
        // (tool results, partial-message stream events…) are not copied on.
        if before < PREFIX && self.line.len() >= PREFIX {
            if let Some(t) = events::leading_type(&self.line) {
                if !matches!(t, b"system" | b"assistant" | b"result") {
                    self.line.clear();
                    self.skipping = true;
                }
            }
        }
    }

    fn end_line(&mut self) {
        self.skipping = false;
        let line = std::mem::take(&mut self.line);
        if !std::mem::take(&mut self.overflow) {
            if let Some(event) = Event::parse(&line) {
                self.event(event);
            }
        }
        // Keep a modest allocation for the next line.
        if line.capacity() <= 1 << 20 {
            self.line = line;
            self.line.clear();
        }
    }

    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::System(s) if s.subtype.as_deref() == Some("init") => {
                self.obs.init_session = s.session_id.map(Into::into);
            }
            Event::System(s) if s.subtype.as_deref() == Some("compact_boundary") => {
                self.obs.compactions += 1;
            }
            Event::Assistant(a) if a.parent_tool_use_id.is_none() => {
                if a.message.model.as_deref() != Some("<synthetic>") {
                    self.obs.answered = true;
                }
                if let Some(uuid) = a.uuid {
                    self.obs.assistant_uuids.push(uuid.into());
                }
                for text in a.message.content.texts() {
                    self.obs.assistant_texts.push(text.to_owned());
                }
                self.obs.assistant_tools += a.message.content.tool_calls();
                self.obs.background |= a.message.content.starts_background();
            }
            Event::Result(r) => {
                self.obs.results += 1;
                self.obs.result = Some(ResultEvent {
                    is_error: r.is_error,
                    subtype: r.subtype.map(Into::into).unwrap_or_default(),
                    text: r.result.map(Into::into),
                    session_id: r.session_id.map(Into::into),
                    usage: r.usage.unwrap_or_default(),
                    total_cost_usd: r.total_cost_usd,
                    turn_cost_usd: r
                        .model_usage_since_last_result
                        .map(|m| m.values().map(|c| c.cost_usd).sum()),
                    terminal_reason: r.terminal_reason.map(Into::into),
                    errors: r.errors.into_iter().map(Into::into).collect(),
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        r#"{"type":"system","subtype":"init","session_id":"S1","uuid":"i"}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"text":"{\"type\":\"result\"}"}}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"A1","parent_tool_use_id":null,"message":{"content":[{"type":"text","text":"Hel"},{"type":"tool_use","id":"t"}]}}"#,
        "\n",
        r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"{\"type\":\"result\"}"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"SUB","parent_tool_use_id":"t","message":{"content":[{"type":"text","text":"sub"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"A2","message":{"content":[{"type":"text","text":"lo"}]}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"S1","total_cost_usd":0.5,"usage":{"input_tokens":3,"cache_creation_input_tokens":4,"cache_read_input_tokens":5,"output_tokens":6}}"#,
        "\n"
    );

    fn feed_in(format: OutputFormat, data: &[u8], step: usize) -> (Observation, usize) {
        let mut o = Observer::new(format);
        let mut result_chunks = 0;
        for c in data.chunks(step) {
            result_chunks += usize::from(o.feed(c).result);
        }
        (o.finish(), result_chunks)
    }

    #[test]
    fn a_call_that_leaves_work_in_the_background_is_seen() {
        let line = |content: &str| {
            format!(r#"{{"type":"assistant","uuid":"A","message":{{"content":[{content}]}}}}"#)
                + "\n"
        };
        for (content, background) in [
            (
                r#"{"type":"tool_use","id":"t","name":"Bash","input":{"command":"sleep 3","run_in_background":true}}"#,
                true,
            ),
            (
                r#"{"type":"tool_use","id":"t","name":"Agent","input":{"prompt":"p","run_in_background":true}}"#,
                true,
            ),
            (
                r#"{"type":"tool_use","id":"t","name":"Monitor","input":{"command":"tail -f x"}}"#,
                true,
            ),
            (
                r#"{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls","run_in_background":false}}"#,
                false,
            ),
            (
                r#"{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/x"}}"#,
                false,
            ),
            (
                r#"{"type":"text","text":"run_in_background Monitor"}"#,
                false,
            ),
        ] {
            let (obs, _) = feed_in(OutputFormat::StreamJson, line(content).as_bytes(), 4096);
            assert_eq!(obs.background, background, "{content}");
        }
    }

    #[test]
    fn stream_json_in_any_chunking() {
        for step in [1, 2, 7, 31, 32, 33, 64, 4096] {
            let (obs, result_chunks) = feed_in(OutputFormat::StreamJson, STREAM.as_bytes(), step);
            assert_eq!(obs.init_session.as_deref(), Some("S1"));
            assert_eq!(obs.assistant_uuids, ["A1", "A2"]);
            assert_eq!(obs.assistant_texts, ["Hel", "lo"]);
            assert_eq!(obs.assistant_tools, 1);
            let r = obs.result.as_ref().unwrap();
            assert_eq!((r.is_error, r.text.as_deref()), (false, Some("Hello")));
            assert_eq!(r.usage.cache_read_input_tokens, 5);
            assert_eq!(r.total_cost_usd, Some(0.5));
            assert_eq!(obs.reply(), Some("Hello"));
            assert_eq!(obs.bytes, STREAM.len() as u64);
            assert_eq!((obs.results, result_chunks), (1, 1), "step {step}");
        }
    }

    #[test]
    fn lines_the_observer_never_reads_are_not_kept() {
        let mut o = Observer::new(OutputFormat::StreamJson);
        let big = format!(
            "{{\"type\":\"stream_event\",\"event\":\"{}\"}}\n",
            "x".repeat(1 << 20)
        );
        for c in big.as_bytes().chunks(4096) {
            o.feed(c);
            assert!(o.line.len() <= PREFIX + 4096, "{}", o.line.len());
        }
        assert!(o.line.is_empty() && !o.skipping);
    }

    #[test]
    fn json_error_result_without_trailing_newline() {
        let line = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"X","errors":["No conversation found with session ID: S"]}"#;
        let (obs, _) = feed_in(OutputFormat::Json, line.as_bytes(), 5);
        assert!(obs.is_error_result());
        assert_eq!(
            obs.result.unwrap().errors,
            ["No conversation found with session ID: S"]
        );
    }

    #[test]
    fn text_mode_keeps_printed_text_and_garbage_is_harmless() {
        let (obs, _) = feed_in(OutputFormat::Text, b"the answer\n", 3);
        assert_eq!(obs.reply(), Some("the answer\n"));
        let (obs, _) = feed_in(OutputFormat::StreamJson, b"\xff\xfe{not json\n{}\n", 2);
        assert_eq!(
            obs,
            Observation {
                bytes: 15,
                ..Default::default()
            }
        );
        let (obs, _) = feed_in(OutputFormat::Text, b"\xff\xfe", 1);
        assert_eq!(obs.text, None);
    }
}
#[cfg(test)]
mod too_long_tests {
    use super::*;

    #[test]
    fn a_too_long_refusal_in_each_format() {
        let mut o = Observer::new(OutputFormat::Text);
        o.feed("Prompt is too long · the request is ~250000 tokens\n".as_bytes());
        assert!(o.finish().too_long());
        let line = r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"prompt_too_long","result":"Prompt is too long"}"#;
        let mut o = Observer::new(OutputFormat::Json);
        o.feed(line.as_bytes());
        assert!(o.finish().too_long());
        let mut o = Observer::new(OutputFormat::Text);
        o.feed(b"an answer about prompts\n");
        assert!(!o.finish().too_long());
    }
}
