//! Claude Code's session files: `<config>/projects/<slug>/<id>.jsonl`.
//! Found by id under any project dir rather than by rebuilding the slug.

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
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

/// The uuid of the last main-thread assistant record, read from the tail:
/// a small tail first (the record is near the end), more only if needed.
pub fn last_assistant_uuid(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    for tail in [64 << 10, 1 << 20, 4 << 20] {
        let start = len.saturating_sub(tail);
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).ok()?;
        if let Some(uuid) = last_assistant_in(&buf) {
            return Some(uuid);
        }
        if start == 0 {
            break;
        }
    }
    None
}

fn last_assistant_in(buf: &[u8]) -> Option<String> {
    buf.split(|&b| b == b'\n').rev().find_map(|line| {
        let v: Value = serde_json::from_slice(line).ok()?;
        let main_thread = v.get("isSidechain").and_then(Value::as_bool) != Some(true);
        (v.get("type")?.as_str()? == "assistant" && main_thread)
            .then(|| v.get("uuid")?.as_str().map(str::to_owned))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
