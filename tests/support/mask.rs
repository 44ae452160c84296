//! Masking of what legitimately differs between two runs of the real CLI, so that
//! stream-json/json output of a direct and a shimmed run can be compared byte for byte.
//!
//! Determined empirically by running the real CLI (2.1.330) twice in two sandboxes and
//! diffing every field of its output; everything else compared equal:
//!
//! | key                          | where                     | why it differs            |
//! |------------------------------|---------------------------|---------------------------|
//! | `session_id`                 | every stream-json event, json result | random per run |
//! | `uuid`                       | init / assistant / result events     | random per event |
//! | `timestamp`                  | assistant events          | wall clock                |
//! | `*_ms` (`duration_ms`, `duration_api_ms`, `ttft_ms`, `ttft_stream_ms`, `time_to_request_ms`, `first_content_frame_ms`) | result | timing |
//! | `messaging_socket_path`      | init event                | `/tmp/cc-socks/<pid>.sock` |
//! | paths of the sandbox         | init `cwd`, `original_cwd`, `memory_paths.auto` | temp dirs (see `Sandbox::mask`) |
//!
//! Masking rewrites only the value text in place: key order, spacing and every other byte
//! of the line are kept, so a re-serialised line would still show up as a difference.
//! Ids are numbered by first appearance (`"<session_id#1>"`, `"<uuid#2>"`), one numbering
//! shared by all id keys of one [`mask_volatile`] call: two outputs compare equal only if
//! they use the same ids in the same places.

use std::collections::HashMap;

/// Keys whose (string) values are random ids, numbered by first appearance.
pub const ID_KEYS: &[&str] = &["session_id", "uuid"];

/// Keys whose values are replaced by a fixed placeholder.
pub const FIXED_KEYS: &[&str] = &["timestamp", "messaging_socket_path"];

/// How a key's value is masked, if at all.
pub fn volatile_key(key: &str) -> Option<&'static str> {
    if ID_KEYS.contains(&key) {
        Some("id")
    } else if FIXED_KEYS.contains(&key) {
        Some("fixed")
    } else if key.ends_with("_ms") {
        Some("ms")
    } else {
        None
    }
}

/// Claude Code's project-directory form of a path: every non-alphanumeric char → `-`.
pub fn slug(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Mask volatile values in `text` (one or more lines). JSON lines get their volatile keys
/// masked; in every line, paths of temp dirs created by `tempfile` (`<tmp>/.tmpXXXXXX`,
/// `<tmp>/claude-shim-e2e.XXXXXX`) and their slug forms become `<TMP#n>` / `<TMP_SLUG#n>`.
pub fn mask_volatile(text: &str) -> String {
    Masker::default().mask(text)
}

/// Stateful masker: numbering of ids and temp paths carries across calls.
#[derive(Default)]
pub struct Masker {
    ids: HashMap<String, usize>,
    tmps: HashMap<String, usize>,
}

impl Masker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Mask every line of `text` (line terminators kept).
    pub fn mask(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let (body, nl) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            let masked = self.mask_json_line(body);
            out.push_str(&self.mask_tmp_paths(&masked));
            out.push_str(nl);
        }
        out
    }

    /// Mask volatile keys of one JSON line; a line that is not JSON is returned as is.
    pub fn mask_json_line(&mut self, line: &str) -> String {
        let trimmed = line.trim();
        if !(trimmed.starts_with('{') || trimmed.starts_with('['))
            || serde_json::from_str::<serde_json::Value>(trimmed).is_err()
        {
            return line.to_string();
        }
        let mut sc = Scanner {
            s: line.as_bytes(),
            i: 0,
            spans: Vec::new(),
        };
        sc.value(None);
        let mut out = String::with_capacity(line.len());
        let mut pos = 0;
        for (start, end, key) in sc.spans {
            out.push_str(&line[pos..start]);
            let raw = &line[start..end];
            let placeholder = match volatile_key(&key) {
                Some("id") => {
                    let value = serde_json::from_str::<serde_json::Value>(raw)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string));
                    match value {
                        Some(v) => {
                            let next = self.ids.len() + 1;
                            let n = *self.ids.entry(v).or_insert(next);
                            format!("\"<{key}#{n}>\"")
                        }
                        // null or a non-string: keep it, it is not random.
                        None => raw.to_string(),
                    }
                }
                _ => format!("\"<{key}>\""),
            };
            out.push_str(&placeholder);
            pos = end;
        }
        out.push_str(&line[pos..]);
        out
    }

    /// Replace temp-dir paths created by `tempfile` (and their slug forms).
    pub fn mask_tmp_paths(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for base in tmp_bases() {
            for name_prefix in [".tmp", "claude-shim-e2e."] {
                let prefix = format!("{base}/{name_prefix}");
                out = self.replace_names(&out, &prefix, "TMP");
                out = self.replace_names(&out, &slug(&prefix), "TMP_SLUG");
            }
        }
        out
    }

    fn replace_names(&mut self, text: &str, prefix: &str, label: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            out.push_str(&rest[..at]);
            let after = &rest[at + prefix.len()..];
            let n_alnum = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            if n_alnum < 6 {
                out.push_str(prefix);
                rest = after;
                continue;
            }
            // Key the numbering on the random part so a path and its slug share a number.
            let key = after[..n_alnum].to_string();
            let next = self.tmps.len() + 1;
            let n = *self.tmps.entry(key).or_insert(next);
            out.push_str(&format!("<{label}#{n}>"));
            rest = &after[n_alnum..];
        }
        out.push_str(rest);
        out
    }
}

fn tmp_bases() -> Vec<String> {
    let tmp = std::env::temp_dir();
    let mut bases = vec![tmp.to_string_lossy().trim_end_matches('/').to_string()];
    if let Ok(c) = tmp.canonicalize() {
        let c = c.to_string_lossy().trim_end_matches('/').to_string();
        if !bases.contains(&c) {
            bases.push(c);
        }
    }
    bases
}

/// Finds the byte spans of values of volatile keys in a JSON text known to be valid.
struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
    spans: Vec<(usize, usize, String)>,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> u8 {
        self.s.get(self.i).copied().unwrap_or(0)
    }

    /// Skip a string starting at `self.i` (which is `"`); return its raw span.
    fn string(&mut self) -> (usize, usize) {
        let start = self.i;
        self.i += 1;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return (start, self.i);
                }
                _ => self.i += 1,
            }
        }
        (start, self.i)
    }

    fn value(&mut self, key: Option<&str>) {
        self.ws();
        let start = self.i;
        match self.peek() {
            b'{' => {
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        b',' => {
                            self.i += 1;
                            continue;
                        }
                        b'"' => {
                            let (ks, ke) = self.string();
                            let k: String =
                                serde_json::from_slice(&self.s[ks..ke]).unwrap_or_default();
                            self.ws();
                            if self.peek() == b':' {
                                self.i += 1;
                            }
                            self.value(Some(&k));
                        }
                        0 => break,
                        _ => self.i += 1,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        b']' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        0 => break,
                        _ => self.value(None),
                    }
                }
            }
            b'"' => {
                self.string();
            }
            _ => {
                while self.i < self.s.len()
                    && !matches!(self.s[self.i], b',' | b'}' | b']')
                    && !self.s[self.i].is_ascii_whitespace()
                {
                    self.i += 1;
                }
            }
        }
        if let Some(k) = key {
            if volatile_key(k).is_some() {
                // A nested volatile key inside this value is covered by this span.
                self.spans.retain(|(s, _, _)| *s < start);
                self.spans.push((start, self.i, k.to_string()));
            }
        }
    }
}

/// Token counts and costs (`"…token…":n`, `"…cost…":n`, any case) as `<n>`: they
/// track the request's bytes, which differ between a replaying call and a resumed
/// one; everything else of the line must match.
pub fn mask_usage(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('"') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[1..].find('"') else {
            break;
        };
        let key = &rest[1..end + 1];
        let after = &rest[end + 2..];
        let numeric =
            after.starts_with(':') && after[1..].starts_with(|c: char| c.is_ascii_digit());
        let lower = key.to_ascii_lowercase();
        if numeric && (lower.contains("token") || lower.contains("cost")) {
            let len = after[1..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .unwrap_or(after.len() - 1);
            out.push_str(&format!("\"{key}\":<n>"));
            rest = &after[1 + len..];
        } else {
            out.push_str(&rest[..end + 2]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
