//! Where a streaming caller has the whole reply, and the turn must be on
//! record first.
//!
//! With `--include-partial-messages`, the main thread's `message_delta` whose
//! `stop_reason` ends the turn (anything but `tool_use`) tells a caller the
//! reply is complete: an OpenAI-compatible server in streaming mode takes the
//! reply from the deltas and may kill the CLI right there, before `result`.
//! The session file holds the turn's assistant record only once the CLI has
//! printed `message_stop` (checked against Claude Code 2.1.330: the record is
//! written after `message_delta` is printed; `assistant` lines come before
//! `message_delta`). So from the start of that `message_delta` line to the end
//! of the `message_stop` line the bytes are held; at that end the turn is
//! sealed (pinned and logged), then they go on. The hold spans two lines the
//! CLI prints within milliseconds.
//!
//! Without partial messages a caller cannot tell the last `assistant` line
//! from an earlier one until `result`, which is recorded before its bytes pass
//! (see `Watch::result`); text output is whole at end-of-file, after the exit.

/// What to do with a stretch of output.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// Pass these bytes on.
    Pass(Vec<u8>),
    /// The turn is complete: record it before the next piece passes.
    Sealed,
}

/// Splits stream-json output at the seal; fed every byte, in order.
#[derive(Default)]
pub struct Sealer {
    /// The current line's bytes kept back: its start while too short to
    /// tell, or a whole `stream_event` line (the CLI writes whole lines, so
    /// in practice nothing waits).
    line: Vec<u8>,
    /// What the current line is, once its start is known.
    kind: Option<LineKind>,
    /// Held from the final `message_delta` on, while not sealed.
    held: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// A `stream_event`: kept whole, then classified.
    Event,
    /// Anything else: passes as it comes.
    Other,
}

/// What a whole `stream_event` line is.
#[derive(Debug, PartialEq, Eq)]
enum Mark {
    /// The main thread's delta that ends the turn.
    FinalDelta,
    /// The main thread's `message_stop`.
    Stop,
    Other,
}

const EVENT: &[u8] = b"{\"type\":\"stream_event\"";
/// A longer `stream_event` line is not kept back whole (none that matters
/// is this long).
const LINE_CAP: usize = 64 << 10;
/// Past this much held, the hold gives up (nothing is lost: it all passes).
const HOLD_CAP: usize = 1 << 20;

impl Sealer {
    /// The pieces `chunk` makes, in order.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut pass: Vec<u8> = Vec::new();
        while !chunk.is_empty() {
            let (part, ends) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (&chunk[..=i], true),
                None => (chunk, false),
            };
            chunk = &chunk[part.len()..];
            let out = match self.held.as_mut() {
                Some(held) => held,
                None => &mut pass,
            };
            match self.kind {
                Some(LineKind::Other) => out.extend_from_slice(part),
                _ => {
                    self.line.extend_from_slice(part);
                    if self.kind.is_none() {
                        let n = self.line.len().min(EVENT.len());
                        if self.line[..n] != EVENT[..n] {
                            self.kind = Some(LineKind::Other);
                        } else if n == EVENT.len() {
                            self.kind = Some(LineKind::Event);
                        }
                    }
                    let long = self.line.len() > LINE_CAP;
                    if self.kind == Some(LineKind::Other) || (long && !ends) {
                        self.kind = Some(LineKind::Other);
                        out.append(&mut self.line);
                    }
                }
            }
            if !ends {
                continue;
            }
            let line = std::mem::take(&mut self.line);
            self.kind = None;
            match (classify(&line), self.held.as_mut()) {
                (Mark::FinalDelta, None) => self.held = Some(line),
                (Mark::Stop, Some(held)) => {
                    held.extend_from_slice(&line);
                    if !pass.is_empty() {
                        pieces.push(Piece::Pass(std::mem::take(&mut pass)));
                    }
                    pieces.push(Piece::Sealed);
                    pass = self.held.take().unwrap_or_default();
                }
                (_, Some(held)) => held.extend_from_slice(&line),
                (_, None) => pass.extend_from_slice(&line),
            }
            if self.held.as_ref().is_some_and(|h| h.len() > HOLD_CAP) {
                pass.extend(self.held.take().unwrap_or_default());
            }
        }
        if !pass.is_empty() {
            pieces.push(Piece::Pass(pass));
        }
        pieces
    }

    /// The output ended: whatever is held passes (never sealed).
    pub fn finish(&mut self) -> Vec<u8> {
        let mut rest = self.held.take().unwrap_or_default();
        rest.append(&mut self.line);
        self.kind = None;
        rest
    }
}

/// What a line (whole, kept back) is: only a `stream_event` the main thread
/// ends its message with matters. Key order is the API's, so it is parsed.
fn classify(line: &[u8]) -> Mark {
    let finder = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
    if !line.starts_with(EVENT) || !(finder(b"\"message_delta\"") || finder(b"\"message_stop\"")) {
        return Mark::Other;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Mark::Other;
    };
    // A subagent's stream names its parent's tool use.
    if !v["parent_tool_use_id"].is_null() {
        return Mark::Other;
    }
    let event = &v["event"];
    match event["type"].as_str() {
        Some("message_stop") => Mark::Stop,
        Some("message_delta") => match event["delta"]["stop_reason"].as_str() {
            Some("tool_use") | None => Mark::Other,
            Some(_) => Mark::FinalDelta,
        },
        _ => Mark::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELTA: &str = r#"{"type":"content_block_delta","x":1}"#;
    fn event(body: &str, parent: &str) -> String {
        format!(
            "{{\"type\":\"stream_event\",\"event\":{{\"type\":{body}}},\"session_id\":\"S\",\"parent_tool_use_id\":{parent},\"uuid\":\"u\"}}\n"
        )
    }

    /// The output as pieces, fed in chunks of `step`; pieces of bytes that
    /// follow each other are joined.
    fn pieces(all: &str, step: usize) -> Vec<Piece> {
        let mut s = Sealer::default();
        let mut got: Vec<Piece> = Vec::new();
        let push = |p: Piece, got: &mut Vec<Piece>| match (got.last_mut(), p) {
            (Some(Piece::Pass(a)), Piece::Pass(b)) => a.extend(b),
            (_, p) => got.push(p),
        };
        for c in all.as_bytes().chunks(step) {
            for p in s.feed(c) {
                push(p, &mut got);
            }
        }
        let rest = s.finish();
        if !rest.is_empty() {
            push(Piece::Pass(rest), &mut got);
        }
        got
    }

    fn pass(s: &str) -> Piece {
        Piece::Pass(s.as_bytes().to_vec())
    }

    #[test]
    fn the_final_delta_and_stop_pass_after_the_seal() {
        let before = format!("{DELTA}\n{{\"type\":\"assistant\",\"message\":{{}}}}\n");
        let delta = event(
            r#""message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}"#,
            "null",
        );
        let stop = event(r#""message_stop""#, "null");
        let result = "{\"type\":\"result\",\"result\":\"hi\"}\n";
        let all = format!("{before}{delta}{stop}{result}");
        for step in [1, 3, 17, 64, 159, 160, 161, 4096] {
            assert_eq!(
                pieces(&all, step),
                [
                    pass(&before),
                    Piece::Sealed,
                    pass(&format!("{delta}{stop}{result}"))
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn nothing_is_sealed_mid_turn_nor_for_a_subagent_nor_without_a_stop() {
        let tool = event(
            r#""message_delta","delta":{"stop_reason":"tool_use"}"#,
            "null",
        );
        let sub = event(
            r#""message_delta","delta":{"stop_reason":"end_turn"}"#,
            "\"toolu_1\"",
        );
        let stop = event(r#""message_stop""#, "null");
        let sub_stop = event(r#""message_stop""#, "\"toolu_1\"");
        for all in [
            format!("{DELTA}\n{tool}{stop}{DELTA}\n"),
            format!("{sub}{sub_stop}"),
            stop.clone(),
            // A final delta whose stop never comes: all of it passes at the end.
            event(
                r#""message_delta","delta":{"stop_reason":"max_tokens"}"#,
                "null",
            ),
            "not json\n{\"type\":\"stream_event\"".to_string(),
        ] {
            for step in [1, 5, 4096] {
                assert_eq!(pieces(&all, step), [pass(&all)], "{all} step {step}");
            }
        }
    }

    #[test]
    fn keys_in_any_order() {
        let delta = "{\"type\":\"stream_event\",\"event\":{\"delta\":{\"stop_sequence\":null,\"stop_reason\":\"end_turn\"},\"type\":\"message_delta\"},\"parent_tool_use_id\":null}\n";
        let stop = "{\"type\":\"stream_event\",\"session_id\":\"S\",\"event\":{\"type\":\"message_stop\"}}\n";
        let all = format!("{DELTA}\n{delta}{stop}");
        assert_eq!(
            pieces(&all, 7),
            [
                pass(&format!("{DELTA}\n")),
                Piece::Sealed,
                pass(&format!("{delta}{stop}"))
            ]
        );
    }

    #[test]
    fn a_hold_past_its_cap_lets_go() {
        let delta = event(
            r#""message_delta","delta":{"stop_reason":"end_turn"}"#,
            "null",
        );
        let long = format!(
            "{{\"type\":\"system\",\"x\":\"{}\"}}\n",
            "x".repeat(HOLD_CAP)
        );
        let stop = event(r#""message_stop""#, "null");
        let all = format!("{delta}{long}{stop}");
        let got = pieces(&all, 4096);
        assert_eq!(got, [pass(&all)]);
    }
}
