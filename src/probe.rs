//! What the real binary supports, found once per binary (cached in the store
//! by path + size + mtime): its version from `--version`, visible flags from
//! `--help`, and the hidden `--resume-session-at` by looking for its option
//! name in the binary itself (`--version` accepts any flag, so trial runs
//! cannot tell). A wrong answer is safe: a refused resume reruns fresh.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the real binary supports (one type, used by the plan, the store's
/// cache and `doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Capabilities {
    pub version: String,
    pub resume: bool,
    pub fork_session: bool,
    pub session_id: bool,
    pub resume_session_at: bool,
}

pub fn probe(real: &Path, guard: &str) -> Option<Capabilities> {
    let version = output(real, "--version", guard)?;
    // A version is a short word; anything else is not a Claude Code binary.
    let version = version.split_whitespace().next()?.to_owned();
    if version.len() > 64 {
        return None;
    }
    let help = output(real, "--help", guard).unwrap_or_default();
    Some(Capabilities {
        version,
        resume: help.contains("--resume"),
        fork_session: help.contains("--fork-session"),
        session_id: help.contains("--session-id"),
        resume_session_at: contains(real, b"--resume-session-at").unwrap_or(false),
    })
}

/// Output of a probe beyond this is ignored.
const PROBE_OUTPUT_CAP: u64 = 1 << 20;

/// A probe that takes longer than this is abandoned (and killed).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Run `real flag` and return its stdout when it succeeds in time. The
/// probe dies with the shim (PDEATHSIG) and never outlives its timeout.
fn output(real: &Path, flag: &str, guard: &str) -> Option<String> {
    let mut cmd = Command::new(real);
    cmd.arg(flag)
        .env(crate::env::GUARD, guard)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let parent = nix::unistd::getpid();
    let portable = crate::platform::portable();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            crate::runner::signals::restore_file_size_limit();
            crate::platform::die_with_parent(nix::sys::signal::Signal::SIGKILL, parent, portable)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn().ok()?;
    let mut stdout = child.stdout.take()?;
    // `--version` and `--help` print a few KiB; never hold more.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(PROBE_OUTPUT_CAP).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let out = reader.join().ok()?;
    status
        .success()
        .then(|| String::from_utf8_lossy(&out).into_owned())
}

/// Stream the file looking for `needle` (which may straddle chunk borders).
fn contains(path: &Path, needle: &[u8]) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path.canonicalize()?)?;
    // The binary is ~380 MB: a vectorised search keeps this to a read.
    let finder = memchr::memmem::Finder::new(needle);
    let mut buf = vec![0u8; 4 << 20];
    let keep = needle.len() - 1;
    let mut filled = 0;
    loop {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(false);
        }
        let end = filled + n;
        if finder.find(&buf[..end]).is_some() {
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
