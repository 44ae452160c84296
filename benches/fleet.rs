//! What a shared PostgreSQL store adds to a managed turn, against the embedded SQLite
//! store, side by side in one run. Prints figures; asserts nothing.
//!
//! Five ways of running the same 10-turn conversations (`Human:`/`Assistant:`
//! transcripts on stdin, text output, ~300 B questions, ~1.5 KB replies), interleaved
//! conversation by conversation:
//!
//! - `direct`: the fake CLI alone (the caller without the shim);
//! - `sqlite`: through the shim, the SQLite store (one host);
//! - `pg, one host`: through the shim, a PostgreSQL store on loopback, every turn on
//!   one host (each turn uploads what it added to the session file);
//! - `pg, two hosts`: the same store, turns alternating between two hosts (two HOMEs
//!   and shim data dirs, one cwd): each turn also brings the session file's missing
//!   part here from the store before it resumes.
//! - `pg, no readied connection`: one host, `CLAUDE_SHIM_STORE_READY=0`, so each turn
//!   connects to the server itself instead of taking the connection the keeper readied.
//!
//! The CLI is the tests' fake (`tests/fixtures/fake-claude/`, compiled), which
//! appends a user and an assistant record to the session file as the real CLI does and
//! prints the reply (padded to ~1.5 KB): the real CLI's ~450 ms per cold turn would
//! bury differences of a few milliseconds in its own variance. PostgreSQL is a real server (Debian's
//! `postgresql` package), started on loopback by the bench and stopped at the end.
//!
//! Run: `cargo bench --bench fleet` (`BENCH_CONVS`, default 20 conversations a way).

#[allow(dead_code)]
#[path = "../tests/support/postgres.rs"]
mod postgres;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FAKE: &str = env!("CARGO_BIN_EXE_fake-claude");
const REPLY_BYTES: usize = 1500;
const TURNS: usize = 10;

fn shim_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_claude-shim"))
}

/// One host: its HOME (Claude config dir) and shim data dir.
struct Host {
    home: PathBuf,
    shim_home: PathBuf,
}

struct World {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    fake: PathBuf,
    sqlite: Host,
    pg: [Host; 3],
    url: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Direct,
    Sqlite,
    PgOneHost,
    PgTwoHosts,
    /// One host, `CLAUDE_SHIM_STORE_READY=0`: each turn connects itself.
    PgConnecting,
}

const WAYS: [(Way, &str); 5] = [
    (Way::Direct, "direct (the fake CLI alone)"),
    (Way::Sqlite, "shim, SQLite store"),
    (Way::PgOneHost, "shim, PostgreSQL store, one host"),
    (Way::PgTwoHosts, "shim, PostgreSQL store, hosts alternating"),
    (
        Way::PgConnecting,
        "shim, PostgreSQL, one host, no readied conn.",
    ),
];

impl World {
    fn host(root: &Path, name: &str) -> Host {
        let home = root.join(name).join("home");
        let shim_home = root.join(name).join("shim-home");
        std::fs::create_dir_all(&home).unwrap();
        Host { home, shim_home }
    }

    fn command(&self, way: Way, turn: usize) -> Command {
        let host = match way {
            Way::Direct | Way::Sqlite => &self.sqlite,
            Way::PgOneHost => &self.pg[0],
            Way::PgTwoHosts => &self.pg[turn % 2],
            Way::PgConnecting => &self.pg[2],
        };
        let mut cmd = match way {
            Way::Direct => Command::new(&self.fake),
            _ => {
                let mut c = Command::new(shim_exe());
                c.args(["run", "--"]);
                c
            }
        };
        cmd.arg("-p")
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &host.home)
            .env("LANG", "C.UTF-8")
            .env("CLAUDE_SHIM_REAL", &self.fake)
            .env("CLAUDE_SHIM_HOME", &host.shim_home)
            .env("CLAUDE_SHIM_WARM", "0")
            .env("FAKE_REPLY_PAD", REPLY_BYTES.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if way == Way::PgConnecting {
            cmd.env("CLAUDE_SHIM_STORE_READY", "0");
        }
        if matches!(way, Way::PgOneHost | Way::PgTwoHosts | Way::PgConnecting) {
            cmd.env("CLAUDE_SHIM_STORE", &self.url);
        }
        if let (Some(log), false) = (std::env::var_os("BENCH_SHIM_LOG"), way == Way::Direct) {
            cmd.env("CLAUDE_SHIM_LOG", log);
        }
        cmd
    }

    /// One turn: (wall time, reply).
    fn turn(&self, way: Way, turn: usize, prompt: &str) -> (Duration, String) {
        let start = Instant::now();
        let mut child = self.command(way, turn).spawn().expect("spawn");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        let out = child.wait_with_output().expect("wait");
        let took = start.elapsed();
        assert!(out.status.success(), "a turn failed");
        (
            took,
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    }
}

fn question(conv: usize, k: usize) -> String {
    let mut q = format!("conversation {conv} question {k}:");
    while q.len() < 300 {
        q.push_str(" what about the next part");
    }
    q
}

fn transcript(history: &[(String, String)], cur: &str) -> String {
    let mut parts = Vec::new();
    for (u, a) in history {
        parts.push(format!("Human: {u}"));
        parts.push(format!("Assistant: {a}"));
    }
    parts.push(format!("Human: {cur}"));
    parts.join("\n\n")
}

/// The 1-minute load average (`/proc/loadavg`; NaN where there is none).
fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let convs: usize = std::env::var("BENCH_CONVS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    // A caller's pause between turns (a model's answer takes seconds): what
    // a host does between them (the keeper readying the next turn's store
    // connection) is not counted in a turn. `BENCH_PAUSE_MS=0`: back to back.
    let pause = Duration::from_millis(
        std::env::var("BENCH_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(30),
    );
    let load_before = loadavg();
    let mut pg = postgres::PgServer::start();
    let url = pg.create_db("fleet_bench");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let w = World {
        fake: PathBuf::from(FAKE),
        sqlite: World::host(&root, "sqlite"),
        pg: [
            World::host(&root, "a"),
            World::host(&root, "b"),
            World::host(&root, "c"),
        ],
        cwd,
        url,
        _dir: dir,
    };
    // [way][turn index] → seconds.
    let mut times: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); TURNS]; WAYS.len()];
    for conv in 0..convs {
        for (i, (way, _)) in WAYS.iter().enumerate() {
            // Each way its own conversation (so no way resumes another's).
            let mut history: Vec<(String, String)> = Vec::new();
            for (k, per_turn) in times[i].iter_mut().enumerate() {
                let q = question(conv * 10 + i, k);
                let (took, reply) = w.turn(*way, k, &transcript(&history, &q));
                per_turn.push(took.as_secs_f64() * 1e3);
                history.push((q, reply));
                std::thread::sleep(pause);
            }
        }
    }
    let kinds = |way: Way| -> String {
        let store = match way {
            Way::Sqlite => claude_shim::store::Store::open_in(&w.sqlite.shim_home),
            _ => claude_shim::store::Store::open_shared(
                &w.url,
                claude_shim::store::postgres::Patience::Each(Duration::from_secs(10)),
            ),
        };
        store
            .and_then(|s| s.run_counts())
            .map(|c| {
                c.iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|e| format!("{e:#}"))
    };
    println!("fleet: {convs} conversations of {TURNS} turns a way, interleaved; medians in ms\n");
    println!(
        "{:<44} {:>10} {:>14} {:>16}",
        "way", "turn 1", "turns 2-10", "added, 2-10"
    );
    let first = |i: usize| median(&mut times[i][0].clone());
    let rest = |i: usize| {
        let mut all: Vec<f64> = times[i][1..].iter().flatten().copied().collect();
        median(&mut all)
    };
    let direct = rest(0);
    for (i, (_, name)) in WAYS.iter().enumerate() {
        let added = if i == 0 {
            "-".to_string()
        } else {
            format!("{:+.1}", rest(i) - direct)
        };
        println!(
            "{name:<44} {:>10.1} {:>14.1} {:>16}",
            first(i),
            rest(i),
            added
        );
    }
    println!(
        "\nPostgreSQL against SQLite, per resumed turn: {:+.1} ms on one host, {:+.1} ms when \
         the turn changes hosts (brings the session file here), {:+.1} ms on one host when \
         each turn connects itself",
        rest(2) - rest(1),
        rest(3) - rest(1),
        rest(4) - rest(1)
    );
    // The goal holds at load <= 2: above it, a round trip waits for the
    // server's backend to be scheduled, and the figure says so.
    let load_after = loadavg();
    let busiest = load_before.max(load_after);
    println!("load average (1 min): {load_before:.2} at the start, {load_after:.2} at the end");
    for (path, added) in [
        ("first turn (cold, fresh)", first(2) - first(1)),
        ("turns 2-10 (cold, resumed)", rest(2) - rest(1)),
    ] {
        let verdict = match (added <= 5.0, busiest <= 2.0) {
            (true, _) => "met",
            (false, true) => "not met",
            (false, false) => "not met (load above 2: the goal's condition does not hold)",
        };
        println!(
            "goal (one host, load <= 2): PostgreSQL adds <= 5 ms per turn over SQLite; \
             {path}: {added:+.1} ms: {verdict}"
        );
    }
    println!("runs, sqlite: {}", kinds(Way::Sqlite));
    println!("runs, postgres (every pg way): {}", kinds(Way::PgOneHost));
    pg.stop();
}
