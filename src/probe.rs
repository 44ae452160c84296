//! What the real binary supports, found once per binary (cached in the store
//! by path + size + mtime): its version from `--version`, visible flags from
//! `--help`, and the hidden `--resume-session-at` by looking for its option
//! name in the binary itself (`--version` accepts any flag, so trial runs
//! cannot tell). A wrong answer is safe: a refused resume reruns fresh, and a
//! flag found missing is never passed (the plan runs fresh, or as asked).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the real binary supports (one type, used by the plan, the store's
/// cache and `doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    pub version: String,
    pub resume: bool,
    pub fork_session: bool,
    pub session_id: bool,
    pub resume_session_at: bool,
}

/// The newest Claude Code release this build's tests ran against: the main
/// pin (`.ci/claude-code-version`) or the `newest` of
/// `.ci/claude-code-versions-extra`, where CI runs the core e2e tests (a test
/// keeps them the same).
pub const NEWEST_TESTED: &str = "2.1.332";

/// `major.minor.patch` of a version word (`2.1.330`), for comparing.
pub fn release(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let triple = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(triple)
}

impl Capabilities {
    /// Whether this is a release newer than any this build was tested with.
    pub fn newer_than_tested(&self) -> bool {
        match (release(&self.version), release(NEWEST_TESTED)) {
            (Some(v), Some(tested)) => v > tested,
            _ => false,
        }
    }

    /// Whether the shim may plan sessions at all: it passes `--session-id`
    /// (fresh, fork), `--resume`, `--fork-session` and `--resume-session-at`.
    /// Before 1.0.124 `-p --resume S` continued under a new id, unseen in text
    /// output; 1.0.128 is the first release with all four (docs/cli-versions.md).
    pub fn sessions(&self) -> bool {
        self.resume && self.session_id && self.fork_session && self.resume_session_at
    }
}

pub fn probe(real: &Path, guard: &str) -> Option<Capabilities> {
    let version = output(real, "--version", guard)?;
    let help = output(real, "--help", guard).unwrap_or_default();
    let resume_session_at = contains(real, b"--resume-session-at").unwrap_or(false);
    read(&version, &help, resume_session_at)
}

/// Capabilities from what `--version` and `--help` printed and whether the
/// binary names `--resume-session-at`. `None`: not a Claude Code binary.
fn read(version: &str, help: &str, resume_session_at: bool) -> Option<Capabilities> {
    // A version is a short word; anything else is not a Claude Code binary.
    let version = version.split_whitespace().next()?.to_owned();
    if version.len() > 64 {
        return None;
    }
    let flags = options(help);
    let has = |name: &str| flags.contains(&name);
    Some(Capabilities {
        version,
        resume: has("--resume"),
        fork_session: has("--fork-session"),
        session_id: has("--session-id"),
        resume_session_at,
    })
}

/// The long options `--help` lists: the first column of its option lines
/// (`  -r, --resume [value]   Resume…`). Descriptions mention other flags
/// (2.1.330: `--resume <id> to pick the session`), so they do not count.
fn options(help: &str) -> Vec<&str> {
    help.lines()
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|rest| rest.starts_with('-'))
        .flat_map(|rest| {
            let column = rest.split("  ").next().unwrap_or("");
            column
                .split(", ")
                .filter_map(|names| names.split_whitespace().next())
        })
        .filter(|name| name.starts_with("--"))
        .collect()
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
    #[test]
    fn the_newest_tested_release_is_the_newest_ci_runs() {
        // The main pin, or a newer release CI runs the core e2e tests on.
        let pinned = include_str!("../.ci/claude-code-version").trim();
        let extra = include_str!("../.ci/claude-code-versions-extra");
        let newest = extra
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .filter_map(|l| l.split_whitespace().nth(1))
            .chain([pinned])
            .max_by_key(|v| super::release(v))
            .unwrap();
        assert_eq!(super::NEWEST_TESTED, newest);
    }

    #[test]
    fn a_newer_release_than_tested_is_told_apart() {
        let caps = |v: &str| super::Capabilities {
            version: v.into(),
            resume: true,
            fork_session: true,
            session_id: true,
            resume_session_at: true,
        };
        assert!(caps("2.1.333").newer_than_tested());
        assert!(caps("2.2.0").newer_than_tested());
        assert!(!caps(super::NEWEST_TESTED).newer_than_tested());
        assert!(!caps("2.1.302").newer_than_tested());
        assert!(
            !caps("2.1.330-beta").newer_than_tested(),
            "unparsed: not claimed newer"
        );
        assert_eq!(super::release("2.1.330"), Some((2, 1, 330)));
    }

    use super::*;

    /// `--help` of real releases (tests/fixtures/help): each lacks a flag
    /// the shim would use, or has them all.
    #[test]
    fn capabilities_from_real_help() {
        let help = |v: &str| {
            let file = format!(
                "{}/tests/fixtures/help/claude-{v}.txt",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
        };
        // (release, resume, fork-session, session-id)
        let rows = [
            ("1.0.30", true, false, false),
            ("1.0.60", true, false, true),
            ("1.0.124", true, true, true),
            ("2.1.330", true, true, true),
        ];
        for (v, resume, fork_session, session_id) in rows {
            let got = read(&format!("{v} (Claude Code)\n"), &help(v), false).unwrap();
            let want = Capabilities {
                version: v.into(),
                resume,
                fork_session,
                session_id,
                resume_session_at: false,
            };
            assert_eq!(got, want, "{v}");
        }
    }

    #[test]
    fn a_flag_named_only_in_a_description_is_not_there() {
        let help = "Options:\n  -c, --continue   Continue (with --continue or\n                   \
                    --resume <id> to pick the session)\n  --fork-session-x  uses --session-id\n";
        let c = read("9.9.9", help, true).unwrap();
        assert!(!c.resume && !c.fork_session && !c.session_id, "{c:?}");
        assert!(c.resume_session_at);
        assert_eq!(options(help), ["--continue", "--fork-session-x"]);
    }

    #[test]
    fn sessions_need_all_four_flags() {
        let all = Capabilities {
            version: "2.1.330".into(),
            resume: true,
            fork_session: true,
            session_id: true,
            resume_session_at: true,
        };
        assert!(all.sessions());
        let without: [fn(&mut Capabilities); 4] = [
            |c| c.resume = false,
            |c| c.fork_session = false,
            |c| c.session_id = false,
            |c| c.resume_session_at = false,
        ];
        for (i, drop) in without.iter().enumerate() {
            let mut c = all.clone();
            drop(&mut c);
            assert!(!c.sessions(), "flag {i} missing");
        }
    }

    #[test]
    fn not_a_claude_binary() {
        assert_eq!(read("", "", true), None);
        assert_eq!(read(&"x".repeat(65), "", true), None);
        // No help at all: nothing is passed that the binary may not know.
        assert_eq!(
            read("1.0.0 (Claude Code)", "", false),
            Some(Capabilities {
                version: "1.0.0".into(),
                ..Default::default()
            })
        );
    }

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
