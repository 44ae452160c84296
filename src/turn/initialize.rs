//! The Agent SDK's `initialize`, answered at once. The Python SDK waits for
//! the answer before it sends the message; when the turn resumes, that wait
//! is a whole CLI start (A's) before the resumed CLI (B) can even start. The
//! answer depends only on how the CLI is started — binary, cwd, argv,
//! environment, the files a start reads — and on the request; apart from the
//! request id and the CLI's pid it is the same every time (checked on
//! 2.1.330). So the shim remembers the last answer per start-up scope and,
//! once a second start has given the very same answer, answers the next
//! caller itself at once with A's pid, while A starts.
//!
//! Every answer a CLI gives is still heard: it is checked against what the
//! remembered one foretold, and a difference takes the trust away (logged)
//! until two starts agree again. Answers are kept in files in the data
//! directory (`initialize/<scope>.json`, private, a few KiB each).

use crate::data_dir::DataDir;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The caller's `initialize`, when it is all the caller sent before it waits.
pub struct Asked {
    /// Its request id.
    pub id: String,
    /// The request without its id (what the answer depends on).
    pub request: serde_json::Value,
}

/// `lines` is exactly one `control_request` whose subtype is `initialize`.
pub fn asked(lines: &[u8]) -> Option<Asked> {
    let line = lines.strip_suffix(b"\n")?;
    if line.contains(&b'\n') {
        return None;
    }
    let mut v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let o = v.as_object_mut()?;
    if o.get("type")?.as_str()? != "control_request"
        || o.get("request")?.get("subtype")?.as_str()? != "initialize"
    {
        return None;
    }
    let id = o.remove("request_id")?.as_str()?.to_owned();
    Some(Asked { id, request: v })
}

/// What a start's answer depends on.
pub struct Scope<'a> {
    pub binary: &'a str,
    pub cwd: &'a Path,
    pub args: &'a [std::ffi::OsString],
    pub env: &'a str,
    pub files: &'a str,
    pub request: &'a serde_json::Value,
}

/// A file name for the scope.
pub fn key(s: &Scope<'_>) -> String {
    let mut h = Sha256::new();
    for part in [
        s.binary.as_bytes(),
        s.cwd.as_os_str().as_encoded_bytes(),
        s.env.as_bytes(),
        s.files.as_bytes(),
        s.request.to_string().as_bytes(),
    ] {
        h.update(part);
        h.update([0]);
    }
    for a in s.args {
        h.update(a.as_encoded_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

/// The last answer a start gave in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// The answer line, as the CLI printed it (newline included).
    pub line: String,
    /// The request id and pid it carries.
    pub id: String,
    pub pid: i32,
    /// The start before it gave the same answer (so the shim may give it).
    pub confirmed: bool,
}

impl Remembered {
    /// The answer the CLI with `pid` would give to request `id`: this one
    /// with the two swapped, when each occurs exactly once.
    pub fn foretell(&self, pid: i32, id: &str) -> Option<Vec<u8>> {
        let line = swap_once(&self.line, &id_field(&self.id), &id_field(id))?;
        let line = swap_pid(&line, self.pid, pid)?;
        Some(line.into_bytes())
    }

    /// What to remember after a CLI with `pid` answered `id` with `line`:
    /// confirmed when `before` foretold exactly that. `None`: not an answer
    /// that can be foretold (it lacks the id or the pid).
    pub fn after(
        before: Option<&Remembered>,
        line: &[u8],
        pid: i32,
        id: &str,
    ) -> Option<Remembered> {
        let text = std::str::from_utf8(line).ok()?;
        let heard = Remembered {
            line: text.to_owned(),
            id: id.to_owned(),
            pid,
            confirmed: false,
        };
        heard.foretell(pid, id)?;
        let confirmed = before.and_then(|b| b.foretell(pid, id)).as_deref() == Some(line);
        Some(Remembered { confirmed, ..heard })
    }
}

fn id_field(id: &str) -> String {
    format!("\"request_id\":{}", serde_json::Value::from(id))
}

/// `text` with the one occurrence of `from` replaced by `to`.
fn swap_once(text: &str, from: &str, to: &str) -> Option<String> {
    let mut at = text.match_indices(from);
    let (i, _) = at.next()?;
    if at.next().is_some() {
        return None;
    }
    Some(format!("{}{to}{}", &text[..i], &text[i + from.len()..]))
}

/// `text` with its one `"pid":<from>` made `"pid":<to>`.
fn swap_pid(text: &str, from: i32, to: i32) -> Option<String> {
    const KEY: &str = "\"pid\":";
    let mut found = None;
    for (i, _) in text.match_indices(KEY) {
        let digits = text[i + KEY.len()..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if found.replace((i + KEY.len(), digits)).is_some() {
            return None;
        }
    }
    let (start, len) = found?;
    if text[start..start + len] != from.to_string() {
        return None;
    }
    Some(format!("{}{to}{}", &text[..start], &text[start + len..]))
}

/// `line` is the answer to request `id`.
pub fn answers(line: &[u8], id: &str) -> bool {
    matches!(
        crate::events::Event::parse(line),
        Some(crate::events::Event::ControlResponse(r)) if r.response.request_id.as_deref() == Some(id)
    )
}

/// Where remembered answers live in the data directory.
const DIR: &str = "initialize";

fn name(key: &str) -> String {
    format!("{key}.json")
}

/// The remembered answer of a scope: only from a private file of ours.
pub fn load(data_dir: &DataDir, key: &str) -> Option<Remembered> {
    let path = data_dir.join(DIR).join(name(key));
    let text = crate::data_dir::read_private(&path).ok()??;
    serde_json::from_slice(&text).ok()
}

/// No answer to give in this scope.
pub fn forget(data_dir: &DataDir, key: &str) -> anyhow::Result<()> {
    match std::fs::remove_file(data_dir.join(DIR).join(name(key))) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Write (privately, whole or not at all; never through a link).
pub fn save(data_dir: &DataDir, key: &str, r: &Remembered) -> anyhow::Result<()> {
    let dir = data_dir.subdir(DIR)?;
    crate::whole_file::write(&dir.join(name(key)), &serde_json::to_vec(r)?, 0o600)?;
    keep_newest(&dir, KEEP);
    Ok(())
}

/// Scopes remembered, at most: each settings or instruction-file change
/// makes a new one, so the old ones go, least recently changed first (a
/// scope dropped too soon is learned again in two starts).
const KEEP: usize = 64;

fn keep_newest(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= keep {
        return;
    }
    files.sort();
    for (_, old) in &files[..files.len() - keep] {
        let _ = std::fs::remove_file(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = concat!(
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"req_1","#,
        r#""response":{"commands":[{"name":"pid","description":"say \"pid\":1"}],"pid":4242,"#,
        r#""account":{"apiKeySource":"ANTHROPIC_API_KEY"}}}}"#,
        "\n"
    );

    #[test]
    fn only_a_lone_initialize_is_asked() {
        let init = b"{\"type\":\"control_request\",\"request_id\":\"r7\",\"request\":{\"subtype\":\"initialize\",\"hooks\":null}}\n";
        let a = asked(init).expect("asked");
        assert_eq!(a.id, "r7");
        assert_eq!(
            a.request,
            serde_json::json!({"type":"control_request","request":{"subtype":"initialize","hooks":null}})
        );
        let two = [&init[..], &init[..]].concat();
        assert!(asked(&two).is_none());
        assert!(asked(&init[..init.len() - 1]).is_none(), "incomplete");
        let other = b"{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"set_model\"}}\n";
        assert!(asked(other).is_none());
    }

    #[test]
    fn an_answer_is_foretold_for_another_pid_and_id() {
        let r = Remembered::after(None, ANSWER.as_bytes(), 4242, "req_1").expect("templatable");
        assert!(!r.confirmed, "a first answer is not yet confirmed");
        let told = String::from_utf8(r.foretell(77, "req_9").unwrap()).unwrap();
        assert_eq!(
            told,
            ANSWER
                .replace("\"request_id\":\"req_1\"", "\"request_id\":\"req_9\"")
                .replace("\"pid\":4242", "\"pid\":77")
        );
        // A second start that gives the foretold answer confirms it.
        let again = Remembered::after(Some(&r), told.as_bytes(), 77, "req_9").unwrap();
        assert!(again.confirmed);
        // One that differs anywhere else takes the trust away.
        let changed = told.replace("ANTHROPIC_API_KEY", "none");
        let after = Remembered::after(Some(&again), changed.as_bytes(), 77, "req_9").unwrap();
        assert!(!after.confirmed);
        assert_eq!(after.line, changed);
    }

    #[test]
    fn answers_that_cannot_be_foretold_are_not_kept() {
        // The pid is not the child's (a wrapper script started the CLI).
        assert!(Remembered::after(None, ANSWER.as_bytes(), 5, "req_1").is_none());
        // No pid, or two.
        let none = ANSWER.replace("\"pid\":4242,", "");
        assert!(Remembered::after(None, none.as_bytes(), 4242, "req_1").is_none());
        let two = ANSWER.replace("\"account\"", "\"pid\":4242,\"account\"");
        assert!(Remembered::after(None, two.as_bytes(), 4242, "req_1").is_none());
        // Another request's answer.
        assert!(Remembered::after(None, ANSWER.as_bytes(), 4242, "req_2").is_none());
        // A longer pid that starts with the same digits is not the pid.
        let longer = ANSWER.replace("4242", "42420");
        assert!(Remembered::after(None, longer.as_bytes(), 4242, "req_1").is_none());
    }

    #[test]
    fn saved_privately_and_loaded() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = DataDir::open_at(t.path()).unwrap();
        let r = Remembered::after(None, ANSWER.as_bytes(), 4242, "req_1").unwrap();
        save(&d, "k", &r).unwrap();
        assert_eq!(load(&d, "k"), Some(r));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&t.path().join("initialize")), 0o700);
        assert_eq!(mode(&t.path().join("initialize/k.json")), 0o600);
        assert!(load(&d, "other").is_none());
        // A planted answer that is not a private file of ours is not given.
        let planted = t.path().join("initialize/p.json");
        std::fs::write(
            &planted,
            std::fs::read(t.path().join("initialize/k.json")).unwrap(),
        )
        .unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(load(&d, "p").is_none());
        std::os::unix::fs::symlink(
            t.path().join("initialize/k.json"),
            t.path().join("initialize/l.json"),
        )
        .unwrap();
        assert!(load(&d, "l").is_none(), "never through a link");
    }

    #[test]
    fn only_the_most_recently_written_scopes_are_kept() {
        let t = tempfile::tempdir().unwrap();
        let d = DataDir::open_at(t.path()).unwrap();
        let r = Remembered::after(None, ANSWER.as_bytes(), 4242, "req_1").unwrap();
        let base = std::time::SystemTime::now() - std::time::Duration::from_secs(10_000);
        for i in 0..KEEP {
            save(&d, &format!("k{i}"), &r).unwrap();
            // Written in order, a second apart.
            let f = std::fs::File::options()
                .write(true)
                .open(t.path().join(format!("initialize/k{i}.json")))
                .unwrap();
            f.set_modified(base + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        save(&d, "new", &r).unwrap();
        assert!(load(&d, "new").is_some());
        assert!(load(&d, "k0").is_none(), "the oldest went");
        assert!(load(&d, "k1").is_some());
        let n = std::fs::read_dir(t.path().join("initialize"))
            .unwrap()
            .count();
        assert_eq!(n, KEEP);
    }
}
