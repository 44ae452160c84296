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
//! - `total_cost_usd` and `modelUsage` are the process's running totals: the
//!   caller gets its call's own (see `crate::cost`), as from a fresh call.
//!
//! Everything here edits bytes in place: the lines keep their exact layout.

use crate::cost::Own;
use crate::events::Event;
use crate::invocation::OutputFormat;

/// The caller's output, line by line, for one turn.
pub struct Render {
    format: OutputFormat,
    /// How the result's cost figures are made the call's own (a live
    /// process's results carry them: no base is needed).
    pub own_cost: Option<Own>,
    /// Results printed so far, and their usage (a call may get several).
    results: usize,
    running: crate::cost::Running,
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
    pub fn new(format: OutputFormat) -> Render {
        Render {
            format,
            own_cost: Some(Own::default()),
            results: 0,
            running: Default::default(),
        }
    }

    /// One complete line (with its newline) the live process printed.
    pub fn line(&mut self, line: &[u8]) -> Rendered {
        let result = match Event::parse(line) {
            Some(Event::Result(r)) => Some((
                r.is_error,
                r.subtype.as_deref().unwrap_or("").to_owned(),
                r.result.as_deref().map(str::to_owned),
                r.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            )),
            _ => None,
        };
        let Some((is_error, subtype, text, errors)) = result else {
            return Rendered {
                out: match self.format {
                    OutputFormat::StreamJson => line.to_vec(),
                    _ => Vec::new(),
                },
                exit: None,
            };
        };
        let exit = Some(i32::from(is_error));
        // Numbered, and costed, as a process that started with the call.
        let mut fixed = set_result_index(line, self.results);
        self.results += 1;
        if let Some(own) = &self.own_cost {
            fixed = match self.running.line(&fixed) {
                Some(totals) => totals,
                None => own.line(&fixed).into_owned(),
            };
        }
        let out = match self.format {
            OutputFormat::StreamJson => fixed,
            OutputFormat::Json => drop_last_key(&fixed, b"model_usage_since_last_result"),
            OutputFormat::Text => text_output(&subtype, text.as_deref(), &errors).into_bytes(),
        };
        Rendered { out, exit }
    }
}

/// A result as a cold `--output-format text` run prints it (2.1.330's
/// printer): a success's text with a newline; a fixed line per error.
fn text_output(subtype: &str, text: Option<&str>, errors: &[String]) -> String {
    match (subtype, text) {
        ("success", Some(t)) if t.ends_with('\n') => t.to_owned(),
        ("success", Some(t)) => format!("{t}\n"),
        ("error_during_execution", _) => "Execution error".into(),
        ("error_max_turns", _) => max_turns_message(errors),
        ("error_max_structured_output_retries", _) => format!(
            "Error: {}",
            errors.first().map_or(
                "Failed to provide valid structured output after maximum retries",
                String::as_str
            )
        ),
        (_, Some(t)) => format!("{t}\n"),
        (other, None) => format!("Error: {}", errors.first().map_or(other, String::as_str)),
    }
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
fn set_result_index(line: &[u8], index: usize) -> Vec<u8> {
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
    [&line[..start], index.to_string().as_bytes(), &line[end..]].concat()
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

#[cfg(test)]
mod tests {
    use super::*;

    const INIT: &str = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S\"}\n";
    const ASSISTANT: &str = "{\"type\":\"assistant\",\"message\":{\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},\"parent_tool_use_id\":null}\n";
    /// A live process's third result: running totals, and the turn's own.
    const RESULT: &str = "{\"duration_api_ms\":1,\"total_cost_usd\":3,\"modelUsage\":{\"m\":{\"inputTokens\":30,\"costUSD\":3}},\"is_error\":false,\"subtype\":\"success\",\"result\":\"hi\",\"type\":\"result\",\"result_index\":3,\"model_usage_since_last_result\":{\"m\":{\"inputTokens\":10,\"costUSD\":1}}}\n";
    /// The same as a fresh call prints it.
    const OWN: &str = "{\"duration_api_ms\":1,\"total_cost_usd\":1,\"modelUsage\":{\"m\":{\"inputTokens\":10,\"costUSD\":1}},\"is_error\":false,\"subtype\":\"success\",\"result\":\"hi\",\"type\":\"result\",\"result_index\":0,\"model_usage_since_last_result\":{\"m\":{\"inputTokens\":10,\"costUSD\":1}}}\n";

    fn render(format: OutputFormat, lines: &[&str]) -> (String, Option<i32>) {
        let mut r = Render::new(format);
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
    fn each_format_as_a_fresh_cold_run_prints_it() {
        let (s, exit) = render(OutputFormat::StreamJson, &[INIT, ASSISTANT, RESULT]);
        assert_eq!(s, [INIT, ASSISTANT, OWN].concat());
        assert_eq!(exit, Some(0));
        let (s, _) = render(OutputFormat::Json, &[INIT, ASSISTANT, RESULT]);
        assert_eq!(
            s,
            OWN.replace(
                ",\"model_usage_since_last_result\":{\"m\":{\"inputTokens\":10,\"costUSD\":1}}",
                ""
            )
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
        // An API error: the turn's own figures are none, as a fresh call's.
        let synthetic = "{\"type\":\"assistant\",\"message\":{\"model\":\"<synthetic>\",\"content\":[{\"type\":\"text\",\"text\":\"API Error\"}]}}\n";
        let err = RESULT
            .replace("\"is_error\":false", "\"is_error\":true")
            .replace("\"result\":\"hi\"", "\"result\":\"API Error\"")
            .replace(
                "\"model_usage_since_last_result\":{\"m\":{\"inputTokens\":10,\"costUSD\":1}}",
                "\"model_usage_since_last_result\":{}",
            );
        let (s, exit) = render(OutputFormat::StreamJson, &[INIT, synthetic, &err]);
        assert_eq!(exit, Some(1));
        assert!(
            s.contains("\"total_cost_usd\":0,\"modelUsage\":{},\"is_error\":true"),
            "{s}"
        );
        let (s, _) = render(OutputFormat::Text, &[INIT, synthetic, &err]);
        assert_eq!(s, "API Error\n");
        // An interrupted turn, as SIGINT leaves a cold text run.
        let stopped = "{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,\"errors\":[\"[ede_diagnostic] result_type=user\"],\"result_index\":2}\n";
        let (s, exit) = render(OutputFormat::Text, &[INIT, stopped]);
        assert_eq!((s.as_str(), exit), ("Execution error", Some(1)));
        // A text that ends with a newline gets no second one.
        let ends = RESULT.replace("\"result\":\"hi\"", "\"result\":\"hi\\n\"");
        let (s, _) = render(OutputFormat::Text, &[INIT, &ends]);
        assert_eq!(s, "hi\n");
    }
}
