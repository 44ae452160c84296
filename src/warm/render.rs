//! What a cold run would have printed, from a live process's stream-json
//! lines for one turn. Checked against the real CLI (2.1.330): a live
//! process prints the same events, keys and key order as a cold run, except
//!
//! - `result_index` counts the results of the process (a cold run: always 0);
//! - `json` output is the result object without `model_usage_since_last_result`
//!   (stream-json's last key);
//! - `text` output is the result text and a newline — or, for
//!   `error_max_turns` (no `result` field), `Error: Reached max turns (N)`
//!   without one;
//! - a cold run whose turn made no successful API call has no
//!   `canonicalModel`, `provider` or `costBasis` in its `modelUsage` entries
//!   (its figures were restored from the session file), a live one has;
//! - a cold resume restores `modelUsage` from the session's `cost-state`
//!   record, in that record's key order; a live process that began the
//!   session fresh keeps its own order from its second turn on.
//!
//! Everything here edits bytes in place: the lines keep their exact layout.

use crate::events::Event;
use crate::invocation::OutputFormat;

/// The caller's output, line by line, for one turn.
pub struct Render {
    format: OutputFormat,
    /// A non-synthetic assistant message came in this turn (an API call
    /// succeeded).
    answered: bool,
    /// Put `modelUsage` entries in the restored order (see module docs).
    restored_order: bool,
}

/// What one line of the live process amounts to for the caller.
#[derive(Debug, PartialEq, Eq)]
pub struct Rendered {
    /// Bytes for the caller's stdout now.
    pub out: Vec<u8>,
    /// The turn's result: it ends the turn, with this exit status.
    pub exit: Option<i32>,
}

impl Render {
    /// `restored_order`: the process began its session fresh and this is
    /// not its first turn.
    pub fn new(format: OutputFormat, restored_order: bool) -> Render {
        Render {
            format,
            answered: false,
            restored_order,
        }
    }

    /// One complete line (with its newline) the live process printed.
    pub fn line(&mut self, line: &[u8]) -> Rendered {
        let event = Event::parse(line);
        let result = match &event {
            Some(Event::Assistant(a)) => {
                if !is_synthetic(line) && a.parent_tool_use_id.is_none() {
                    self.answered = true;
                }
                None
            }
            Some(Event::Result(r)) => Some((
                r.is_error,
                r.subtype.as_deref() == Some("error_max_turns"),
                r.result.as_deref().map(str::to_owned),
                r.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            )),
            _ => None,
        };
        let Some((is_error, max_turns, text, errors)) = result else {
            return Rendered {
                out: match self.format {
                    OutputFormat::StreamJson => line.to_vec(),
                    _ => Vec::new(),
                },
                exit: None,
            };
        };
        let exit = Some(i32::from(is_error));
        let mut fixed = set_result_index_zero(line);
        if is_error && !self.answered {
            fixed = drop_model_usage_provenance(&fixed);
        }
        if self.restored_order {
            fixed = reorder_model_usage(&fixed);
        }
        let out = match self.format {
            OutputFormat::StreamJson => fixed,
            OutputFormat::Json => drop_last_key(&fixed, b"model_usage_since_last_result"),
            OutputFormat::Text => match (text, max_turns) {
                (Some(t), _) => [t.as_bytes(), b"\n"].concat(),
                (None, true) => max_turns_message(&errors).into_bytes(),
                (None, false) => errors.join("\n").into_bytes(),
            },
        };
        Rendered { out, exit }
    }
}

fn is_synthetic(line: &[u8]) -> bool {
    memchr::memmem::find(line, br#""model":"<synthetic>""#).is_some()
}

/// `Error: Reached max turns (N)`, as a cold text run prints it.
fn max_turns_message(errors: &[String]) -> String {
    let n = errors
        .iter()
        .find_map(|e| {
            let rest = e.strip_prefix("Reached maximum number of turns (")?;
            rest.strip_suffix(')').map(str::to_owned)
        })
        .unwrap_or_else(|| "?".into());
    format!("Error: Reached max turns ({n})")
}

/// `"result_index":N` → `"result_index":0`.
fn set_result_index_zero(line: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = br#""result_index":"#;
    let Some(at) = memchr::memmem::find(line, KEY) else {
        return line.to_vec();
    };
    let start = at + KEY.len();
    let end = start
        + line[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    [&line[..start], b"0", &line[end..]].concat()
}

/// The object line without its last key `key` (`,"key":<value>}` → `}`).
fn drop_last_key(line: &[u8], key: &[u8]) -> Vec<u8> {
    let needle = [b",\"", key, b"\":"].concat();
    match memchr::memmem::rfind(line, &needle) {
        Some(at) => {
            // The value runs to the object's closing brace at the line's end.
            let close = line.iter().rposition(|&b| b == b'}').unwrap_or(line.len());
            [&line[..at], &line[close..]].concat()
        }
        None => line.to_vec(),
    }
}

/// Keys of a `cost-state` record's `modelUsage` entry, in its order (2.1.330);
/// a resume restores them first, other keys follow as the CLI adds them.
const RESTORED: &[&str] = &[
    "inputTokens",
    "outputTokens",
    "thinkingTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "cacheCreationEphemeral5mInputTokens",
    "cacheCreationEphemeral1hInputTokens",
    "webSearchRequests",
    "costUSD",
];

/// Each entry of the result's `modelUsage` with its keys in restored order.
/// Entries are flat objects of numbers and plain strings.
fn reorder_model_usage(line: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = br#""modelUsage":{"#;
    let Some(at) = memchr::memmem::find(line, KEY) else {
        return line.to_vec();
    };
    let mut out = line[..at + KEY.len()].to_vec();
    let mut i = at + KEY.len();
    // Each `"model":{…}` entry until the object's closing brace.
    while i < line.len() && line[i] != b'}' {
        let Some(open) = memchr::memchr(b'{', &line[i..]).map(|o| i + o) else {
            return line.to_vec();
        };
        let Some(close) = memchr::memchr(b'}', &line[open..]).map(|o| open + o) else {
            return line.to_vec();
        };
        out.extend_from_slice(&line[i..=open]);
        let fields = split_fields(&line[open + 1..close]);
        let mut ordered: Vec<&[u8]> = Vec::with_capacity(fields.len());
        for k in RESTORED {
            let name = format!("\"{k}\":");
            if let Some(f) = fields.iter().find(|f| f.starts_with(name.as_bytes())) {
                ordered.push(f);
            }
        }
        for f in &fields {
            if !ordered.iter().any(|o| std::ptr::eq(*o, *f)) {
                ordered.push(f);
            }
        }
        out.extend_from_slice(&ordered.join(&b","[..]));
        out.push(b'}');
        i = close + 1;
        if line.get(i) == Some(&b',') {
            out.push(b',');
            i += 1;
        }
    }
    out.extend_from_slice(&line[i..]);
    out
}

/// `"a":1,"b":"x,y"` → its fields, commas inside strings kept.
fn split_fields(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut in_str, mut escaped) = (0, false, false);
    for (i, &b) in body.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if in_str => escaped = true,
            b'"' => in_str = !in_str,
            b',' if !in_str => {
                out.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < body.len() {
        out.push(&body[start..]);
    }
    out
}

/// `modelUsage` entries without the fields a cold error turn lacks.
fn drop_model_usage_provenance(line: &[u8]) -> Vec<u8> {
    let mut out = line.to_vec();
    for key in [&b"canonicalModel"[..], b"provider", b"costBasis"] {
        let needle = [b",\"", key, b"\":\""].concat();
        while let Some(at) = memchr::memmem::find(&out, &needle) {
            let value = at + needle.len();
            let Some(len) = memchr::memchr(b'"', &out[value..]) else {
                break;
            };
            out.drain(at..value + len + 1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const INIT: &str = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S\"}\n";
    const ASSISTANT: &str = "{\"type\":\"assistant\",\"message\":{\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},\"parent_tool_use_id\":null}\n";
    const RESULT: &str = "{\"duration_api_ms\":1,\"modelUsage\":{\"m\":{\"costUSD\":1,\"canonicalModel\":\"m\",\"provider\":\"firstParty\",\"costBasis\":\"list\"}},\"is_error\":false,\"subtype\":\"success\",\"result\":\"hi\",\"type\":\"result\",\"result_index\":3,\"model_usage_since_last_result\":{\"m\":{\"costUSD\":1}}}\n";

    fn render(format: OutputFormat, lines: &[&str]) -> (String, Option<i32>) {
        let mut r = Render::new(format, false);
        let mut out = Vec::new();
        let mut exit = None;
        for l in lines {
            let got = r.line(l.as_bytes());
            out.extend(got.out);
            exit = exit.or(got.exit);
        }
        (String::from_utf8(out).unwrap(), exit)
    }

    #[test]
    fn each_format_as_a_cold_run_prints_it() {
        let (s, exit) = render(OutputFormat::StreamJson, &[INIT, ASSISTANT, RESULT]);
        assert_eq!(
            s,
            [
                INIT,
                ASSISTANT,
                &RESULT.replace("\"result_index\":3", "\"result_index\":0")
            ]
            .concat()
        );
        assert_eq!(exit, Some(0));
        let (s, _) = render(OutputFormat::Json, &[INIT, ASSISTANT, RESULT]);
        assert_eq!(
            s,
            "{\"duration_api_ms\":1,\"modelUsage\":{\"m\":{\"costUSD\":1,\"canonicalModel\":\"m\",\"provider\":\"firstParty\",\"costBasis\":\"list\"}},\"is_error\":false,\"subtype\":\"success\",\"result\":\"hi\",\"type\":\"result\",\"result_index\":0}\n"
        );
        let (s, _) = render(OutputFormat::Text, &[INIT, ASSISTANT, RESULT]);
        assert_eq!(s, "hi\n");
    }

    #[test]
    fn errors_exit_1_and_max_turns_prints_the_cli_message() {
        let max = "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,\"errors\":[\"Reached maximum number of turns (1)\"],\"result_index\":1}\n";
        let (s, exit) = render(OutputFormat::Text, &[INIT, ASSISTANT, max]);
        assert_eq!(
            (s.as_str(), exit),
            ("Error: Reached max turns (1)", Some(1))
        );
        // An API error with no successful call: modelUsage as a cold run has it.
        let synthetic = "{\"type\":\"assistant\",\"message\":{\"model\":\"<synthetic>\",\"content\":[{\"type\":\"text\",\"text\":\"API Error\"}]}}\n";
        let err = RESULT
            .replace("\"is_error\":false", "\"is_error\":true")
            .replace("\"result\":\"hi\"", "\"result\":\"API Error\"");
        let (s, exit) = render(OutputFormat::StreamJson, &[INIT, synthetic, &err]);
        assert_eq!(exit, Some(1));
        assert!(s.contains("\"m\":{\"costUSD\":1}},\"is_error\""), "{s}");
        let (s, _) = render(OutputFormat::Text, &[INIT, synthetic, &err]);
        assert_eq!(s, "API Error\n");
        // …but a turn that had a successful call keeps them.
        let (s, _) = render(OutputFormat::StreamJson, &[INIT, ASSISTANT, &err]);
        assert!(s.contains("\"costBasis\":\"list\""), "{s}");
    }

    #[test]
    fn model_usage_in_the_order_a_resume_restores() {
        let live = "{\"modelUsage\":{\"m\":{\"inputTokens\":1,\"outputTokens\":2,\"cacheReadInputTokens\":3,\"webSearchRequests\":0,\"costUSD\":0.5,\"contextWindow\":9,\"thinkingTokens\":4,\"canonicalModel\":\"m,x\"},\"n\":{\"costUSD\":1,\"inputTokens\":2}},\"type\":\"result\",\"is_error\":false,\"result\":\"r\"}\n";
        let mut r = Render::new(OutputFormat::Json, true);
        let out = String::from_utf8(r.line(live.as_bytes()).out).unwrap();
        assert_eq!(
            out,
            "{\"modelUsage\":{\"m\":{\"inputTokens\":1,\"outputTokens\":2,\"thinkingTokens\":4,\"cacheReadInputTokens\":3,\"webSearchRequests\":0,\"costUSD\":0.5,\"contextWindow\":9,\"canonicalModel\":\"m,x\"},\"n\":{\"inputTokens\":2,\"costUSD\":1}},\"type\":\"result\",\"is_error\":false,\"result\":\"r\"}\n"
        );
    }
}
