//! Reading a whole session file as a stream, in constant memory however long
//! it is (files grow past 50 MB): its title (first user message), git branch,
//! CLI version, messages, tokens, and how often the CLI compacted it. A scan
//! can be carried on from where an earlier one stopped when the file only
//! grew (`Scan::resume`), so a growing session is never read twice.

use crate::events::Usage;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

/// Characters of the first user message kept as the title.
const TITLE: usize = 200;
/// Bytes before the scanned end that must be unchanged to carry a scan on.
const WITNESS: u64 = 256;

/// Bumped when a scan learns to count something new: older cached scans are
/// read anew.
const FORMAT: u32 = 2;
/// A line longer than this is skipped unread (counted in `skipped`): what it
/// holds is not worth unbounded memory.
const MAX_LINE: usize = 16 << 20;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scan {
    #[serde(default)]
    format: u32,
    /// Bytes read (the file's length when scanned).
    pub bytes: u64,
    /// The file's modification time when scanned (ns): with `bytes`, a file
    /// unchanged since is not even opened for its witness.
    #[serde(default)]
    pub mtime_ns: i128,
    /// A hash of the bytes just before `bytes` (to tell growth from rewrite).
    pub witness: String,
    pub title: Option<String>,
    pub git_branch: Option<String>,
    pub version: Option<String>,
    /// User and assistant messages (a response split into one record per
    /// content block counts once; meta records and tool results do not).
    pub messages: u64,
    pub usage: Usage,
    /// `compact_boundary` records: times the CLI replaced the history by a
    /// summary.
    pub compactions: u32,
    /// The working directory of its first record that names one.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Lines longer than `MAX_LINE`, left unread.
    #[serde(default)]
    pub skipped: u64,
    /// The message id of the last assistant record (records of one API
    /// response follow each other; counting its usage once needs no more).
    last_message_id: Option<String>,
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    #[serde(rename = "isMeta", default)]
    is_meta: bool,
    #[serde(rename = "isSidechain", default)]
    sidechain: bool,
    #[serde(rename = "gitBranch")]
    git_branch: Option<String>,
    version: Option<String>,
    cwd: Option<String>,
    message: Option<serde_json::Value>,
}

impl Scan {
    /// Scan `path` from the start.
    pub fn of(path: &Path) -> std::io::Result<Scan> {
        Scan::default().resume(path)
    }

    /// Carry this scan on to the file's end, or start over when the file is
    /// not this scan's file grown (shorter, or changed before its end).
    pub fn resume(self, path: &Path) -> std::io::Result<Scan> {
        let meta = std::fs::metadata(path)?;
        let (len, mtime_ns) = (meta.len(), mtime_ns(&meta));
        if self.format == FORMAT && len == self.bytes && mtime_ns == self.mtime_ns {
            return Ok(self);
        }
        let mut file = std::fs::File::open(path)?;
        let base = if self.format == FORMAT
            && len >= self.bytes
            && witness(&mut file, self.bytes)? == self.witness
        {
            self
        } else {
            Scan {
                format: FORMAT,
                ..Scan::default()
            }
        };
        let mut scan = base.read_from(file, len)?;
        scan.mtime_ns = mtime_ns;
        Ok(scan)
    }

    fn read_from(mut self, mut file: std::fs::File, len: u64) -> std::io::Result<Scan> {
        file.seek(SeekFrom::Start(self.bytes))?;
        let mut reader = std::io::BufReader::with_capacity(64 << 10, file.take(len - self.bytes));
        let mut line = Vec::new();
        let mut read = self.bytes;
        loop {
            line.clear();
            let (n, whole) = read_line(&mut reader, &mut line)?;
            // A last line without its newline is still being written.
            if n == 0 || !whole {
                break;
            }
            read += n;
            if line.len() > MAX_LINE {
                self.skipped += 1;
            } else {
                self.record(&line);
            }
        }
        self.bytes = read;
        let mut file = reader.into_inner().into_inner();
        self.witness = witness(&mut file, read)?;
        Ok(self)
    }

    fn record(&mut self, line: &[u8]) {
        // Most lines are none of these: skip them unparsed.
        let wanted = [&b"\"user\""[..], b"\"assistant\"", b"compact_boundary"];
        if !wanted
            .iter()
            .any(|w| memchr::memmem::find(line, w).is_some())
        {
            return;
        }
        let Ok(r) = serde_json::from_slice::<Record>(line) else {
            return;
        };
        if self.git_branch.is_none() {
            self.git_branch = r.git_branch.filter(|b| !b.is_empty());
        }
        if self.cwd.is_none() {
            self.cwd = r.cwd;
        }
        if let Some(v) = r.version {
            self.version = Some(v);
        }
        match r.kind.as_deref() {
            Some("system") if r.subtype.as_deref() == Some("compact_boundary") => {
                self.compactions += 1;
            }
            Some("user") if !r.is_meta && !r.sidechain => {
                let Some(text) = r.message.as_ref().and_then(user_text) else {
                    return; // a tool result
                };
                self.messages += 1;
                if self.title.is_none() {
                    self.title = Some(text.chars().take(TITLE).collect());
                }
            }
            Some("assistant") if !r.sidechain => {
                let Some(m) = r.message else { return };
                let id = m.get("id").and_then(|v| v.as_str()).map(str::to_owned);
                if id.is_some() && id == self.last_message_id {
                    return;
                }
                self.last_message_id = id;
                self.messages += 1;
                if m.get("model").and_then(|v| v.as_str()) != Some("<synthetic>") {
                    if let Some(u) = m
                        .get("usage")
                        .and_then(|u| serde_json::from_value(u.clone()).ok())
                    {
                        self.usage.add(&u);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Read one line into `line` (its newline included), keeping at most
/// `MAX_LINE + 1` bytes of it: a longer line is consumed, not held. Returns
/// the bytes consumed and whether the line ended with its newline.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<(u64, bool)> {
    let mut consumed = 0u64;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((consumed, false));
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        consumed += take as u64;
        if done {
            return Ok((consumed, true));
        }
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
}

/// A user record's own text (not a tool result, not a command wrapper).
fn user_text(m: &serde_json::Value) -> Option<String> {
    let text = match m.get("content")? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .find(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))?
            .get("text")?
            .as_str()?
            .to_owned(),
        _ => return None,
    };
    let t = text.trim_start();
    (!t.starts_with("<command-") && !t.starts_with("<local-command") && !t.is_empty())
        .then_some(text)
}

/// A hash of the `WITNESS` bytes before `end`.
fn witness(file: &mut std::fs::File, end: u64) -> std::io::Result<String> {
    let start = end.saturating_sub(WITNESS);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((end - start) as usize);
    file.take(end - start).read_to_end(&mut buf)?;
    Ok(hex::encode(&Sha256::digest(&buf)[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: serde_json::Value) -> String {
        v.to_string() + "\n"
    }

    #[test]
    fn counts_what_a_session_holds_and_carries_on_as_it_grows() {
        use serde_json::json;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let head = [
            rec(json!({"type":"queue-operation","content":"hi"})),
            rec(json!({"type":"user","isMeta":true,"message":{"content":"<local-command-caveat>x"}})),
            rec(json!({"type":"user","gitBranch":"main","version":"2.1.330","message":{"role":"user","content":"first question"}})),
            rec(json!({"type":"assistant","message":{"id":"m1","model":"opus","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"output_tokens":2}}})),
            rec(json!({"type":"assistant","message":{"id":"m1","model":"opus","content":[{"type":"tool_use"}],"usage":{"input_tokens":10,"output_tokens":2}}})),
            rec(json!({"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}})),
        ]
        .concat();
        std::fs::write(&f, &head).unwrap();
        let s = Scan::of(&f).unwrap();
        assert_eq!(s.title.as_deref(), Some("first question"));
        assert_eq!(
            (s.git_branch.as_deref(), s.version.as_deref()),
            (Some("main"), Some("2.1.330"))
        );
        assert_eq!(
            (s.messages, s.usage.input_tokens, s.compactions),
            (2, 10, 0)
        );
        // It grows: a compaction and a new answer; the scan carries on.
        let more = [
            rec(json!({"type":"system","subtype":"compact_boundary","content":"Conversation compacted"})),
            rec(json!({"type":"user","isCompactSummary":true,"message":{"content":"This session is being continued…"}})),
            rec(json!({"type":"assistant","message":{"id":"m2","model":"<synthetic>","usage":{"input_tokens":99}}})),
        ]
        .concat();
        std::fs::write(
            &f,
            [head.as_str(), &more, "{\"type\":\"user\",\"partial"].concat(),
        )
        .unwrap();
        let grown = s.clone().resume(&f).unwrap();
        assert_eq!(grown.compactions, 1);
        assert_eq!(
            grown.usage.input_tokens, 10,
            "synthetic messages cost nothing"
        );
        assert_eq!(grown.messages, 4);
        assert_eq!(
            grown.bytes as usize,
            head.len() + more.len(),
            "a torn last line is left for later"
        );
        assert_eq!(grown, Scan::of(&f).unwrap(), "carried on = read anew");
        // Rewritten (not grown): read anew.
        std::fs::write(
            &f,
            rec(json!({"type":"user","message":{"content":"other"}})).repeat(40),
        )
        .unwrap();
        let anew = grown.resume(&f).unwrap();
        assert_eq!(
            (anew.title.as_deref(), anew.messages, anew.compactions),
            (Some("other"), 40, 0)
        );
    }

    #[test]
    fn an_overlong_line_is_skipped_unheld_and_the_rest_counted() {
        use serde_json::json;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let big = rec(json!({"type":"user","cwd":"/w","message":{"content":"x".repeat(MAX_LINE)}}));
        let after = rec(json!({"type":"user","cwd":"/v","message":{"content":"after"}}));
        std::fs::write(&f, [big.as_str(), &after].concat()).unwrap();
        let s = Scan::of(&f).unwrap();
        assert_eq!((s.skipped, s.messages), (1, 1));
        assert_eq!(s.title.as_deref(), Some("after"));
        assert_eq!(s.cwd.as_deref(), Some("/v"));
        assert_eq!(s.bytes as usize, big.len() + after.len());
        // Unchanged since (size and mtime): the scan is returned as it was,
        // the file not read (bytes changed under the same size and mtime
        // are not seen).
        assert_eq!(s.clone().resume(&f).unwrap(), s);
        // A cached scan of an older format is read anew.
        let old = Scan {
            format: 1,
            ..s.clone()
        };
        assert_eq!(old.resume(&f).unwrap(), s);
        let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
        std::fs::write(
            &f,
            [big.as_str(), &after.replace("after", "other")].concat(),
        )
        .unwrap();
        let file = std::fs::File::options().write(true).open(&f).unwrap();
        file.set_modified(mtime).unwrap();
        assert_eq!(
            s.clone().resume(&f).unwrap().title.as_deref(),
            Some("after")
        );
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(mtime + std::time::Duration::from_secs(1))
            .unwrap();
        assert_eq!(
            s.clone().resume(&f).unwrap().title.as_deref(),
            Some("other")
        );
    }
}
