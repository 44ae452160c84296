//! Soak: 1,000 sequential turns through the shim (100 conversations of 10
//! turns, one after another, all in one data directory), each followed by the
//! same turn run directly against the same fake. Every answer is checked (the
//! fake's reply names what it saw). Prints, per 100 turns: the shim's wall
//! time, the direct run's, the overhead (their difference, per turn) and the
//! database size (`shim.db` + WAL) as it grows; fails if an answer is wrong,
//! the database grows by more than a few KiB a turn or the WAL without bound.
//! Time is printed, never asserted. ~15 s on 2 cores.
//!
//! A test without libtest (`harness = false`): `cargo test --profile tests --test
//! soak`. `SOAK_CONVS` (default 100) and `SOAK_TURNS` per conversation
//! (default 10) scale it; `SOAK_KEEP=1` keeps the directory. Run as part of
//! `cargo test` unless a test-name filter that "soak" does not match is given.
//!
//! The fake CLI is the tests' (`tests/fixtures/fake-claude/`, compiled: no
//! interpreter start-up in the figures). It models `claude -p` at the session
//! level: `--session-id`, `--resume`, `--resume-session-at`, `--fork-session`;
//! a session file under `$HOME/.claude/projects/<slug>/<id>.jsonl` with
//! user/assistant records carrying uuids; text output. Its reply lists the
//! `<<tags>>` of the user messages in its context.

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SHIM: &str = env!("CARGO_BIN_EXE_claude-shim");
const FAKE: &str = env!("CARGO_BIN_EXE_fake-claude");

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
    let fake = Path::new(FAKE);
    let base = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
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
                .env("CLAUDE_SHIM_REAL", fake);
            let (answer, shim_took) = run(shim, &prompt);
            assert_eq!(
                answer, want,
                "turn {k} of conversation {c} through the shim"
            );
            let (direct_answer, direct_took) = run(base(fake), &prompt);
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
