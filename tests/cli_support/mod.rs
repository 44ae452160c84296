//! Shared by the `tests/cli_*.rs` tests of the management commands: a
//! throwaway HOME and CLAUDE_SHIM_HOME, a small fake real `claude`, the
//! built binary run with a clean environment, and the shells, which must be
//! installed (a missing shell fails the test, it never skips).
#![allow(dead_code)]

use claude_shim::store::Store;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_claude-shim");

/// Answers the shim's probes like Claude Code 2.1.330; with
/// `--output-format json` prints a result event (session from
/// `--session-id`), else `args: …`; exits `$FAKE_EXIT` (default 0).
const FAKE: &str = r#"#!/bin/sh
if [ "$#" -eq 1 ]; then
    case "$1" in
    --version) echo "2.1.330 (Claude Code)"; exit 0 ;;
    --help) echo "Usage: claude -p --resume --fork-session --session-id <uuid> --output-format"; exit 0 ;;
    esac
fi
json= session=6e8e0435-8e12-4245-aa25-f674ed4e97a7 prev=
for a in "$@"; do
    [ "$prev" = --output-format ] && [ "$a" = json ] && json=1
    [ "$prev" = --session-id ] && session=$a
    prev=$a
done
cat >/dev/null
if [ -n "$json" ]; then
    printf '{"type":"result","subtype":"success","is_error":false,"result":"Hello from the fake.","session_id":"%s","usage":{"input_tokens":12,"cache_creation_input_tokens":3000,"cache_read_input_tokens":9000,"output_tokens":40},"total_cost_usd":0.0123}\n' "$session"
else
    printf 'args:'; printf ' %s' "$@"; printf '\n'
fi
exit "${FAKE_EXIT:-0}"
"#;

pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    /// CLAUDE_SHIM_HOME
    pub data: PathBuf,
    /// Holds the fake real `claude`.
    pub real_dir: PathBuf,
    /// Holds a `claude-shim` link to the binary under test.
    pub tools: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Self::with_data_name("shim-home")
    }

    /// A sandbox whose data directory has an awkward name.
    pub fn with_data_name(name: &str) -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical tempdir");
        let home = root.join("home");
        let real_dir = root.join("real");
        let tools = root.join("tools");
        for d in [&home, &real_dir, &tools] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let fake = real_dir.join("claude");
        std::fs::write(&fake, FAKE).expect("write fake");
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        symlink(BIN, tools.join("claude-shim")).expect("link claude-shim");
        Sandbox {
            _dir: dir,
            data: root.join(name),
            root,
            home,
            real_dir,
            tools,
        }
    }

    /// The shim directory `install` uses by default.
    pub fn shim_dir(&self) -> PathBuf {
        self.data.join("bin")
    }

    pub fn fake(&self) -> PathBuf {
        self.real_dir.join("claude")
    }

    pub fn config(&self) -> PathBuf {
        self.home.join(".claude")
    }

    /// PATH made of these directories, then the system's.
    pub fn path_with(&self, first: &[&Path]) -> String {
        let mut dirs: Vec<PathBuf> = first.iter().map(|p| p.to_path_buf()).collect();
        dirs.push("/usr/bin".into());
        dirs.push("/bin".into());
        std::env::join_paths(dirs)
            .expect("PATH")
            .to_string_lossy()
            .into_owned()
    }

    /// A clean environment for any program (warm turns off: the fake CLI
    /// answers one message per process).
    pub fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("CLAUDE_SHIM_HOME", &self.data)
            .env("PATH", self.path_with(&[]))
            .env("LC_ALL", "C")
            .env("CLAUDE_SHIM_WARM", "0")
            .current_dir(&self.root);
    }

    /// `claude-shim <args>`.
    pub fn cli(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        self.env(&mut cmd);
        cmd.args(args);
        cmd
    }

    /// The store, created if need be, for seeding.
    pub fn store(&self) -> Store {
        Store::open_in(&self.data).expect("open store")
    }

    /// A session file for `id`, as Claude Code keeps it.
    pub fn session_file(&self, id: &str) -> PathBuf {
        let dir = self.config().join("projects/-w");
        std::fs::create_dir_all(&dir).expect("mkdir projects");
        let file = dir.join(format!("{id}.jsonl"));
        std::fs::write(&file, "{\"type\":\"assistant\",\"uuid\":\"a1\"}\n").expect("session file");
        file
    }
}

/// Run to completion (no stdin).
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(std::process::Stdio::null());
    cmd.output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run and insist on success; returns stdout.
#[track_caller]
pub fn ok(cmd: Command) -> String {
    let o = run(cmd);
    assert!(
        o.status.success(),
        "failed ({:?})\nstdout: {}\nstderr: {}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// A shell by name from /usr/bin or /bin; panics (never skips) when absent.
#[track_caller]
pub fn shell(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "{name} is not installed; these tests need bash, zsh, fish and shellcheck \
         (apt-get install -y zsh fish shellcheck, as .ci/run does)"
    );
}
