//! The set-up: a sandbox with the shim linked as `claude` and this binary as
//! the real one, prompts of each size, and a store holding many pins and one
//! resumable conversation per size.

use claude_shim::identity;
use claude_shim::store::pins::{NewPin, Ownership};
use claude_shim::store::Store;
use serde_json::{json, Value};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{shim_exe, ASSISTANT_UUID, FAKE, REPLY_BYTES, TIME};

/// The fake's knobs for `mode`: `run` (a turn: the reply of `REPLY_BYTES`,
/// for the session it was given, leaving session files as they were, its
/// assistant message `ASSISTANT_UUID`), `ttfb` (the same, in two parts 50 ms
/// apart: the first line or byte, then the rest), `bytes` or `lines` (a flood
/// of [`flood_var`] bytes: varied bytes, or ~1 KiB stream-json lines; no turn).
pub fn fake_env(mode: &str) -> Vec<(&'static str, String)> {
    let turn = || {
        let mut reply = String::from("fake reply:");
        while reply.len() < REPLY_BYTES {
            reply.push_str(" lorem ipsum dolor sit amet");
        }
        reply.truncate(REPLY_BYTES);
        vec![
            ("FAKE_STATELESS", "1".to_owned()),
            ("FAKE_ASSISTANT_UUID", ASSISTANT_UUID.to_owned()),
            ("FAKE_REPLY", reply),
            ("FAKE_COST", "0.01".to_owned()),
        ]
    };
    match mode {
        "run" => turn(),
        "ttfb" => {
            let mut env = turn();
            env.push(("FAKE_TTFB", "0.05".to_owned()));
            env
        }
        "bytes" | "lines" => vec![("FAKE_TURN", "0".to_owned())],
        _ => panic!("no fake mode {mode}"),
    }
}

/// The knob that sets how many bytes the `bytes` or `lines` fake prints.
pub fn flood_var(mode: &str) -> &'static str {
    match mode {
        "lines" => "FAKE_EVENTS",
        _ => "FAKE_BYTES",
    }
}

pub struct Setup {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
    pub shim_home: PathBuf,
    /// `claude` → the shim.
    pub claude: PathBuf,
    /// `<bin>/fake-claude`: the fake CLI.
    pub fake: PathBuf,
}

impl Setup {
    pub fn new() -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("claude-shim-overhead.")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().canonicalize().expect("canonicalize");
        let mk = |name: &str| {
            let p = root.join(name);
            std::fs::create_dir_all(&p).expect("mkdir");
            p
        };
        let (home, work, shim_home, bin) = (mk("home"), mk("work"), mk("shim-home"), mk("bin"));
        let claude = bin.join("claude");
        symlink(shim_exe(), &claude).expect("link shim");
        let fake = bin.join("fake-claude");
        symlink(FAKE, &fake).expect("link fake");
        Setup {
            _dir: dir,
            root,
            home,
            work,
            shim_home,
            claude,
            fake,
        }
    }

    /// `claude` through the shim (`shim`) or the fake directly.
    pub fn command(&self, shim: bool, mode: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(if shim { &self.claude } else { &self.fake });
        cmd.args(args);
        self.env(cmd, mode)
    }

    /// The same under `/usr/bin/time -f %M -o <rss_file>`: a parent that forks
    /// (not vforks) the command, so its peak RSS is the command's own (wait4
    /// on our own child would report this big bench process's RSS, which the
    /// child inherits up to its exec).
    pub fn timed(&self, shim: bool, mode: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(TIME);
        cmd.args(["-f", "%M", "-o"])
            .arg(self.rss_file())
            .arg(if shim { &self.claude } else { &self.fake })
            .args(args);
        self.env(cmd, mode)
    }

    fn rss_file(&self) -> PathBuf {
        self.root.join("rss.txt")
    }

    /// Peak RSS in KiB written by the last `timed` command.
    pub fn last_rss(&self) -> i64 {
        let text = std::fs::read_to_string(self.rss_file()).expect("rss file");
        text.trim()
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .expect("rss")
    }

    fn env(&self, mut cmd: Command, mode: &str) -> Command {
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("CLAUDE_SHIM_REAL", &self.fake)
            // The fake answers one message per process: cold turns only.
            .env("CLAUDE_SHIM_WARM", "0")
            .env("CLAUDE_SHIM_HOME", &self.shim_home)
            .envs(fake_env(mode))
            .current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.shim_home.join("shim.db")).expect("open shim.db")
    }

    pub fn write_prompt(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, text).expect("write prompt");
        path
    }
}

/// Deterministic one-line text of `len` bytes.
pub fn filler(tag: &str, i: usize, len: usize) -> String {
    let mut s = format!("{tag} {i}:");
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
    ];
    let mut k = i;
    while s.len() < len {
        s.push(' ');
        s.push_str(words[k % words.len()]);
        k = k.wrapping_mul(31).wrapping_add(7);
    }
    s.truncate(len.max(tag.len() + 4));
    s
}

/// A Human:/Assistant: transcript of about `size` bytes.
pub struct Transcript {
    pub text: String,
    pub users: Vec<String>,
    pub last_reply: String,
}

pub fn transcript(tag: &str, size: usize) -> Transcript {
    let (u, a) = if size < 4000 {
        (size / 5, size * 3 / 5 - 40)
    } else {
        (300, 1500)
    };
    let turn = u + a + "Human: \n\nAssistant: \n\n".len();
    let cur_len = u;
    let n = ((size - cur_len - 9) / turn).max(1);
    let mut parts = Vec::new();
    let mut users = Vec::new();
    let mut last_reply = String::new();
    for i in 1..=n {
        let user = filler(&format!("{tag} question"), i, u);
        last_reply = filler(&format!("{tag} answer"), i, a);
        parts.push(format!("Human: {user}"));
        parts.push(format!("Assistant: {last_reply}"));
        users.push(user);
    }
    parts.push(format!(
        "Human: {}",
        filler(&format!("{tag} now"), 0, cur_len)
    ));
    Transcript {
        text: parts.join("\n\n"),
        users,
        last_reply,
    }
}

pub const MANAGED_ARGS: &[&str] = &["-p", "--output-format", "stream-json", "--verbose"];

/// `n` pins through the store's own `add_pin`: sessions of 5 turns, in 500
/// cwds (so 500 scopes), the oldest first, one second apart by the store's
/// clock.
pub fn seed_pins(s: &Setup, n: usize) -> Duration {
    let start = Instant::now();
    let now = claude_shim::store::now();
    let at = Arc::new(AtomicI64::new(now));
    let clock = at.clone();
    let mut store = Store::open_in(&s.shim_home)
        .expect("open store")
        .with_clock(move || clock.load(Ordering::Relaxed));
    let mut sid = String::new();
    let mut turns: Vec<String> = Vec::new();
    for i in 0..n {
        if i % 5 == 0 {
            sid = uuid::Uuid::new_v4().to_string();
            turns.clear();
        }
        turns.push(filler("turn", i, 80));
        let cwd = format!("/home/someone/project-{}", i % 500);
        let users: Vec<&str> = turns.iter().map(String::as_str).collect();
        let pin = NewPin::of_turns(
            &sid,
            &uuid::Uuid::new_v4().to_string(),
            &cwd,
            &users,
            &filler("preview", i, 120),
        );
        at.store(now - (n - i) as i64, Ordering::Relaxed);
        store
            .add_pin(&pin, Ownership::Kept, "/c")
            .expect("seed a pin");
    }
    start.elapsed()
}

/// The shim's scope for a `MANAGED_ARGS` turn in this set-up (from
/// `claude-shim explain --json`, so it is computed by the shim itself).
fn explain(s: &Setup, prompt: &Path) -> Value {
    let mut cmd = Command::new(shim_exe());
    cmd.arg("explain")
        .arg(prompt)
        .arg("--json")
        .arg("--")
        .args(MANAGED_ARGS)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &s.home)
        .env("CLAUDE_SHIM_REAL", &s.fake)
        .env("CLAUDE_SHIM_HOME", &s.shim_home)
        .envs(fake_env("run"))
        .current_dir(&s.work);
    let out = cmd.output().expect("explain");
    assert!(
        out.status.success(),
        "explain: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain json")
}

/// Pin the prior turns of `t` to a new session whose file exists and ends at
/// `ASSISTANT_UUID`, so the next turn resumes it in place.
pub fn seed_resumable(s: &Setup, t: &Transcript, prompt: &Path) {
    let explained = explain(s, prompt);
    let id = &explained["identity"];
    let (scope, node) = (
        id["scope"].as_str().expect("scope"),
        id["node"].as_str().expect("node"),
    );
    let session = uuid::Uuid::new_v4().to_string();
    let mut pin = NewPin::of_turns(
        &session,
        ASSISTANT_UUID,
        &s.work.to_string_lossy(),
        &[],
        &t.last_reply,
    );
    pin.scope = identity::Scope::from_stored(scope.to_owned());
    pin.node = identity::Node::from_stored(node.to_owned());
    pin.turns = t.users.len();
    let mut store = Store::open_in(&s.shim_home).expect("open store");
    store.add_pin(&pin, Ownership::Kept, "/c").expect("add_pin");
    let dir = s.home.join(".claude/projects/-bench");
    std::fs::create_dir_all(&dir).expect("mkdir projects");
    let records = [
        json!({"type": "user", "uuid": "00000000-0000-4000-8000-0000000000u1", "parentUuid": null,
               "sessionId": session, "message": {"role": "user", "content": "seeded"}}),
        json!({"type": "assistant", "uuid": ASSISTANT_UUID,
               "parentUuid": "00000000-0000-4000-8000-0000000000u1", "sessionId": session,
               "message": {"role": "assistant", "content": [{"type": "text", "text": t.last_reply}]}}),
    ];
    let body: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join(format!("{session}.jsonl")), body).expect("session file");
    let e = explain(s, prompt);
    assert!(
        e["pin"]["file_exists"] == true && e["pin"]["is_head"] == true,
        "seeded pin not found: {e:#}"
    );
}

/// Prompts of one size: one transcript that is pinned (resumed) and one that
/// is not (fresh), the same shape and size.
pub struct Case {
    pub label: &'static str,
    pub size: usize,
    pub fresh: PathBuf,
    pub resumed: PathBuf,
    /// The user turns of the resumed transcript.
    pub users: Vec<String>,
}

/// Checkpoint and truncate the WAL (as a quiet moment of `wal_autocheckpoint`
/// would leave it).
pub fn checkpoint(s: &Setup) {
    let store = Store::open_in(&s.shim_home).expect("open store");
    store
        .sqlite()
        .expect("a SQLite store")
        .execute_batch("DROP TABLE IF EXISTS bench_junk")
        .expect("drop junk");
    let _: (i64, i64, i64) = store
        .sqlite()
        .expect("a SQLite store")
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("checkpoint");
}

/// Leave about `frames` uncheckpointed pages in the WAL, the way the shim's
/// own runs do between autocheckpoints (every 1000 pages), in one
/// transaction of a junk table (dropped by `checkpoint`).
pub fn grow_wal(s: &Setup, frames: usize) {
    let store = Store::open_in(&s.shim_home).expect("open store");
    store
        .sqlite()
        .expect("a SQLite store")
        .execute_batch(
            "PRAGMA wal_autocheckpoint = 0; BEGIN; CREATE TABLE IF NOT EXISTS bench_junk (x BLOB)",
        )
        .expect("junk table");
    for _ in 0..frames {
        store
            .sqlite()
            .expect("a SQLite store")
            .execute("INSERT INTO bench_junk VALUES (zeroblob(4000))", [])
            .expect("junk");
    }
    store
        .sqlite()
        .expect("a SQLite store")
        .execute_batch("COMMIT")
        .expect("commit");
}
