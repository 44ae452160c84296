//! What the model is asked, compared: the main requests a scenario made
//! directly and through the shim must be the same field for field, except
//! `messages` (the shim sends a resumed session its new message; the direct
//! call replays the transcript) and `metadata.user_id` (it names the
//! session), and with the same `anthropic-beta` and user agent headers.
//! Paths of each side's sandbox and its random ids are masked alike.

use super::api::LoggedRequest;
use super::sandbox::Sandbox;
use serde_json::Value;

/// Headers compared (the others carry ids, retry counts and timings).
pub const HEADERS: &[&str] = &["anthropic-beta", "anthropic-version", "user-agent", "x-app"];

/// One side of the comparison: its main requests, masked with its sandbox.
pub struct Asked {
    pub requests: Vec<Value>,
}

impl Asked {
    /// `requests`: a server's log (its main requests are taken, in order).
    pub fn of(sb: &Sandbox, requests: &[LoggedRequest]) -> Asked {
        Asked {
            requests: requests
                .iter()
                .filter(|r| r.is_main())
                .map(|r| comparable(sb, r))
                .collect(),
        }
    }
}

/// A request as compared: its body without `messages` and
/// `metadata.user_id`, its compared headers under `headers`, and every
/// string masked (the sandbox's paths, random ids).
pub fn comparable(sb: &Sandbox, r: &LoggedRequest) -> Value {
    let mut body = r.body.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("messages");
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("user_id");
        }
        let headers: serde_json::Map<String, Value> = HEADERS
            .iter()
            .map(|h| {
                let v = r.header(h).map_or(Value::Null, Value::from);
                (format!("header {h}"), v)
            })
            .collect();
        o.insert("headers".into(), Value::Object(headers));
    }
    mask_strings(sb, &mut body);
    mask_fingerprint(r, &mut body);
    body
}

/// The billing header's `cc_version=<release>.<xyz>`: `xyz` is the CLI's
/// fingerprint of the first user message's text (sha256 of a salt, its
/// characters 4, 7 and 20, and the release; 2.1.330), so a part of the
/// messages. Masked when it is that of this request's own first message.
fn mask_fingerprint(r: &LoggedRequest, body: &mut Value) {
    use sha2::{Digest, Sha256};
    let Some(first) = r.messages().iter().find(|m| m["role"] == "user") else {
        return;
    };
    let texts: Vec<String> = match &first["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let Some(system) = body["system"].as_array_mut() else {
        return;
    };
    for block in system {
        let Some(text) = block["text"].as_str() else {
            continue;
        };
        let Some(rest) = text.strip_prefix("x-anthropic-billing-header: cc_version=") else {
            continue;
        };
        let Some((version, tail)) = rest.split_once(';') else {
            continue;
        };
        let Some((release, print)) = version.rsplit_once('.') else {
            continue;
        };
        let of = |t: &str| {
            let chars: Vec<char> = t.chars().collect();
            let picked: String = [4, 7, 20]
                .iter()
                .map(|i| chars.get(*i).copied().unwrap_or('0'))
                .collect();
            let h = Sha256::digest(format!("59cf53e54c78{picked}{release}"));
            hex::encode(h)[..3].to_owned()
        };
        if texts.iter().any(|t| of(t) == print) {
            block["text"] = Value::from(format!(
                "x-anthropic-billing-header: cc_version={release}.<first message>;{tail}"
            ));
        }
    }
}

fn mask_strings(sb: &Sandbox, v: &mut Value) {
    match v {
        Value::String(s) => *s = sb.mask(s),
        Value::Array(a) => a.iter_mut().for_each(|x| mask_strings(sb, x)),
        Value::Object(o) => o.values_mut().for_each(|x| mask_strings(sb, x)),
        _ => {}
    }
}

/// Every difference between two sides: the request's number, the field's
/// path (array items that have a `name` by their name, as `tools[Bash]`)
/// and the two values. Empty: the model was asked the same.
pub fn differences(direct: &Asked, shim: &Asked) -> Vec<String> {
    let mut out = Vec::new();
    if direct.requests.len() != shim.requests.len() {
        out.push(format!(
            "main requests: {} directly, {} through the shim",
            direct.requests.len(),
            shim.requests.len()
        ));
    }
    for (i, (a, b)) in direct.requests.iter().zip(&shim.requests).enumerate() {
        diff(&format!("request {}", i + 1), a, b, &mut out);
    }
    out
}

/// Panics with every difference (see [`differences`]); `except`: field
/// paths (prefixes, after the request's number) known to differ on this
/// path (they may; a release may not differ there).
pub fn assert_same(what: &str, direct: &Asked, shim: &Asked, except: &[&str]) {
    let found = differences(direct, shim);
    // "request 3.tools[Bash].description: …" → "tools[Bash].description".
    let field = |d: &str| {
        d.split_once(": ")
            .and_then(|(p, _)| p.split_once('.'))
            .map(|(_, f)| f.to_owned())
            .unwrap_or_default()
    };
    let excepted = |d: &str| except.iter().any(|e| field(d).starts_with(e));
    let unexpected: Vec<&String> = found.iter().filter(|d| !excepted(d)).collect();
    // The known differences, for whoever runs with --nocapture.
    for d in found.iter().filter(|d| excepted(d)) {
        println!("{what}: known: {}", clip(d));
    }
    assert!(
        unexpected.is_empty(),
        "{what}: the model was asked otherwise than by the direct call:\n{}",
        unexpected
            .iter()
            .map(|d| clip(d))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn clip(d: &str) -> String {
    const MAX: usize = 1_500;
    match d.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &d[..at]),
        None => d.to_owned(),
    }
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let sub = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => diff(&sub, p, q, out),
                    (p, q) => out.push(said(&sub, p, q)),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if named(x) && named(y) => {
            let name = |v: &Value| v["name"].as_str().unwrap_or_default().to_owned();
            let mut names: Vec<String> = x.iter().chain(y).map(name).collect();
            names.dedup();
            let order = |l: &[Value]| l.iter().map(name).collect::<Vec<_>>();
            if order(x) != order(y) {
                out.push(format!(
                    "{path} (names in order): {:?} directly, {:?} through the shim",
                    order(x),
                    order(y)
                ));
            }
            let mut seen = std::collections::HashSet::new();
            for n in names.into_iter().filter(|n| seen.insert(n.clone())) {
                let sub = format!("{path}[{n}]");
                let p = x.iter().find(|v| name(v) == n);
                let q = y.iter().find(|v| name(v) == n);
                match (p, q) {
                    (Some(p), Some(q)) => diff(&sub, p, q, out),
                    (p, q) => out.push(said(&sub, p, q)),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!(
                    "{path} (length): {} directly, {} through the shim",
                    x.len(),
                    y.len()
                ));
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), p, q, out);
            }
        }
        (p, q) if p != q => out.push(said(path, Some(p), Some(q))),
        _ => {}
    }
}

fn named(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(|v| v["name"].is_string())
}

fn said(path: &str, a: Option<&Value>, b: Option<&Value>) -> String {
    let show = |v: Option<&Value>| v.map_or("(absent)".to_owned(), |v| v.to_string());
    format!("{path}: {} directly, {} through the shim", show(a), show(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(v: Value) -> Asked {
        Asked { requests: vec![v] }
    }

    #[test]
    fn a_difference_names_its_field_and_both_values() {
        let a = json!({"thinking": {"display": "omitted"}, "tools": [{"name": "Bash", "description": "default 600000"}]});
        let b = json!({"thinking": {"display": "updates"}, "tools": [{"name": "Bash", "description": "default 1800000"}]});
        let d = differences(&asked(a.clone()), &asked(b));
        assert_eq!(
            d,
            [
                "request 1.thinking.display: \"omitted\" directly, \"updates\" through the shim",
                "request 1.tools[Bash].description: \"default 600000\" directly, \"default 1800000\" through the shim",
            ]
        );
        assert!(differences(&asked(a.clone()), &asked(a)).is_empty());
    }
}
