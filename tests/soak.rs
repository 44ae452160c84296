//! Soak: 1,000 sequential turns through the shim (100 conversations of 10
//! turns, one after another, all in one data directory), each followed by the
//! same turn run directly against the same fake. Every answer is checked (the
//! fake's reply names what it saw). Prints, per 100 turns: the shim's wall
//! time, the direct run's, the overhead (their difference, per turn) and the
//! database size (`shim.db` + WAL) as it grows; fails if an answer is wrong,
//! the database grows by more than a few KiB a turn or the WAL without bound.
//! Time is printed, never asserted. ~15 s on 2 cores.
//!
//! A test without libtest (`harness = false`): `cargo test --release --test
//! soak`. `SOAK_CONVS` (default 100) and `SOAK_TURNS` per conversation
//! (default 10) scale it; `SOAK_KEEP=1` keeps the directory. Run as part of
//! `cargo test` unless a test-name filter that "soak" does not match is given.
//!
//! The fake CLI is this binary itself, started with `SOAK_FAKE` set (no
//! interpreter start-up in the figures). It models `claude -p` at the session
//! level like `tests/fixtures/fake-claude`: `--session-id`, `--resume`,
//! `--resume-session-at` (named here, so the shim's probe finds the
//! capability in this binary), `--fork-session`; a session file under
//! `$HOME/.claude/projects/<slug>/<id>.jsonl` with user/assistant records
//! carrying uuids; text output. Its reply lists the `<<tags>>` of the user
//! messages in its context.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SHIM: &str = env!("CARGO_BIN_EXE_claude-shim");
const FAKE_ENV: &str = "SOAK_FAKE";

// ---- the fake ----------------------------------------------------------------------

fn value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn new_uuid() -> String {
    uuid_from(&{
        let mut b = [0u8; 16];
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            let _ = f.read_exact(&mut b);
        }
        b
    })
}

fn uuid_from(b: &[u8; 16]) -> String {
    let mut b = *b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn tags_in(text: &str) -> Vec<String> {
    let mut tags = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        let Some(len) = rest[start..].find(">>") else {
            break;
        };
        tags.push(rest[start + 2..start + len].to_string());
        rest = &rest[start + len + 2..];
    }
    tags
}

fn find_session(config: &Path, id: &str) -> Option<PathBuf> {
    std::fs::read_dir(config.join("projects"))
        .ok()?
        .flatten()
        .map(|d| d.path().join(format!("{id}.jsonl")))
        .find(|p| p.is_file())
}

fn fake() -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [v] if v == "--version" => {
            println!("2.1.330 (Claude Code)");
            std::process::exit(0)
        }
        [h] if h == "--help" => {
            println!("-r, --resume [value]  --fork-session  --session-id <uuid>");
            println!("(hidden: --resume-session-at <message id>)");
            std::process::exit(0)
        }
        _ => {}
    }
    let mut prompt = String::new();
    let _ = std::io::stdin().read_to_string(&mut prompt);
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let config = home.join(".claude");
    let cwd = std::env::current_dir().expect("cwd");
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let project = config.join("projects").join(slug);
    let mut history: Vec<Value> = Vec::new();
    let (sid, fork) = match value(&args, "--resume") {
        Some(s) => {
            let Some(file) = find_session(&config, &s) else {
                eprintln!("No conversation found with session ID: {s}");
                std::process::exit(1)
            };
            history = std::fs::read_to_string(file)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if let Some(at) = value(&args, "--resume-session-at") {
                match history.iter().position(|r| r["uuid"] == at.as_str()) {
                    Some(i) => history.truncate(i + 1),
                    None => {
                        eprintln!("No conversation found with session ID: {s}");
                        std::process::exit(1)
                    }
                }
            }
            if args.iter().any(|a| a == "--fork-session") {
                (value(&args, "--session-id").unwrap_or_else(new_uuid), true)
            } else {
                (s, false)
            }
        }
        None => (value(&args, "--session-id").unwrap_or_else(new_uuid), false),
    };
    let mut tags: Vec<String> = history
        .iter()
        .filter(|r| r["type"] == "user")
        .filter_map(|r| r["message"]["content"].as_str())
        .flat_map(tags_in)
        .collect();
    tags.extend(tags_in(&prompt));
    let reply = format!("ack {}", tags.join(","));
    let _ = std::fs::create_dir_all(&project);
    let mut records: Vec<Value> = if fork { history.clone() } else { Vec::new() };
    let parent = history
        .last()
        .and_then(|r| r["uuid"].as_str().map(str::to_owned));
    let (uu, au) = (new_uuid(), new_uuid());
    records.push(
        json!({"type": "user", "uuid": uu, "parentUuid": parent, "sessionId": sid,
        "message": {"role": "user", "content": prompt}}),
    );
    records.push(
        json!({"type": "assistant", "uuid": au, "parentUuid": uu, "sessionId": sid,
        "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}}),
    );
    let mut text = String::new();
    for r in &records {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    let file = project.join(format!("{sid}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .expect("session file");
    f.write_all(text.as_bytes()).expect("write session");
    println!("{reply}");
    std::process::exit(0)
}

// ---- the soak ----------------------------------------------------------------------

struct Turn {
    shim: Duration,
    direct: Duration,
    db_bytes: u64,
    wal_bytes: u64,
}

fn run(mut cmd: Command, stdin: &str) -> (String, Duration) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let out = child.wait_with_output().expect("wait");
    let took = start.elapsed();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        took,
    )
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn stats(label: &str, turns: &[Turn]) {
    let pick = |f: &dyn Fn(&Turn) -> f64| {
        let mut v: Vec<f64> = turns.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (
            v[v.len() / 2],
            v[v.len() * 95 / 100],
            v.iter().sum::<f64>() / v.len() as f64,
        )
    };
    let (sm, sp, _) = pick(&|t| ms(t.shim));
    let (dm, dp, _) = pick(&|t| ms(t.direct));
    let (om, op, oa) = pick(&|t| ms(t.shim) - ms(t.direct));
    let last = turns.last().unwrap();
    println!(
        "{label:<16} shim median {sm:6.1} ms p95 {sp:6.1} | direct median {dm:5.1} ms p95 {dp:5.1} | \
         overhead median {om:5.1} ms p95 {op:5.1} mean {oa:5.1} | db {:>8} B + wal {:>8} B",
        last.db_bytes, last.wal_bytes
    );
}

fn main() {
    if std::env::var_os(FAKE_ENV).is_some() {
        fake();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("soak: test");
        return;
    }
    // `cargo test <filter>` passes the filter to every test binary.
    if let Some(filter) = args.iter().find(|a| !a.starts_with('-')) {
        if !"soak".contains(filter.as_str()) && !filter.contains("soak") {
            return;
        }
    }
    let convs = env_num("SOAK_CONVS", 100);
    let per = env_num("SOAK_TURNS", 10);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let (bin, home, shim_home, work) = (
        root.join("bin"),
        root.join("home"),
        root.join("shim-home"),
        root.join("work"),
    );
    for d in [&bin, &home, &shim_home, &work] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    symlink(SHIM, bin.join("claude")).expect("link");
    let me = std::env::current_exe().expect("current_exe");
    let base = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env(FAKE_ENV, "1")
            .env("CLAUDE_SHIM_WARM", "0")
            .current_dir(&work)
            .arg("-p");
        cmd
    };
    println!(
        "soak: {} turns ({convs} conversations x {per} turns), {}",
        convs * per,
        root.display()
    );
    let mut turns = Vec::with_capacity(convs * per);
    let started = Instant::now();
    for c in 0..convs {
        let mut history: Vec<(String, String)> = Vec::new();
        for k in 1..=per {
            let current = format!("turn {k} of conversation {c} <<c{c}.{k}>>");
            let mut parts = Vec::new();
            for (u, a) in &history {
                parts.push(format!("Human: {u}"));
                parts.push(format!("Assistant: {a}"));
            }
            parts.push(format!("Human: {current}"));
            let prompt = parts.join("\n\n");
            let want: Vec<String> = (1..=k).map(|j| format!("c{c}.{j}")).collect();
            let want = format!("ack {}", want.join(","));

            let mut shim = base(&bin.join("claude"));
            shim.env("CLAUDE_SHIM_HOME", &shim_home)
                .env("CLAUDE_SHIM_REAL", &me);
            let (answer, shim_took) = run(shim, &prompt);
            assert_eq!(
                answer, want,
                "turn {k} of conversation {c} through the shim"
            );
            let (direct_answer, direct_took) = run(base(&me), &prompt);
            assert_eq!(direct_answer, want, "turn {k} of conversation {c} directly");
            turns.push(Turn {
                shim: shim_took,
                direct: direct_took,
                db_bytes: size(&shim_home.join("shim.db")),
                wal_bytes: size(&shim_home.join("shim.db-wal")),
            });
            history.push((current, answer));
        }
    }
    let n = turns.len();
    let window = 100.min(n);
    // Every window of 100 (the first and the last are the ones to compare;
    // those between show whether a difference is a trend or the machine).
    for (i, chunk) in turns.chunks(window).enumerate() {
        let from = i * window + 1;
        stats(&format!("turns {from}-{}", from + chunk.len() - 1), chunk);
    }
    let db = rusqlite::Connection::open(shim_home.join("shim.db")).expect("db");
    let count = |t: &str| -> i64 {
        db.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
            .unwrap_or(-1)
    };
    let kinds: Vec<(String, i64)> = {
        let mut stmt = db
            .prepare("SELECT kind, COUNT(*) FROM runs GROUP BY kind ORDER BY kind")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    println!(
        "after {n} turns: {} pins, {} runs {kinds:?}, errors.log {} B, {:.1} s in all",
        count("pins"),
        count("runs"),
        size(&shim_home.join("errors.log")),
        started.elapsed().as_secs_f64()
    );
    // Flat: the database grows by rows, not by more. Time is reported, never
    // asserted (a shared machine makes timed assertions flaky): the figures
    // are in RELIABILITY.md.
    let first = &turns[..window];
    let last = &turns[n - window..];
    let median = |t: &[Turn]| {
        let mut v: Vec<f64> = t.iter().map(|t| ms(t.shim) - ms(t.direct)).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let (a, b) = (median(first), median(last));
    let db_per_turn = turns[n - 1].db_bytes as f64 / n as f64;
    assert!(
        db_per_turn < 4096.0,
        "the database grows by {db_per_turn:.0} bytes a turn"
    );
    assert!(
        turns.iter().all(|t| t.wal_bytes < 16 << 20),
        "the WAL grows without bound"
    );
    println!("soak: ok (overhead {a:.1} → {b:.1} ms, {db_per_turn:.0} database bytes a turn)");
    if std::env::var_os("SOAK_KEEP").is_some() {
        let kept = dir.keep();
        println!("kept {}", kept.display());
    }
}
