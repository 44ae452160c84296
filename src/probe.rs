//! What the real binary supports, found once per binary (cached in the store
//! by path + size + mtime): its version from `--version`, visible flags from
//! `--help`, and the hidden `--resume-session-at` by looking for its option
//! name in the binary itself (`--version` accepts any flag, so trial runs
//! cannot tell). A wrong answer is safe: a refused resume reruns fresh.

use crate::store::caps::Capabilities;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

pub fn probe(real: &Path, guard: &str) -> Option<Capabilities> {
    let version = output(real, "--version", guard)?;
    let version = version.split_whitespace().next()?.to_owned();
    let help = output(real, "--help", guard).unwrap_or_default();
    Some(Capabilities {
        version,
        resume: help.contains("--resume"),
        fork_session: help.contains("--fork-session"),
        session_id: help.contains("--session-id"),
        resume_session_at: contains(real, b"--resume-session-at").unwrap_or(false),
    })
}

fn output(real: &Path, flag: &str, guard: &str) -> Option<String> {
    let out = Command::new(real)
        .arg(flag)
        .env(crate::env::GUARD, guard)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Stream the file looking for `needle` (which may straddle chunk borders).
fn contains(path: &Path, needle: &[u8]) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path.canonicalize()?)?;
    let mut buf = vec![0u8; 1 << 20];
    let keep = needle.len() - 1;
    let mut filled = 0;
    loop {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(false);
        }
        let end = filled + n;
        if buf[..end]
            .windows(needle.len())
            .any(|w| w[0] == needle[0] && w == needle)
        {
            return Ok(true);
        }
        let tail = end.saturating_sub(keep);
        buf.copy_within(tail..end, 0);
        filled = end - tail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_needle_across_chunk_borders() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("bin");
        let mut data = vec![b'x'; (1 << 20) - 5];
        data.extend_from_slice(b"--resume-session-at <id>");
        std::fs::write(&f, &data).unwrap();
        assert!(contains(&f, b"--resume-session-at").unwrap());
        assert!(!contains(&f, b"--resume-session-after").unwrap());
    }
}
