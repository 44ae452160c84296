//! Claude Code's session files: `<config>/projects/<slug>/<id>.jsonl`.
//! Found by id under any project dir rather than by rebuilding the slug.

pub mod reply;
pub mod scan;

use crate::events::Usage;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Session ids are UUIDs; anything else is never used in a path or argv.
pub fn valid_id(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok() && id.len() == 36
}

pub fn find(config_dir: &Path, id: &str) -> Option<PathBuf> {
    if !valid_id(id) {
        return None;
    }
    let file = format!("{id}.jsonl");
    std::fs::read_dir(config_dir.join("projects"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join(&file))
        .find(|p| p.is_file())
}

/// Delete everything Claude Code keeps for one session: its transcript and
/// transcript directory (subagents, tool results) under any project, and
/// its per-session directories. Used only for sessions the shim made for a
/// caller that turned persistence off.
pub fn remove(config_dir: &Path, id: &str) {
    if !valid_id(id) {
        return;
    }
    if let Ok(projects) = std::fs::read_dir(config_dir.join("projects")) {
        for project in projects.flatten() {
            let _ = std::fs::remove_file(project.path().join(format!("{id}.jsonl")));
            let _ = std::fs::remove_dir_all(project.path().join(id));
        }
    }
    for dir in ["session-env", "file-history", "tasks"] {
        let _ = std::fs::remove_dir_all(config_dir.join(dir).join(id));
    }
    let _ = std::fs::remove_file(config_dir.join("debug").join(format!("{id}.txt")));
}

/// Take back what a run killed before its answer wrote to a session file
/// that was `before` bytes long when it started: the records from the first
/// one of its turn (the queued message or the user record) on. A file it
/// created (`before: None`) goes. Returns whether anything was cut.
///
/// So a rerun resumes the session as it was, instead of the CLI's repair
/// of a dangling message ("No response requested." and the message twice).
pub fn undo_turn(path: &Path, before: Option<u64>) -> std::io::Result<bool> {
    let Some(before) = before else {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        };
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    // Records the process wrote after its last result may straddle `before`:
    // start at the record boundary at or before it.
    let back = before.min(64 << 10);
    file.seek(SeekFrom::Start(before - back))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    let boundary = match memchr::memrchr(b'\n', &buf[..back as usize]) {
        Some(nl) => nl + 1,
        None if before == back => 0,
        None => return Ok(false),
    };
    let mut at = boundary;
    for line in buf[boundary..].split_inclusive(|&b| b == b'\n') {
        if starts_turn(line) {
            file.set_len(before - back + at as u64)?;
            return Ok(true);
        }
        at += line.len();
    }
    Ok(false)
}

/// The first record a turn writes: its message queued, or the user record.
fn starts_turn(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Rec<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<&'a str>,
        operation: Option<&'a str>,
        #[serde(rename = "isSidechain")]
        sidechain: Option<bool>,
    }
    match serde_json::from_slice::<Rec>(line) {
        Ok(r) => match r.kind {
            Some("queue-operation") => r.operation == Some("enqueue"),
            Some("user") => r.sidechain != Some(true),
            _ => false,
        },
        Err(_) => false,
    }
}

/// The last record in the file's tail that `pick` accepts: a small tail
/// first (what we look for is near the end), more only if needed.
pub fn from_tail<T>(path: &Path, pick: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
    from_tails(path, &[64 << 10, 1 << 20, 4 << 20], pick)
}

/// As [`from_tail`], reading at most these tails, each larger than the last.
fn from_tails<T>(path: &Path, tails: &[u64], pick: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    for &tail in tails {
        let start = len.saturating_sub(tail);
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).ok()?;
        if let Some(found) = buf.split(|&b| b == b'\n').rev().find_map(&pick) {
            return Some(found);
        }
        if start == 0 {
            break;
        }
    }
    None
}

/// The model and the shape (a hash of its system prompt and tools) of the
/// last request the CLI sent, as its `api-request` record says (Claude Code
/// 2.1 writes one per request; older releases none).
pub fn last_request(path: &Path) -> Option<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Params {
        model: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Rec {
        #[serde(rename = "shapeHash")]
        shape: Option<String>,
        params: Option<Params>,
    }
    // Only the last 64 KiB: the record comes just before the turn's reply
    // (a file without one, before 2.1, is not read further).
    from_tails(path, &[64 << 10], |line| {
        memchr::memmem::find(line, b"\"type\":\"api-request\"")?;
        let r: Rec = serde_json::from_slice(line).ok()?;
        Some((r.params?.model?, r.shape?))
    })
}

/// Of two request shapes the file records (`api-request-shape`), whether
/// their tools differ (else their system prompts do). `None`: not both
/// found.
pub fn tools_differ(files: &[&Path], a: &str, b: &str) -> Option<bool> {
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(default)]
        tools: serde_json::Value,
    }
    #[derive(serde::Deserialize)]
    struct Rec {
        #[serde(rename = "shapeHash")]
        hash: String,
        shape: Shape,
    }
    let mut found: [Option<serde_json::Value>; 2] = [None, None];
    for file in files {
        let Ok(f) = std::fs::File::open(file) else {
            continue;
        };
        for line in std::io::BufReader::new(f)
            .split(b'\n')
            .map_while(Result::ok)
        {
            if memchr::memmem::find(&line, b"\"type\":\"api-request-shape\"").is_none() {
                continue;
            }
            let Ok(r) = serde_json::from_slice::<Rec>(&line) else {
                continue;
            };
            for (slot, want) in found.iter_mut().zip([a, b]) {
                if r.hash == want {
                    *slot = Some(r.shape.tools.clone());
                }
            }
        }
    }
    match found {
        [Some(x), Some(y)] => Some(x != y),
        _ => None,
    }
}

/// The uuid of the last main-thread assistant record.
pub fn last_assistant_uuid(path: &Path) -> Option<String> {
    from_tail(path, assistant_uuid)
}

/// Whether the session's last turn ends at the main-thread assistant
/// record `uuid`: no turn began after it (a killed turn leaves its queued
/// message or its user record behind, and a resume in place would send that
/// message again, with a filler reply, before the retried one).
pub fn ends_at(path: &Path, uuid: &str) -> bool {
    let last = from_tail(path, |line| match starts_turn(line) {
        true => Some(None),
        false => assistant_uuid(line).map(Some),
    });
    last.flatten().as_deref() == Some(uuid)
}

/// The uuid of the last main-thread assistant record in a file's bytes.
pub fn last_assistant_uuid_in(bytes: &[u8]) -> Option<String> {
    bytes.split(|&b| b == b'\n').rev().find_map(assistant_uuid)
}

/// Whether a file's bytes hold a main-thread assistant record `uuid`.
pub fn has_assistant_uuid(bytes: &[u8], uuid: &str) -> bool {
    let finder = memchr::memmem::Finder::new(uuid.as_bytes());
    bytes
        .split(|&b| b == b'\n')
        .any(|line| finder.find(line).is_some() && assistant_uuid(line).as_deref() == Some(uuid))
}

/// The session's running cost as the CLI last saved it (its last
/// `cost-state` record, written when a process ends), which a resume of it
/// starts counting from. `Some(0.0)` for a file with none: the CLI then
/// starts from zero. `None` when the file cannot be read.
pub fn saved_total_cost(path: &Path) -> Option<f64> {
    std::fs::metadata(path).ok()?;
    Some(from_tail(path, cost_state).unwrap_or(0.0))
}

fn cost_state(line: &[u8]) -> Option<f64> {
    #[derive(Deserialize)]
    struct CostState {
        #[serde(rename = "type")]
        kind: String,
        #[serde(rename = "totalCostUSD")]
        total: f64,
    }
    memchr::memmem::find(line, b"\"cost-state\"")?;
    let c: CostState = serde_json::from_slice(line).ok()?;
    (c.kind == "cost-state").then_some(c.total)
}

/// Token usage of the API calls a turn appended to the session file: from
/// byte `from` on, each assistant message once (one record per content
/// block repeats its usage), leaving out messages in `copied` (a fork's
/// file begins with its parent's records) and synthetic ones. Read as a
/// stream: memory stays flat however long the file.
pub fn turn_usage(path: &Path, from: u64, copied: &HashSet<String>) -> Option<Usage> {
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut total = Usage::default();
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => return None,
        }
        if let Some((id, usage)) = assistant_usage(&line) {
            if !copied.contains(&id) && seen.insert(id) {
                total.add(&usage);
            }
        }
    }
    Some(total)
}

/// Whether the records appended to `path` after byte `from` hold a
/// compaction's boundary (read from the records' structure, not their
/// text).
pub fn compacted_since(path: &Path, from: u64) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    if file.seek(SeekFrom::Start(from)).is_err() {
        return false;
    }
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        // Only a line that names it is parsed; the text a caller sends
        // may name it too, but never as a system record's subtype.
        if memchr::memmem::find(&line, b"compact_boundary").is_some() && is_boundary(&line) {
            return true;
        }
    }
}

/// The line is a `system` record of subtype `compact_boundary`.
fn is_boundary(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        kind: Option<String>,
        subtype: Option<String>,
    }
    serde_json::from_slice::<Head>(line).is_ok_and(|h| {
        h.kind.as_deref() == Some("system") && h.subtype.as_deref() == Some("compact_boundary")
    })
}

/// The message ids of a session's assistant records (what a fork copies).
pub fn message_ids(path: &Path) -> HashSet<String> {
    let Ok(file) = std::fs::File::open(path) else {
        return HashSet::new();
    };
    let mut out = HashSet::new();
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        if let Some((id, _)) = assistant_usage(&line) {
            out.insert(id);
        }
        line.clear();
    }
    out
}

fn assistant_usage(line: &[u8]) -> Option<(String, Usage)> {
    #[derive(Deserialize)]
    struct Record {
        #[serde(rename = "type")]
        kind: String,
        message: Option<Msg>,
    }
    #[derive(Deserialize)]
    struct Msg {
        id: Option<String>,
        model: Option<String>,
        usage: Option<Usage>,
    }
    memchr::memmem::find(line, b"\"assistant\"")?;
    let r: Record = serde_json::from_slice(line).ok()?;
    let m = r.message?;
    if r.kind != "assistant" || m.model.as_deref() == Some("<synthetic>") {
        return None;
    }
    Some((m.id?, m.usage?))
}

/// Whether the records from byte `from` on (the whole file for `None`) hold
/// a turn's end: a main-thread assistant record that stops for good (not to
/// call a tool). Such a turn was complete in the session before its process
/// died, and its caller may well have had its result.
pub fn turn_finished_since(path: &Path, from: Option<u64>) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from.unwrap_or(0)))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    Ok(buf.split(|&b| b == b'\n').any(|line| {
        memchr::memmem::find(line, b"stop_reason").is_some()
            && serde_json::from_slice::<Value>(line).is_ok_and(|v| {
                v["type"] == "assistant"
                    && v["isSidechain"] != true
                    && v["message"]["stop_reason"]
                        .as_str()
                        .is_some_and(|r| r != "tool_use")
            })
    }))
}

fn assistant_uuid(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let main_thread = v.get("isSidechain").and_then(Value::as_bool) != Some(true);
    (v.get("type")?.as_str()? == "assistant" && main_thread)
        .then(|| v.get("uuid")?.as_str().map(str::to_owned))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compaction is a system record of its subtype: a message whose text
    /// names it is none.
    #[test]
    fn a_compaction_is_read_from_the_records_structure() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let head = "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n";
        let cases = [
            (
                r#"{"type":"user","message":{"role":"user","content":"compact_boundary"}}"#,
                false,
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"\"compact_boundary\""}]}}"#,
                false,
            ),
            (
                r#"{"type":"assistant","subtype":"compact_boundary"}"#,
                false,
            ),
            (
                r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted"}"#,
                true,
            ),
        ];
        for (line, want) in cases {
            std::fs::write(&f, format!("{head}{line}\n")).unwrap();
            assert_eq!(compacted_since(&f, head.len() as u64), want, "{line}");
            // Records before the turn are not its own.
            assert!(!compacted_since(&f, (head.len() + line.len() + 1) as u64));
        }
    }

    #[test]
    fn a_turn_is_finished_once_an_assistant_record_stops_for_good() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let before = concat!(
            r#"{"type":"assistant","uuid":"a0","message":{"stop_reason":"end_turn"}}"#,
            "\n"
        );
        let tool = concat!(
            r#"{"type":"user","uuid":"u1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","message":{"stop_reason":"tool_use"}}"#,
            "\n"
        );
        std::fs::write(&f, format!("{before}{tool}")).unwrap();
        let from = Some(before.len() as u64);
        assert!(!turn_finished_since(&f, from).unwrap());
        assert!(turn_finished_since(&f, None).unwrap());
        let end = r#"{"type":"assistant","uuid":"a2","message":{"stop_reason":"end_turn"}}"#;
        std::fs::write(&f, format!("{before}{tool}{end}\n")).unwrap();
        assert!(turn_finished_since(&f, from).unwrap());
    }

    #[test]
    fn a_turn_begun_after_the_head_means_it_no_longer_ends_there() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let done = concat!(
            r#"{"type":"queue-operation","operation":"enqueue","content":"q1"}"#,
            "\n",
            r#"{"type":"user","uuid":"u1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1"}"#,
            "\n",
            r#"{"type":"cost-state","totalCostUSD":0.1}"#,
            "\n",
        );
        std::fs::write(&f, done).unwrap();
        assert!(ends_at(&f, "a1"));
        assert!(!ends_at(&f, "a0"));
        // Killed after its message was queued, or after its user record.
        for killed in [
            r#"{"type":"queue-operation","operation":"enqueue","content":"q2"}"#,
            r#"{"type":"user","uuid":"u2"}"#,
        ] {
            std::fs::write(&f, format!("{done}{killed}\n")).unwrap();
            assert!(!ends_at(&f, "a1"), "{killed}");
            assert_eq!(last_assistant_uuid(&f).as_deref(), Some("a1"));
        }
        // A sidechain's records do not begin a turn.
        let side = r#"{"type":"user","uuid":"s1","isSidechain":true}"#;
        std::fs::write(&f, format!("{done}{side}\n")).unwrap();
        assert!(ends_at(&f, "a1"));
    }

    #[test]
    fn finds_by_id_and_reads_the_last_assistant() {
        let t = tempfile::tempdir().unwrap();
        let id = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let dir = t.path().join("projects/-w");
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("{id}.jsonl"));
        std::fs::write(
            &f,
            concat!(
                r#"{"type":"user","uuid":"u1"}"#,
                "\n",
                r#"{"type":"assistant","uuid":"a1"}"#,
                "\n",
                r#"{"type":"assistant","uuid":"side","isSidechain":true}"#,
                "\n",
                r#"{"type":"last-prompt"}"#,
                "\n",
                r#"{"type":"assistant","uuid":"torn"#,
            ),
        )
        .unwrap();
        assert_eq!(find(t.path(), id), Some(f.clone()));
        assert_eq!(last_assistant_uuid(&f).as_deref(), Some("a1"));
        assert_eq!(find(t.path(), "../../etc/passwd"), None);
        // Far from the end: found by reading a longer tail.
        let mut long = std::fs::read(&f).unwrap();
        long.extend(
            std::iter::repeat_n(b"{\"type\":\"attachment\"}\n".as_slice(), 20_000).flatten(),
        );
        std::fs::write(&f, long).unwrap();
        assert_eq!(last_assistant_uuid(&f).as_deref(), Some("a1"));
        assert_eq!(find(t.path(), "6e8e0435-8e12-4245-aa25-f674ed4e97a8"), None);
    }

    #[test]
    fn undo_turn_cuts_from_the_killed_turns_first_record() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let kept = concat!(
            r#"{"type":"user","uuid":"u1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1"}"#,
            "\n",
        );
        // Written after the size was taken: the previous turn's last records.
        let late = concat!(r#"{"type":"last-prompt"}"#, "\n");
        let killed = concat!(
            r#"{"type":"queue-operation","operation":"enqueue","content":"m2"}"#,
            "\n",
            r#"{"type":"user","uuid":"u2"}"#,
            "\n",
            r#"{"type":"attachment"}"#,
            "\n",
        );
        // `before` inside the late record: cut at the killed turn, keep it.
        std::fs::write(&f, format!("{kept}{late}{killed}")).unwrap();
        let before = (kept.len() + 5) as u64;
        assert!(undo_turn(&f, Some(before)).unwrap());
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            format!("{kept}{late}")
        );
        // Nothing of a turn after `before`: untouched.
        assert!(!undo_turn(&f, Some(kept.len() as u64)).unwrap());
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            format!("{kept}{late}")
        );
        // A user record without a queued message (a cold start) starts one too.
        std::fs::write(
            &f,
            format!("{kept}{}", &killed[killed.find('\n').unwrap() + 1..]),
        )
        .unwrap();
        assert!(undo_turn(&f, Some(kept.len() as u64)).unwrap());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), kept);
        // From an empty start, and a file the run created.
        assert!(undo_turn(&f, Some(0)).unwrap());
        assert_eq!(std::fs::read(&f).unwrap(), b"");
        assert!(undo_turn(&f, None).unwrap());
        assert!(!f.exists());
        assert!(!undo_turn(&f, None).unwrap());
    }

    #[test]
    fn remove_takes_a_session_and_only_that_session() {
        let t = tempfile::tempdir().unwrap();
        let id = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let other = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";
        let p = t.path().join("projects/-w");
        std::fs::create_dir_all(p.join(id).join("subagents")).unwrap();
        std::fs::create_dir_all(t.path().join("session-env").join(id)).unwrap();
        for f in [format!("{id}.jsonl"), format!("{other}.jsonl")] {
            std::fs::write(p.join(f), "{}\n").unwrap();
        }
        remove(t.path(), id);
        assert!(find(t.path(), id).is_none() && !p.join(id).exists());
        assert!(!t.path().join("session-env").join(id).exists());
        assert!(find(t.path(), other).is_some());
        remove(t.path(), "../projects");
        assert!(p.exists());
    }

    #[test]
    fn costs_and_usage_as_the_cli_saves_them() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.jsonl");
        let rec = |id: &str, input: u64, model: &str| {
            format!(
                r#"{{"type":"assistant","uuid":"u","message":{{"id":"{id}","model":"{model}","usage":{{"input_tokens":{input},"output_tokens":1}}}}}}"#
            ) + "\n"
        };
        let old = [
            rec("m0", 100, "opus"),
            r#"{"type":"cost-state","totalCostUSD":0.5}"#.to_string() + "\n",
        ]
        .concat();
        let new = [
            r#"{"type":"user","message":{"content":"hi"}}"#.to_string() + "\n",
            rec("m1", 10, "opus"),
            rec("m1", 10, "opus"),
            rec("m2", 20, "opus"),
            rec("m3", 0, "<synthetic>"),
            r#"{"type":"cost-state","totalCostUSD":0.75}"#.to_string() + "\n",
        ]
        .concat();
        std::fs::write(&f, &old).unwrap();
        assert_eq!(saved_total_cost(&f), Some(0.5));
        std::fs::write(&f, [old.as_str(), &new].concat()).unwrap();
        assert_eq!(saved_total_cost(&f), Some(0.75));
        let u = turn_usage(&f, old.len() as u64, &HashSet::new()).unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (30, 2));
        // A fork's file starts with copies of its parent's records.
        let copied: HashSet<String> = ["m0".to_string()].into();
        let u = turn_usage(&f, 0, &copied).unwrap();
        assert_eq!(u.input_tokens, 30);
        assert_eq!(message_ids(&f).len(), 3);
        assert_eq!(saved_total_cost(&t.path().join("none")), None);
        std::fs::write(&f, "{}\n").unwrap();
        assert_eq!(saved_total_cost(&f), Some(0.0));
    }
}
