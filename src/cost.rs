//! The call's own cost, in the `result` the caller reads. A resumed session's
//! `total_cost_usd` and `modelUsage` are the session's running totals (the
//! CLI restores them from the session file, and a live process keeps adding
//! to them). Without the shim a replaying caller makes a fresh call every
//! turn, whose figures are that call's alone — and proxies report or add up
//! those per-call figures. So the shim makes them the call's own again, in
//! cold and warm turns alike, wherever it resumed a session the caller did
//! not (a caller's own `--resume` sees the CLI's totals, as without the shim).
//!
//! The call's own figures come from the result itself where the CLI prints
//! them (`model_usage_since_last_result`, stream-json and live processes), or
//! else as the difference from the running totals the CLI restored (the
//! session's last `cost-state` record, read before the run). Only the two
//! values are replaced; every other byte of the line is left as it was.
//! `modelUsage` keeps the key order of a fresh call's (checked on 2.1.330).

use serde_json::{Map, Value};
use std::ops::Range;

/// The running totals a resumed run starts from: its session's last
/// `cost-state` record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Base {
    pub total: f64,
    pub model_usage: Map<String, Value>,
}

impl Base {
    /// From a `cost-state` record's JSON.
    pub fn of_record(v: &Value) -> Option<Base> {
        (v.get("type")?.as_str()? == "cost-state").then(|| Base {
            total: v.get("totalCostUSD").and_then(Value::as_f64).unwrap_or(0.0),
            model_usage: v
                .get("modelUsage")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        })
    }
}

/// A run whose result's cost figures are made the call's own: `base` is
/// what the CLI restored (`None`: unknown; then only figures the result
/// itself carries are used).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Own {
    pub base: Option<Base>,
}

/// The running totals a resume of the session file `path` starts from (its
/// last `cost-state` record; zero when it has none). `None`: the file cannot
/// be read.
pub fn saved(path: &std::path::Path) -> Option<Base> {
    std::fs::metadata(path).ok()?;
    Some(
        crate::sessions::from_tail(path, |line| {
            memchr::memmem::find(line, b"\"cost-state\"")?;
            Base::of_record(&serde_json::from_slice(line).ok()?)
        })
        .unwrap_or_default(),
    )
}

impl Own {
    /// For a run that resumes `session` (its file under `config_dir`).
    pub fn resuming(config_dir: &std::path::Path, session: &str) -> Own {
        Own {
            base: crate::sessions::find(config_dir, session).and_then(|f| saved(&f)),
        }
    }

    /// `line` as the caller gets it.
    pub fn line<'a>(&self, line: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        match own_call(line, self.base.as_ref()) {
            Some(fixed) => std::borrow::Cow::Owned(fixed),
            None => std::borrow::Cow::Borrowed(line),
        }
    }
}

/// Keys of a `modelUsage` entry in a fresh call's order (2.1.330); keys not
/// listed follow in their own order.
const FRESH_ORDER: &[&str] = &[
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "webSearchRequests",
    "costUSD",
    "contextWindow",
    "maxOutputTokens",
    "thinkingTokens",
    "cacheCreationEphemeral5mInputTokens",
    "cacheCreationEphemeral1hInputTokens",
    "canonicalModel",
    "provider",
    "costBasis",
];

/// Entry keys that count up over a session (the rest describe the model).
const COUNTERS: &[&str] = &[
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "webSearchRequests",
    "costUSD",
    "thinkingTokens",
    "cacheCreationEphemeral5mInputTokens",
    "cacheCreationEphemeral1hInputTokens",
];

/// `line` (one output line) with its result's cost figures made the call's
/// own; `None`: not a result, or nothing to change or to go by.
pub fn own_call(line: &[u8], base: Option<&Base>) -> Option<Vec<u8>> {
    // Results are the only lines that carry the totals; cheap test first.
    memchr::memmem::find(line, b"\"total_cost_usd\":")?;
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("type")?.as_str()? != "result" {
        return None;
    }
    let (usage, total) = match v.get("model_usage_since_last_result") {
        Some(Value::Object(own)) => {
            let span = top_level_value(line, "model_usage_since_last_result")?;
            let total: f64 = own
                .values()
                .filter_map(|e| e.get("costUSD")?.as_f64())
                .sum();
            (line[span].to_vec(), total)
        }
        _ => {
            let base = base?;
            let now = v.get("modelUsage")?.as_object()?;
            let total = v.get("total_cost_usd")?.as_f64()? - base.total;
            (difference(now, &base.model_usage)?, total)
        }
    };
    let mut out = line.to_vec();
    // The later span first, so the earlier one's offsets still hold.
    let mut edits = vec![
        (top_level_value(line, "modelUsage")?, usage),
        (
            top_level_value(line, "total_cost_usd")?,
            js_number(round(total.max(0.0))).into_bytes(),
        ),
    ];
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    for (range, bytes) in edits {
        out.splice(range, bytes);
    }
    Some(out)
}

/// The results of one call that a live process serves: after the first, a
/// cold process (which started with the call) prints running totals — the
/// usage of every result of the call so far — where the live one prints its
/// own since it started. So the usage since the last result is summed here.
#[derive(Default)]
pub struct Running {
    usage: Map<String, Value>,
    total: f64,
    results: usize,
}

impl Running {
    /// `line` with the call's totals when it is a result after the call's
    /// first (the first is the call's own: see [`own_call`]); `None`: not
    /// such a result, or not one that can be summed.
    pub fn line(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        memchr::memmem::find(line, b"\"total_cost_usd\":")?;
        let v: Value = serde_json::from_slice(line).ok()?;
        if v.get("type")?.as_str()? != "result" {
            return None;
        }
        let since = v.get("model_usage_since_last_result")?.as_object()?;
        for (model, entry) in since {
            let sum = self
                .usage
                .entry(model.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            let (Some(sum), Some(entry)) = (sum.as_object_mut(), entry.as_object()) else {
                return None;
            };
            for (k, value) in entry {
                let added = match (COUNTERS.contains(&k.as_str()), value) {
                    (true, Value::Number(n)) => {
                        let was = sum.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                        number_like(n, was + n.as_f64()?)
                    }
                    _ => value.clone(),
                };
                sum.insert(k.clone(), added);
            }
            self.total += entry.get("costUSD").and_then(Value::as_f64).unwrap_or(0.0);
        }
        self.results += 1;
        if self.results == 1 {
            return None;
        }
        let usage = difference(&self.usage, &Map::new())?;
        let mut out = line.to_vec();
        let mut edits = vec![
            (top_level_value(line, "modelUsage")?, usage),
            (
                top_level_value(line, "total_cost_usd")?,
                js_number(round(self.total)).into_bytes(),
            ),
        ];
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        for (range, bytes) in edits {
            out.splice(range, bytes);
        }
        Some(out)
    }
}

/// `now` minus `base`, per model: the models this call used, in a fresh
/// call's key order. `None` when `base` is not where `now` came from (a
/// counter would go below zero).
fn difference(now: &Map<String, Value>, base: &Map<String, Value>) -> Option<Vec<u8>> {
    let mut entries: Vec<String> = Vec::new();
    for (model, entry) in now {
        let entry = entry.as_object()?;
        let before = base.get(model).and_then(Value::as_object);
        let mut fields: Vec<(&str, Value)> = Vec::new();
        let mut used = false;
        for (k, value) in entry {
            let value = match (COUNTERS.contains(&k.as_str()), value) {
                (true, Value::Number(n)) => {
                    let was = before.and_then(|b| b.get(k)).and_then(Value::as_f64);
                    let d = n.as_f64()? - was.unwrap_or(0.0);
                    if d < -1e-9 {
                        return None;
                    }
                    used |= d > 1e-12;
                    number_like(n, d)
                }
                _ => value.clone(),
            };
            fields.push((k, value));
        }
        if !used {
            continue;
        }
        fields.sort_by_key(|(k, _)| {
            FRESH_ORDER
                .iter()
                .position(|f| f == k)
                .unwrap_or(usize::MAX)
        });
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}:{}", Value::from(*k), js_value(v)))
            .collect();
        entries.push(format!(
            "{}:{{{}}}",
            Value::from(model.as_str()),
            body.join(",")
        ));
    }
    Some(format!("{{{}}}", entries.join(",")).into_bytes())
}

/// `d` as the kind of number `like` was: a whole count stays whole.
fn number_like(like: &serde_json::Number, d: f64) -> Value {
    if like.is_u64() || like.is_i64() {
        Value::from(d.round() as i64)
    } else {
        Value::from(round(d))
    }
}

/// A cost to 12 decimals: the difference of two running totals carries the
/// float noise of both (0.022000000000000002 − 0.0176).
fn round(x: f64) -> f64 {
    (x * 1e12).round() / 1e12
}

fn js_value(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => js_number(n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    }
}

/// A number as JavaScript prints it (the CLI is JavaScript): integers bare,
/// shortest round-trip digits, exponent form below 1e-6.
pub fn js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if x.fract() == 0.0 && x.abs() < 1e21 {
        return format!("{}", x as i64);
    }
    if x.abs() < 1e-6 {
        return format!("{x:e}");
    }
    format!("{x}")
}

/// Where the value of the top-level `key` of a one-line JSON object lies.
fn top_level_value(line: &[u8], key: &str) -> Option<Range<usize>> {
    let quoted = Value::from(key).to_string();
    let mut depth = 0usize;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i)?;
                if depth == 1 && &line[i..end] == quoted.as_bytes() && line.get(end) == Some(&b':')
                {
                    let start = end + 1;
                    return Some(start..value_end(line, start)?);
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Just past the string that starts at `at` (its opening quote).
fn string_end(line: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Just past the JSON value that starts at `at`.
fn value_end(line: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    while i < line.len() {
        match line[i] {
            b'"' => {
                i = string_end(line, i)?;
                if depth == 0 {
                    return Some(i);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// What of a call's system prompt depends on its conversation. Claude Code
/// (2.1.330) sends `x-anthropic-billing-header: cc_version=<version>.<fp>`
/// as the system prompt's first block, where `fp` is three hex digits of
/// sha256(a salt, the UTF-16 units 4, 7 and 20 of the first text of the
/// first user message that is not meta — `"0"` past its end — and the
/// version). Calls whose keys differ send different system prompts, so the
/// later one reads nothing the earlier one cached (tools, system prompt)
/// and writes it all anew. `CLAUDE_CODE_ATTRIBUTION_HEADER=0` (`false`,
/// `no`, `off`) drops the block.
pub fn system_key(first_message: &str) -> [u16; 3] {
    let unit = |i: usize| {
        first_message
            .encode_utf16()
            .nth(i)
            .unwrap_or(u16::from(b'0'))
    };
    [unit(4), unit(7), unit(20)]
}

/// Whether a call whose first user message is `now` sends another system
/// prompt than the call before it, whose first user message was `previous`
/// (see [`system_key`]). `header`: the CLI sends the billing header.
pub fn system_differs(previous: &str, now: &str, header: bool) -> bool {
    header && system_key(previous) != system_key(now)
}

/// Whether the CLI sends the billing header, given its
/// `CLAUDE_CODE_ATTRIBUTION_HEADER`: not when that is 0, false, no or off.
pub fn sends_billing_header(setting: Option<&str>) -> bool {
    !setting.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "claude-opus-5-5";

    fn entry(input: u64, cost: f64, restored: bool) -> String {
        let output = input / 50;
        match restored {
            // A resume's restored entry order.
            true => format!(
                r#"{{"inputTokens":{input},"outputTokens":{output},"thinkingTokens":0,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"cacheCreationEphemeral5mInputTokens":0,"cacheCreationEphemeral1hInputTokens":0,"webSearchRequests":0,"costUSD":{},"contextWindow":1000000,"maxOutputTokens":128000,"canonicalModel":"{MODEL}","provider":"firstParty","costBasis":"list"}}"#,
                js_number(cost)
            ),
            false => format!(
                r#"{{"inputTokens":{input},"outputTokens":{output},"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":{},"contextWindow":1000000,"maxOutputTokens":128000,"thinkingTokens":0,"cacheCreationEphemeral5mInputTokens":0,"cacheCreationEphemeral1hInputTokens":0,"canonicalModel":"{MODEL}","provider":"firstParty","costBasis":"list"}}"#,
                js_number(cost)
            ),
        }
    }

    fn result(total: &str, usage: &str, own: Option<&str>) -> String {
        let own = own
            .map(|o| format!(r#","model_usage_since_last_result":{o}"#))
            .unwrap_or_default();
        format!(
            r#"{{"duration_api_ms":55,"session_id":"S","total_cost_usd":{total},"usage":{{"input_tokens":1000}},"modelUsage":{usage},"is_error":false,"subtype":"success","result":"say \"total_cost_usd\":9 {{\"modelUsage\":1}}","type":"result","result_index":0{own}}}"#
        )
    }

    #[test]
    fn stream_json_takes_the_calls_own_figures_from_the_result() {
        let running = format!(r#"{{"{MODEL}":{}}}"#, entry(3000, 0.0132, true));
        let own = format!(r#"{{"{MODEL}":{}}}"#, entry(1000, 0.0044, false));
        let line = result("0.0132", &running, Some(&own));
        let got = String::from_utf8(own_call(line.as_bytes(), None).unwrap()).unwrap();
        assert_eq!(got, result("0.0044", &own, Some(&own)));
    }

    #[test]
    fn json_subtracts_the_restored_totals_in_a_fresh_calls_order() {
        let running = format!(
            r#"{{"{MODEL}":{}}}"#,
            entry(5000, 0.022000000000000002, true)
        );
        let base = Base::of_record(
            &serde_json::from_str(&format!(
                r#"{{"type":"cost-state","totalCostUSD":0.0176,"modelUsage":{{"{MODEL}":{}}}}}"#,
                entry(4000, 0.0176, true)
            ))
            .unwrap(),
        )
        .unwrap();
        let line = result("0.022000000000000002", &running, None);
        let got = String::from_utf8(own_call(line.as_bytes(), Some(&base)).unwrap()).unwrap();
        let own = format!(r#"{{"{MODEL}":{}}}"#, entry(1000, 0.0044, false));
        assert_eq!(got, result("0.0044", &own, None));
        // Without a base nothing can be said: the line is left alone.
        assert!(own_call(line.as_bytes(), None).is_none());
        // A base that is not where the totals came from (they would go
        // below zero): left alone.
        let wrong = Base {
            total: 1.0,
            model_usage: serde_json::from_str(&format!(
                r#"{{"{MODEL}":{}}}"#,
                entry(9000, 1.0, true)
            ))
            .unwrap(),
        };
        assert!(own_call(line.as_bytes(), Some(&wrong)).is_none());
    }

    #[test]
    fn models_this_call_did_not_use_are_left_out() {
        let running = format!(
            r#"{{"old-model":{},"{MODEL}":{}}}"#,
            entry(500, 0.001, true),
            entry(2000, 0.0088, true)
        );
        let base = Base {
            total: 0.0054,
            model_usage: serde_json::from_str(&format!(
                r#"{{"old-model":{},"{MODEL}":{}}}"#,
                entry(500, 0.001, true),
                entry(1000, 0.0044, true)
            ))
            .unwrap(),
        };
        let line = result("0.0098", &running, None);
        let got = String::from_utf8(own_call(line.as_bytes(), Some(&base)).unwrap()).unwrap();
        let own = format!(r#"{{"{MODEL}":{}}}"#, entry(1000, 0.0044, false));
        assert_eq!(got, result("0.0044", &own, None));
    }

    #[test]
    fn other_lines_are_left_alone() {
        let init = r#"{"type":"system","subtype":"init","session_id":"S"}"#;
        assert!(own_call(init.as_bytes(), None).is_none());
        let quoting = r#"{"type":"assistant","message":{"text":"\"total_cost_usd\":1"}}"#;
        assert!(own_call(quoting.as_bytes(), Some(&Base::default())).is_none());
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (x, js) in [
            (0.0, "0"),
            (0.0044, "0.0044"),
            (3.0, "3"),
            (0.000001, "0.000001"),
            (5e-7, "5e-7"),
            (0.022000000000000002, "0.022000000000000002"),
        ] {
            assert_eq!(js_number(x), js, "{x}");
        }
        assert_eq!(round(0.022000000000000002 - 0.0176), 0.0044);
    }

    #[test]
    fn the_system_key_is_three_utf16_units_of_the_first_message() {
        // As the bench's LangChain client sends turns 1 and 2.
        let bare = "Question 1: please look at part 1 of the plan";
        let replay = "User: Question 1: please look at part 1\n\nAssistant: r\n\nUser: q2";
        assert_eq!(
            system_key(bare),
            [u16::from(b't'), u16::from(b'n'), u16::from(b'o')]
        );
        assert!(system_differs(bare, replay, true));
        // Later replays start alike: the same system prompt.
        assert!(!system_differs(
            replay,
            &format!("{replay}\n\nAssistant: r2"),
            true
        ));
        // Short messages: "0" past the end, as the CLI pads.
        assert_eq!(system_key("abcd0"), [u16::from(b'0'); 3]);
        assert!(!system_differs("abcd0", "abcd", true));
        // Units, not chars: an astral char takes two.
        assert_eq!(system_key("\u{1F600}abcdefg")[1], u16::from(b'f'));
        // No billing header: the system prompt never differs.
        assert!(!system_differs(bare, replay, false));
        assert!(sends_billing_header(None));
        assert!(sends_billing_header(Some("1")));
        assert!(!sends_billing_header(Some(" Off")));
    }
}
