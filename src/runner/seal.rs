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
    /// The current line's start (enough to classify it), kept back while
    /// undecided.
    head: Vec<u8>,
    /// Held from the final `message_delta` on, while not sealed.
    held: Option<Vec<u8>>,
    /// The current line is the end of a hold (`message_stop`).
    line_ends_hold: bool,
    /// Whether the current line's start was classified.
    classified: bool,
    /// The current line is the delta that started the hold.
    delta_line: bool,
}

/// A line that starts a hold or ends one.
#[derive(Debug, PartialEq, Eq)]
enum Mark {
    FinalDelta,
    Stop,
    Other,
}

/// Enough of a line to classify it (`message_delta` puts its delta's
/// `stop_reason` within its first 100 bytes).
const HEAD: usize = 160;
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
            // A line's start waits until it is classified (the CLI writes
            // whole lines: in practice nothing waits).
            let mut part = part;
            if !self.classified {
                let want = HEAD.saturating_sub(self.head.len()).min(part.len());
                self.head.extend_from_slice(&part[..want]);
                part = &part[want..];
                if self.head.len() < HEAD && !ends {
                    continue;
                }
                self.classified = true;
                match classify(&self.head) {
                    Mark::FinalDelta if self.held.is_none() => {
                        self.held = Some(Vec::new());
                        self.delta_line = true;
                    }
                    Mark::Stop if self.held.is_some() => self.line_ends_hold = true,
                    _ => {}
                }
                match self.held.as_mut() {
                    Some(held) => held.extend_from_slice(&self.head),
                    None => pass.extend_from_slice(&self.head),
                }
                self.head.clear();
            }
            match self.held.as_mut() {
                Some(held) => held.extend_from_slice(part),
                None => pass.extend_from_slice(part),
            }
            if ends && std::mem::take(&mut self.delta_line) {
                // A subagent's stream names its parent's tool use: only the
                // main thread's delta ends the turn.
                let held = self.held.take().unwrap_or_default();
                match find(&held, b"\"parent_tool_use_id\":null").is_some() {
                    true => self.held = Some(held),
                    false => pass.extend(held),
                }
            }
            if ends {
                if self.line_ends_hold {
                    if !pass.is_empty() {
                        pieces.push(Piece::Pass(std::mem::take(&mut pass)));
                    }
                    pieces.push(Piece::Sealed);
                    pass = self.held.take().unwrap_or_default();
                }
                self.head.clear();
                self.classified = false;
                self.line_ends_hold = false;
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
        rest.append(&mut self.head);
        self.classified = false;
        self.delta_line = false;
        rest
    }
}

/// What a line that starts with `head` is.
fn classify(head: &[u8]) -> Mark {
    const EVENT: &[u8] = b"{\"type\":\"stream_event\",\"event\":{\"type\":\"";
    let Some(rest) = head.strip_prefix(EVENT) else {
        return Mark::Other;
    };
    if rest.starts_with(b"message_stop\"") {
        return Mark::Stop;
    }
    let Some(delta) = rest.strip_prefix(b"message_delta\",\"delta\":{") else {
        return Mark::Other;
    };
    // Whose delta it is comes after the event: checked on the whole line.
    match find(delta, b"\"stop_reason\":") {
        Some(at) => {
            let value = &delta[at + b"\"stop_reason\":".len()..];
            if value.starts_with(b"\"tool_use\"") || value.starts_with(b"null") {
                Mark::Other
            } else if value.starts_with(b"\"") {
                Mark::FinalDelta
            } else {
                Mark::Other
            }
        }
        None => Mark::Other,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
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
        let mut push = |p: Piece, got: &mut Vec<Piece>| match (got.last_mut(), p) {
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
        let before = format!(
            "{DELTA}\n{{\"type\":\"assistant\",\"message\":{{}}}}\n"
        );
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
                [pass(&before), Piece::Sealed, pass(&format!("{delta}{stop}{result}"))],
                "step {step}"
            );
        }
    }

    #[test]
    fn nothing_is_sealed_mid_turn_nor_for_a_subagent_nor_without_a_stop() {
        let tool = event(r#""message_delta","delta":{"stop_reason":"tool_use"}"#, "null");
        let sub = event(r#""message_delta","delta":{"stop_reason":"end_turn"}"#, "\"toolu_1\"");
        let stop = event(r#""message_stop""#, "null");
        let sub_stop = event(r#""message_stop""#, "\"toolu_1\"");
        for all in [
            format!("{DELTA}\n{tool}{stop}{DELTA}\n"),
            format!("{sub}{sub_stop}"),
            format!("{stop}"),
            // A final delta whose stop never comes: all of it passes at the end.
            event(r#""message_delta","delta":{"stop_reason":"max_tokens"}"#, "null"),
            "not json\n{\"type\":\"stream_event\"".to_string(),
        ] {
            for step in [1, 5, 4096] {
                assert_eq!(pieces(&all, step), [pass(&all)], "{all} step {step}");
            }
        }
    }

    #[test]
    fn a_hold_past_its_cap_lets_go() {
        let delta = event(r#""message_delta","delta":{"stop_reason":"end_turn"}"#, "null");
        let long = format!("{{\"type\":\"system\",\"x\":\"{}\"}}\n", "x".repeat(HOLD_CAP));
        let stop = event(r#""message_stop""#, "null");
        let all = format!("{delta}{long}{stop}");
        let got = pieces(&all, 4096);
        assert_eq!(got, [pass(&all)]);
    }
}
