//! What the shim costs a caller, measured against the same minimal fake CLI
//! run directly, side by side in one run. Prints figures; asserts nothing.
//!
//! - wall time per invocation, pass-through / fresh-managed / resumed-managed,
//!   with 1 KiB, 100 KiB and 1 MiB prompts (Human:/Assistant: transcripts on
//!   stdin), the database holding 100k pins; shim and direct runs interleaved;
//! - time to first stdout byte;
//! - stdout throughput through the shim's tee vs a plain pipe, 1 GiB;
//! - peak RSS, from GNU time (`/usr/bin/time -f %M`): the largest of the
//!   process and the children it waited for, so the fake is counted too (its
//!   own figure is listed).
//!
//! Run: `cargo bench --bench overhead`
//!
//! - `BENCH_N` — runs per side and case (default 100);
//! - `BENCH_PINS` — pins seeded into the database (default 100000);
//! - `BENCH_TEE_BYTES` — bytes per throughput run (default 1 GiB);
//! - `BENCH_TEE_REPS` — throughput runs per side (default 5);
//! - `BENCH_ONLY` — comma-separated sections: wall, ttfb, tee, rss;
//! - `BENCH_KEEP` — keep the set-up directory (and an `env.sh`) for profiling;
//! - `BENCH_SHIM` — another claude-shim binary to measure (e.g. a static build).
//!
//! The fake CLI is this bench binary itself, started with `OVERHEAD_FAKE` set
//! (so no interpreter start-up blurs the figures): it answers the shim's
//! `--version`/`--help` probe, reads all of stdin, and prints what the real
//! CLI would (text, or stream-json init + assistant + result naming the
//! session it was given by `--resume`/`--session-id`), so the shim pins.

use claude_shim::identity;
use claude_shim::store::pins::NewPin;
use claude_shim::store::Store;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shim under test: `BENCH_SHIM`, else the one cargo built.
fn shim_exe() -> PathBuf {
    std::env::var_os("BENCH_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_claude-shim")))
}
/// GNU time, for peak RSS (`apt-get install time`).
const TIME: &str = "/usr/bin/time";
/// Selects the fake's behaviour: `run`, `ttfb`, `bytes`, `lines`.
const FAKE_ENV: &str = "OVERHEAD_FAKE";
/// Bytes the `bytes`/`lines` fake prints.
const FAKE_BYTES_ENV: &str = "OVERHEAD_FAKE_BYTES";
/// The assistant message uuid every fake reply carries; seeded pins end at it
/// and the session files name it last, so a resumed turn stays the head.
const ASSISTANT_UUID: &str = "5e1f0000-0000-4000-8000-00000000a551";
/// Session id the fake reports when it was given none (direct runs).
const DIRECT_SESSION: &str = "d1000000-0000-4000-8000-000000000001";
const REPLY_BYTES: usize = 1500;
const SIZES: [(&str, usize); 3] = [
    ("1 KiB", 1 << 10),
    ("100 KiB", 100 << 10),
    ("1 MiB", 1 << 20),
];

// ---------------------------------------------------------------- the fake

fn reply_text() -> String {
    let mut s = String::from("fake reply:");
    while s.len() < REPLY_BYTES {
        s.push_str(" lorem ipsum dolor sit amet");
    }
    s.truncate(REPLY_BYTES);
    s
}

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let eq = format!("{flag}=");
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(&eq).map(str::to_owned)
        }
    })
}

/// (first part, rest) of what the fake prints for one turn.
fn fake_output(args: &[String]) -> (Vec<u8>, Vec<u8>) {
    let session = flag_value(args, "--resume")
        .or_else(|| flag_value(args, "--session-id"))
        .unwrap_or_else(|| DIRECT_SESSION.to_owned());
    let reply = reply_text();
    if flag_value(args, "--output-format").as_deref() == Some("stream-json") {
        // Keys in the CLI's own order ("type" first): the observer relies on it.
        let text = serde_json::to_string(&reply).expect("json string");
        let init = format!(
            r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session}","tools":[],"model":"fake","uuid":"00000000-0000-4000-8000-0000000000a1"}}"#
        );
        let assistant = format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","model":"fake","content":[{{"type":"text","text":{text}}}],"stop_reason":null}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"{ASSISTANT_UUID}"}}"#
        );
        let result = json!({"type": "result", "subtype": "success", "is_error": false,
            "result": reply, "session_id": session, "total_cost_usd": 0.01,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 375}});
        (
            format!("{init}\n").into_bytes(),
            format!("{assistant}\n{result}\n").into_bytes(),
        )
    } else {
        let (first, rest) = reply.split_at(1);
        (first.as_bytes().to_vec(), format!("{rest}\n").into_bytes())
    }
}

fn fake_main(mode: &str) -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    if args.len() == 1 && (args[0] == "--version" || args[0] == "--help") {
        let text = if args[0] == "--version" {
            "2.1.330 (Claude Code)\n"
        } else {
            "Usage: claude [options] [command] [prompt]\n  -r, --resume [value]  --fork-session  \
             --session-id <uuid>  --resume-session-at <id>  --output-format <format>\n"
        };
        let _ = out.write_all(text.as_bytes());
        std::process::exit(0);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let _ = stdin.lock().read_to_end(&mut Vec::new());
    }
    match mode {
        "bytes" | "lines" => {
            let total: u64 = std::env::var(FAKE_BYTES_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1 << 30);
            let chunk = if mode == "lines" {
                json_lines_chunk()
            } else {
                text_chunk()
            };
            // write(2) on fd 1, unbuffered: std's line-buffered stdout would
            // rescan every partial pipe write for its last newline.
            // SAFETY: fd 1 is open for the life of the process.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
            let mut left = total;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                let mut part = &chunk[..n];
                while !part.is_empty() {
                    match nix::unistd::write(fd, part) {
                        Ok(w) => part = &part[w..],
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(_) => std::process::exit(1),
                    }
                }
                left -= n as u64;
            }
        }
        _ => {
            let (first, rest) = fake_output(&args);
            let _ = out.write_all(&first);
            let _ = out.flush();
            if mode == "ttfb" {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = out.write_all(&rest);
        }
    }
    let _ = out.flush();
    std::process::exit(0)
}

/// 1 MiB of text in 100-byte lines.
fn text_chunk() -> Vec<u8> {
    let mut v = Vec::with_capacity(1 << 20);
    let mut i = 0u32;
    while v.len() < 1 << 20 {
        v.push(if v.len() % 100 == 99 {
            b'\n'
        } else {
            b'a' + (i % 26) as u8
        });
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12345) >> 3;
    }
    v
}

/// ~1 MiB of stream-json `stream_event` lines of ~1 KiB (what
/// `--include-partial-messages` prints, in the CLI's key order), cut at a
/// line end.
fn json_lines_chunk() -> Vec<u8> {
    let text = serde_json::to_string(&"lorem ipsum dolor sit amet ".repeat(36)).expect("json");
    let line = format!(
        r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{text}}}}},"session_id":"{DIRECT_SESSION}","parent_tool_use_id":null,"uuid":"00000000-0000-4000-8000-0000000000e1"}}"#
    );
    let mut v = Vec::with_capacity(1 << 20);
    while v.len() + line.len() < 1 << 20 {
        v.extend_from_slice(line.as_bytes());
        v.push(b'\n');
    }
    v
}

// ---------------------------------------------------------------- set-up

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    work: PathBuf,
    shim_home: PathBuf,
    /// `claude` → the shim.
    claude: PathBuf,
    /// The fake CLI (this binary).
    fake: PathBuf,
}

impl Setup {
    fn new() -> Setup {
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
        symlink(std::env::current_exe().expect("current_exe"), &fake).expect("link fake");
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
    fn command(&self, shim: bool, mode: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(if shim { &self.claude } else { &self.fake });
        cmd.args(args);
        self.env(cmd, mode)
    }

    /// The same under `/usr/bin/time -f %M -o <rss_file>`: a parent that forks
    /// (not vforks) the command, so its peak RSS is the command's own (wait4
    /// on our own child would report this big bench process's RSS, which the
    /// child inherits up to its exec).
    fn timed(&self, shim: bool, mode: &str, args: &[&str]) -> Command {
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
    fn last_rss(&self) -> i64 {
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
            .env(FAKE_ENV, mode)
            .current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.shim_home.join("shim.db")).expect("open shim.db")
    }

    fn write_prompt(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, text).expect("write prompt");
        path
    }
}

/// Deterministic one-line text of `len` bytes.
fn filler(tag: &str, i: usize, len: usize) -> String {
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
struct Transcript {
    text: String,
    users: Vec<String>,
    last_reply: String,
}

fn transcript(tag: &str, size: usize) -> Transcript {
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

const MANAGED_ARGS: &[&str] = &["-p", "--output-format", "stream-json", "--verbose"];

/// 100k pins (5 per session, in 500 scopes) in one transaction.
fn seed_pins(s: &Setup, n: usize) -> Duration {
    let start = Instant::now();
    let mut store = Store::open_in(&s.shim_home).expect("open store");
    let tx = store.conn.transaction().expect("tx");
    {
        let mut pin = tx
            .prepare(
                "INSERT INTO pins (scope, node, session, assistant_uuid, reply_hashes, preamble_hash,
                                   turns, cwd, created_at, reply_preview)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?8, ?9)",
            )
            .expect("prepare");
        let mut session = tx
            .prepare("INSERT INTO sessions (session, head_uuid) VALUES (?1, ?2)")
            .expect("prepare");
        let now = claude_shim::store::now();
        let mut sid = String::new();
        for i in 0..n {
            let scope = identity::ReplyHash::of(&format!("scope {}", i % 500)).to_string();
            if i % 5 == 0 {
                sid = uuid::Uuid::new_v4().to_string();
            }
            let at = uuid::Uuid::new_v4().to_string();
            let chain = identity::ReplyHash::of(&format!("chain {i}")).to_string();
            let hashes =
                json!([identity::ReplyHash::of(&format!("reply {i}")).to_string()]).to_string();
            let preview = filler("preview", i, 120);
            pin.execute(rusqlite::params![
                scope,
                chain,
                sid,
                at,
                hashes,
                (i % 5 + 1) as i64,
                "/home/someone/project",
                now - (n - i) as i64,
                preview
            ])
            .expect("insert pin");
            if i % 5 == 4 {
                session
                    .execute(rusqlite::params![sid, at])
                    .expect("insert session");
            }
        }
    }
    tx.commit().expect("commit");
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
        .env(FAKE_ENV, "run")
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
fn seed_resumable(s: &Setup, t: &Transcript, prompt: &Path) {
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
    store
        .add_pin(&pin, claude_shim::store::pins::Ownership::Kept, "/c")
        .expect("add_pin");
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
struct Case {
    label: &'static str,
    size: usize,
    fresh: PathBuf,
    resumed: PathBuf,
    /// The user turns of the resumed transcript.
    users: Vec<String>,
}

// ---------------------------------------------------------------- measuring

/// Reap `child`; panics unless it exited 0.
fn reap(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(status.success(), "{what} failed: {status:?}");
}

/// Run to completion with `stdin` from a file; wall time.
fn wall(mut cmd: Command, stdin: Option<&Path>) -> Duration {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn");
    reap(child, &format!("{cmd:?}"));
    start.elapsed()
}

/// Time from spawn to the first stdout byte.
fn first_byte(mut cmd: Command, stdin: Option<&Path>) -> Duration {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    cmd.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut byte = [0u8; 1];
    let n = out.read(&mut byte).expect("read");
    let t = start.elapsed();
    assert_eq!(n, 1, "{cmd:?}: no output");
    let _ = std::io::copy(&mut out, &mut std::io::sink());
    reap(child, &format!("{cmd:?}"));
    t
}

/// Read all stdout; (bytes, elapsed).
fn drain(mut cmd: Command, stdin: Option<&Path>) -> (u64, Duration) {
    if let Some(p) = stdin {
        cmd.stdin(File::open(p).expect("open prompt"));
    }
    cmd.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    let t = start.elapsed();
    reap(child, &format!("{cmd:?}"));
    (total, t)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("nan"));
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

struct Compared {
    shim_p50: f64,
    shim_p90: f64,
    direct_p50: f64,
    direct_p90: f64,
    paired: f64,
}

/// [`compare`] from the same database state: the WAL checkpointed, so every
/// case starts alike and its own runs grow the WAL as they would (the shim
/// closes without a checkpoint; ~8 pages a managed run, checkpointed at
/// 1000), covering about the first 80% of a real cycle.
fn compare_in(
    s: &Setup,
    n: usize,
    shim: impl FnMut() -> Duration,
    direct: impl FnMut() -> Duration,
) -> Compared {
    checkpoint(s);
    compare(n, shim, direct)
}

/// `n` shim runs interleaved with `n` direct runs, after a warm-up.
fn compare(
    n: usize,
    mut shim: impl FnMut() -> Duration,
    mut direct: impl FnMut() -> Duration,
) -> Compared {
    for _ in 0..3 {
        shim();
        direct();
    }
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // Alternate who goes first, so neither always runs on a warmer cache.
        if i % 2 == 0 {
            a.push(ms(shim()));
            b.push(ms(direct()));
        } else {
            b.push(ms(direct()));
            a.push(ms(shim()));
        }
    }
    let diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    Compared {
        shim_p50: quantile(&a, 0.5),
        shim_p90: quantile(&a, 0.9),
        direct_p50: quantile(&b, 0.5),
        direct_p90: quantile(&b, 0.9),
        paired: quantile(&diffs, 0.5),
    }
}

fn row(label: &str, c: &Compared) {
    println!(
        "| {label:<36} | {:>8.2} | {:>8.2} | {:>8.2} | {:>8.2} | {:>+8.2} | {:>+8.2} |",
        c.shim_p50,
        c.shim_p90,
        c.direct_p50,
        c.direct_p90,
        c.shim_p50 - c.direct_p50,
        c.paired,
    );
}

fn header(first: &str) {
    println!(
        "| {first:<36} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} |",
        "shim p50", "shim p90", "dir p50", "dir p90", "Δ p50", "Δ paired"
    );
    println!("|{}|{}", "-".repeat(38), "----------|".repeat(6));
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "?".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or("?".into(), |kib| format!("{:.1} GiB", kib / 1048576.0));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cores} cores, {cpu}, {mem} RAM; load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn main() {
    if let Ok(mode) = std::env::var(FAKE_ENV) {
        fake_main(&mode);
    }
    let n: usize = env_or("BENCH_N", 100usize).max(1);
    let pins: usize = env_or("BENCH_PINS", 100_000usize);
    let tee_bytes: u64 = env_or("BENCH_TEE_BYTES", 1u64 << 30);
    let tee_reps: usize = env_or("BENCH_TEE_REPS", 5usize).max(1);
    let only: Option<Vec<String>> = std::env::var("BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let want = |s: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == s));

    let s = Setup::new();
    if std::env::var_os("BENCH_KEEP").is_some() {
        // For profiling by hand: the set-up stays, with an env file to source.
        let envf = s.root.join("env.sh");
        let text = format!(
            "export HOME={h} CLAUDE_SHIM_REAL={f} CLAUDE_SHIM_HOME={sh} {FAKE_ENV}=run\ncd {w}\n# {c} -p --output-format stream-json --verbose < {r}/resumed-1048576.txt\n",
            h = s.home.display(),
            f = s.fake.display(),
            sh = s.shim_home.display(),
            w = s.work.display(),
            c = s.claude.display(),
            r = s.root.display()
        );
        std::fs::write(&envf, text).expect("env file");
        println!("keeping {} (source {})", s.root.display(), envf.display());
    }
    println!("claude-shim overhead: {}", shim_exe().display());
    println!("machine: {}", machine());
    let took = seed_pins(&s, pins);
    let db_size = std::fs::metadata(s.shim_home.join("shim.db")).map_or(0, |m| m.len());
    println!(
        "database: {pins} pins seeded in {:.1} s ({:.1} MiB)",
        took.as_secs_f64(),
        db_size as f64 / 1048576.0
    );

    // Prompts: per size, one transcript that is pinned (resumed) and one
    // that is not (fresh); both the same shape and size.
    let mut cases = Vec::new();
    for (label, size) in SIZES {
        let fresh = transcript("fresh", size);
        let resumed = transcript("resumed", size);
        let fresh_path = s.write_prompt(&format!("fresh-{size}.txt"), &fresh.text);
        let resumed_path = s.write_prompt(&format!("resumed-{size}.txt"), &resumed.text);
        seed_resumable(&s, &resumed, &resumed_path);
        println!(
            "prompt {label}: {} B, {} prior turns (fresh), {} B (resumed)",
            fresh.text.len(),
            fresh.users.len(),
            resumed.text.len()
        );
        cases.push(Case {
            label,
            size,
            fresh: fresh_path,
            resumed: resumed_path,
            users: resumed.users,
        });
    }
    let tiny = s.write_prompt("hi.txt", "hi");
    println!("N = {n} runs per side, interleaved; times in ms\n");

    if want("wall") {
        println!("### Wall time per invocation (shim vs the fake run directly)\n");
        header("case");
        row(
            "pass-through `claude --version`",
            &compare_in(
                &s,
                n,
                || wall(s.command(true, "run", &["--version"]), None),
                || wall(s.command(false, "run", &["--version"]), None),
            ),
        );
        for c in &cases {
            row(
                &format!("pass-through, {} on stdin", c.label),
                &compare_in(
                    &s,
                    n,
                    || wall(s.command(true, "run", &[]), Some(&c.fresh)),
                    || wall(s.command(false, "run", &[]), Some(&c.fresh)),
                ),
            );
        }
        for c in &cases {
            row(
                &format!("fresh-managed, {}", c.label),
                &compare_in(
                    &s,
                    n,
                    || wall(s.command(true, "run", MANAGED_ARGS), Some(&c.fresh)),
                    || wall(s.command(false, "run", MANAGED_ARGS), Some(&c.fresh)),
                ),
            );
        }
        for c in &cases {
            row(
                &format!("resumed-managed, {}", c.label),
                &compare_in(
                    &s,
                    n,
                    || wall(s.command(true, "run", MANAGED_ARGS), Some(&c.resumed)),
                    || wall(s.command(false, "run", MANAGED_ARGS), Some(&c.resumed)),
                ),
            );
        }
        println!(
            "\nΔ p50 = shim median − direct median; Δ paired = median over pairs of (shim − direct).\n\
             Resumed: the shim sends the fake only the new message; direct, the fake reads the whole prompt."
        );
    }

    if want("ttfb") {
        println!(
            "\n### Time to first stdout byte (the fake prints its first line, then waits 50 ms)\n"
        );
        header("case (1 KiB prompt)");
        let c = &cases[0];
        let text: &[&str] = &["-p"];
        row(
            "pass-through",
            &compare_in(
                &s,
                n,
                || first_byte(s.command(true, "ttfb", &[]), Some(&c.fresh)),
                || first_byte(s.command(false, "ttfb", &[]), Some(&c.fresh)),
            ),
        );
        row(
            "fresh-managed, text",
            &compare_in(
                &s,
                n,
                || first_byte(s.command(true, "ttfb", text), Some(&c.fresh)),
                || first_byte(s.command(false, "ttfb", text), Some(&c.fresh)),
            ),
        );
        row(
            "fresh-managed, stream-json",
            &compare_in(
                &s,
                n,
                || first_byte(s.command(true, "ttfb", MANAGED_ARGS), Some(&c.fresh)),
                || first_byte(s.command(false, "ttfb", MANAGED_ARGS), Some(&c.fresh)),
            ),
        );
        row(
            "resumed-managed, stream-json",
            &compare_in(
                &s,
                n,
                || first_byte(s.command(true, "ttfb", MANAGED_ARGS), Some(&c.resumed)),
                || first_byte(s.command(false, "ttfb", MANAGED_ARGS), Some(&c.resumed)),
            ),
        );
        row(
            "resumed-managed, text (held to exit)",
            &compare_in(
                &s,
                n,
                || first_byte(s.command(true, "ttfb", text), Some(&c.resumed)),
                || first_byte(s.command(false, "ttfb", text), Some(&c.resumed)),
            ),
        );
    }

    if want("tee") {
        println!(
            "\n### Stdout throughput, {:.2} GiB per run, {tee_reps} runs per side, interleaved\n",
            tee_bytes as f64 / (1u64 << 30) as f64
        );
        println!(
            "| {:<44} | {:>9} | {:>9} | {:>9} | {:>8} |",
            "path", "GB/s p50", "GB/s min", "GB/s max", "RSS MiB"
        );
        println!(
            "|{}|{}|{}|{}|{}|",
            "-".repeat(46),
            "-".repeat(11),
            "-".repeat(11),
            "-".repeat(11),
            "-".repeat(10)
        );
        let variants: [(&str, bool, &str, &[&str]); 5] = [
            ("plain pipe: fake → reader (text)", false, "bytes", &["-p"]),
            ("shim managed `-p` (text), tee", true, "bytes", &["-p"]),
            ("pass-through (exec), text", true, "bytes", &[]),
            (
                "plain pipe: fake → reader (stream-json lines)",
                false,
                "lines",
                MANAGED_ARGS,
            ),
            (
                "shim managed, stream-json lines, tee + parse",
                true,
                "lines",
                MANAGED_ARGS,
            ),
        ];
        let mut results: Vec<Vec<(f64, i64)>> = vec![Vec::new(); variants.len()];
        for _ in 0..tee_reps {
            for (k, (_, shim, mode, args)) in variants.iter().enumerate() {
                let mut cmd = s.timed(*shim, mode, args);
                cmd.env(FAKE_BYTES_ENV, tee_bytes.to_string());
                let (got, t) = drain(cmd, Some(&tiny));
                assert_eq!(got, tee_bytes, "variant {k}: bytes through");
                results[k].push((got as f64 / t.as_secs_f64() / 1e9, s.last_rss()));
            }
        }
        let mut p50s = Vec::new();
        for ((label, ..), r) in variants.iter().zip(&results) {
            let rates: Vec<f64> = r.iter().map(|x| x.0).collect();
            let rss = r.iter().map(|x| x.1).max().unwrap_or(0);
            let p50 = quantile(&rates, 0.5);
            p50s.push(p50);
            println!(
                "| {label:<44} | {p50:>9.2} | {:>9.2} | {:>9.2} | {:>8.1} |",
                quantile(&rates, 0.0),
                quantile(&rates, 1.0),
                rss as f64 / 1024.0
            );
        }
        println!(
            "\ntee / plain pipe: text {:.0}%, stream-json {:.0}%",
            p50s[1] / p50s[0] * 100.0,
            p50s[4] / p50s[3] * 100.0
        );
    }

    if want("phases") {
        phases(&s, &cases, n);
    }

    if want("rss") {
        println!("\n### Peak RSS (MiB, max of 5 runs; target 16 MiB + 2 × prompt)\n");
        println!(
            "| {:<10} | {:>12} | {:>13} | {:>15} | {:>11} | {:>8} |",
            "prompt", "pass-through", "fresh-managed", "resumed-managed", "fake direct", "target"
        );
        println!(
            "|{}|{}|{}|{}|{}|{}|",
            "-".repeat(12),
            "-".repeat(14),
            "-".repeat(15),
            "-".repeat(17),
            "-".repeat(13),
            "-".repeat(10)
        );
        for c in &cases {
            let peak = |shim: bool, args: &[&str], p: &Path| {
                (0..5)
                    .map(|_| {
                        wall(s.timed(shim, "run", args), Some(p));
                        s.last_rss()
                    })
                    .max()
                    .unwrap_or(0) as f64
                    / 1024.0
            };
            println!(
                "| {:<10} | {:>12.1} | {:>13.1} | {:>15.1} | {:>11.1} | {:>8.1} |",
                c.label,
                peak(true, &[], &c.fresh),
                peak(true, MANAGED_ARGS, &c.fresh),
                peak(true, MANAGED_ARGS, &c.resumed),
                peak(false, MANAGED_ARGS, &c.fresh),
                16.0 + 2.0 * c.size as f64 / 1048576.0
            );
        }
    }

    // How the shim ran the managed turns (a check that the cases were what
    // their names say).
    let db = s.db();
    let mut stmt = db
        .prepare("SELECT kind, count(*) FROM runs GROUP BY kind ORDER BY kind")
        .expect("runs");
    let kinds: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} {}",
                r.get::<_, i64>(1)?,
                r.get::<_, String>(0)?
            ))
        })
        .expect("runs")
        .collect::<rusqlite::Result<_>>()
        .expect("runs");
    let pins_now: i64 = db
        .query_row("SELECT count(*) FROM pins", [], |r| r.get(0))
        .expect("count");
    println!(
        "\nmanaged runs by kind: {}; pins now {pins_now}",
        kinds.join(", ")
    );
    let errors = s.shim_home.join("errors.log");
    if let Ok(text) = std::fs::read_to_string(&errors) {
        println!("errors.log:\n{text}");
    }
    println!("machine at the end: {}", machine());
    if std::env::var_os("BENCH_KEEP").is_some() {
        std::mem::forget(s);
    }
}

/// Median wall time of `f` over `n` calls, in ms.
fn time_ms(n: usize, mut f: impl FnMut()) -> f64 {
    f();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            ms(t.elapsed())
        })
        .collect();
    quantile(&v, 0.5)
}

fn wal_bytes(s: &Setup) -> u64 {
    std::fs::metadata(s.shim_home.join("shim.db-wal")).map_or(0, |m| m.len())
}

/// Checkpoint and truncate the WAL (as a quiet moment of `wal_autocheckpoint`
/// would leave it).
fn checkpoint(s: &Setup) {
    let store = Store::open_in(&s.shim_home).expect("open store");
    store
        .conn
        .execute_batch("DROP TABLE IF EXISTS bench_junk")
        .expect("drop junk");
    let _: (i64, i64, i64) = store
        .conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("checkpoint");
}

/// Leave about `frames` uncheckpointed pages in the WAL, the way the shim's
/// own runs do between autocheckpoints (every 1000 pages), in one
/// transaction of a junk table (dropped by `checkpoint`).
fn grow_wal(s: &Setup, frames: usize) {
    let store = Store::open_in(&s.shim_home).expect("open store");
    store
        .conn
        .execute_batch(
            "PRAGMA wal_autocheckpoint = 0; BEGIN; CREATE TABLE IF NOT EXISTS bench_junk (x BLOB)",
        )
        .expect("junk table");
    for _ in 0..frames {
        store
            .conn
            .execute("INSERT INTO bench_junk VALUES (zeroblob(4000))", [])
            .expect("junk");
    }
    store.conn.execute_batch("COMMIT").expect("commit");
}

/// In-process timings of the steps of a managed turn (the same library code
/// the shim runs), to see where the managed overhead goes.
fn phases(s: &Setup, cases: &[Case], n: usize) {
    println!("\n### Where the managed time goes (in-process, median of {n} calls, ms)\n");
    println!(
        "| {:<52} | {:>8} | {:>8} | {:>8} |",
        "step", cases[0].label, cases[1].label, cases[2].label
    );
    println!("|{}|{}", "-".repeat(54), "----------|".repeat(3));
    let per_size = |label: &str, f: &dyn Fn(&Case) -> f64| {
        let v: Vec<f64> = cases.iter().map(f).collect();
        println!(
            "| {label:<52} | {:>8.3} | {:>8.3} | {:>8.3} |",
            v[0], v[1], v[2]
        );
    };
    per_size("read the prompt file (stand-in for reading stdin)", &|c| {
        time_ms(n, || {
            std::hint::black_box(std::fs::read(&c.resumed).expect("read"));
        })
    });
    per_size(
        "decide::understand (UTF-8 check, every dialect parses)",
        &|c| {
            let bytes = std::fs::read(&c.resumed).expect("read");
            time_ms(n, || {
                let prompt = claude_shim::prompt::Prompt::Stdin {
                    bytes: bytes.clone(),
                };
                std::hint::black_box(claude_shim::turn::understand::understand(&prompt));
            })
        },
    );
    per_size(
        "  of which cloning the prompt once (memcpy + page faults)",
        &|c| {
            let bytes = std::fs::read(&c.resumed).expect("read");
            time_ms(n, || {
                std::hint::black_box(bytes.clone());
            })
        },
    );
    per_size(
        "identity::chain over the user turns (once per lookup/pin)",
        &|c| {
            time_ms(n, || {
                std::hint::black_box(
                    c.users
                        .iter()
                        .fold(identity::Chain::empty(), |ch, u| ch.user(u)),
                );
            })
        },
    );
    // The output observer, alone (what the tee feeds every chunk to).
    for (label, format, chunk) in [
        (
            "observer: text output, GB/s (keeps the start for the hash)",
            claude_shim::invocation::OutputFormat::Text,
            text_chunk(),
        ),
        (
            "observer: stream-json lines of ~1 KiB, GB/s",
            claude_shim::invocation::OutputFormat::StreamJson,
            json_lines_chunk(),
        ),
    ] {
        let rate = |mib: usize| {
            let t = Instant::now();
            let mut o = claude_shim::observe::Observer::new(format);
            for _ in 0..mib {
                for part in chunk.chunks(64 << 10) {
                    o.feed(part);
                }
            }
            std::hint::black_box(o.finish());
            (mib * chunk.len()) as f64 / t.elapsed().as_secs_f64() / 1e9
        };
        let v: Vec<f64> = (0..5).map(|_| rate(64)).collect();
        println!(
            "| {label:<52} | {:>8.2} | {:>8} | {:>8} |",
            quantile(&v, 0.5),
            "″",
            "″"
        );
    }
    // The database: opening it is the same for every size.
    let node = identity::Chain::empty()
        .user("no such turn")
        .node(&identity::ScopeParts::default().scope());
    let open_and_find = || {
        let store = Store::open_in(&s.shim_home).expect("open store");
        std::hint::black_box(store.find_pins(&node).expect("find"));
    };
    checkpoint(s);
    let empty = time_ms(n, open_and_find);
    let wal0 = wal_bytes(s);
    grow_wal(s, 480);
    let wal_half = wal_bytes(s);
    let half = time_ms(n, open_and_find);
    checkpoint(s);
    grow_wal(s, 980);
    let wal_full = wal_bytes(s);
    let full = time_ms(n, open_and_find);
    checkpoint(s);
    for (label, t) in [
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal0 as f64 / 1048576.0
            ),
            empty,
        ),
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal_half as f64 / 1048576.0
            ),
            half,
        ),
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal_full as f64 / 1048576.0
            ),
            full,
        ),
    ] {
        println!("| {label:<52} | {t:>8.3} | {:>8} | {:>8} |", "″", "″");
    }
    println!(
        "\nThe shim closes the database without a checkpoint, so the WAL holds up to\n\
         wal_autocheckpoint (1000 pages, ~4 MiB) and the next process, the first to open it,\n\
         rebuilds the WAL index by reading all of it."
    );
}
