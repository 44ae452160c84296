//! Per-turn latency of one conversation against the real CLI and the loopback API
//! server (which answers at once, so this is everything but the model), five ways, in
//! one run: a live CLI fed one user line per turn (the floor); a client resuming
//! natively (a cold `claude -p --resume S` per turn); a `Human:`/`Assistant:` client
//! replaying its transcript without the shim; the same through the shim as shipped,
//! cold (text input is a single-shot print session); and through the shim, warm
//! (`CLAUDE_SHIM_WARM_TEXT=1`, which the sandbox sets). Prints the median wall time of
//! turns 2..N, and the memory a live CLI and the keeper hold. Figures, never assertions.
//!
//! Then the same with a 1 MiB document pasted into turn 1 (`BENCH_BIG_KIB`; 0: skip).
//!
//! Then new conversations arriving 0.25 to 5 s apart (see [`Gaps`]): their turn 1
//! against the floor's first message, and how many found a ready CLI.
//!
//! `cargo bench --bench warm` (`BENCH_TURNS`, default 10; `BENCH_ROUNDS`, default 3;
//! `BENCH_ARRIVALS_ONLY=1`: the floor and the arrival gaps alone).
//!
//! Spikes: the floor's and the warm way's p50/p95/max of turns 2..N, against the goal
//! warm p95 <= floor p50 + 30 ms, with the load average. `BENCH_WARM_SPIKES=1` runs only
//! that, the two ways interleaved (`BENCH_TURNS` default 26, `BENCH_ROUNDS` default 5:
//! 125 warm turns); `BENCH_WARM_LOG=FILE` gives the warm way's shim `CLAUDE_SHIM_LOG=FILE`
//! and appends each turn's start (Unix seconds) and wall time to `FILE.turns`;
//! `BENCH_WARM_ENV=K=V,…` sets variables for the warm way's shim.
//!
//! Arrivals: `BENCH_ARRIVALS_LOG=FILE` does the same for this build's arrival runs (each
//! new conversation's start and wall time to `FILE.turns`). After them, the floor's first
//! message by how long its CLI had been up (`BENCH_FLOOR_AGES`, seconds, default
//! `1,1.5,2,5`; empty: skip): a ready CLI is taken at whatever age it has.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::clients::{labels, text_reply};
use support::figures::{env_or, load_average, median, quantile};
use support::{describe, run, ApiServer, Sandbox};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The user message of turn `k`; turn 1 carries `doc` (a document pasted in
/// at the start, so every later transcript is at least that big).
fn message(k: usize, doc: &str) -> String {
    if k == 1 && !doc.is_empty() {
        format!("message 1, about this document:\n\n{doc}")
    } else {
        format!("message {k}")
    }
}

/// About `bytes` of plain lines (no role markers).
fn document(bytes: usize) -> String {
    let mut doc = String::with_capacity(bytes + 80);
    let mut n = 0;
    while doc.len() < bytes {
        n += 1;
        doc.push_str(&format!(
            "line {n}: lorem ipsum dolor sit amet, consectetur adipiscing elit\n"
        ));
    }
    doc
}

/// One live CLI, one user line per turn: write → result.
fn floor(turns: usize, doc: &str) -> Vec<f64> {
    floor_after(turns, doc, Duration::from_millis(1500))
}

/// [`floor`], its first message sent `ahead` after the CLI started.
fn floor_after(turns: usize, doc: &str, ahead: Duration) -> Vec<f64> {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
    let mut cmd = sb.direct([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn live CLI");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // Started ahead, as a ready CLI is: turn 1 is its first message alone.
    std::thread::sleep(ahead);
    let mut times = Vec::new();
    for k in 1..=turns {
        let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": message(k, doc)}});
        let start = Instant::now();
        writeln!(stdin, "{line}").unwrap();
        let mut buf = String::new();
        loop {
            buf.clear();
            if out.read_line(&mut buf).unwrap() == 0 {
                panic!("the live CLI ended");
            }
            if buf.contains("\"type\":\"result\"") {
                break;
            }
        }
        times.push(ms(start.elapsed()));
    }
    drop(stdin);
    let _ = child.wait();
    times
}

/// A client resuming natively: a cold `claude -p --resume S "msg"` per turn.
fn native(turns: usize) -> Vec<f64> {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
    let mut session = String::new();
    let mut times = Vec::new();
    for k in 1..=turns {
        let msg = format!("message {k}");
        let mut args = vec!["-p", "--output-format", "json"];
        if k > 1 {
            args.extend(["--resume", session.as_str()]);
        }
        args.push(&msg);
        let start = Instant::now();
        let out = run(sb.direct(&args), b"");
        times.push(ms(start.elapsed()));
        assert!(out.status.success(), "{}", describe(&out));
        let v: Value = serde_json::from_slice(&out.stdout).expect("json result");
        session = v["session_id"].as_str().expect("session id").to_owned();
    }
    times
}

#[derive(Clone, Copy, PartialEq)]
enum Replay {
    Direct,
    ShimCold,
    ShimWarm,
}

/// A `Human:`/`Assistant:` client replaying its transcript on stdin, text output.
fn replay(way: Replay, turns: usize, doc: &str) -> (Vec<f64>, Option<(u64, u64)>) {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
    if way == Replay::ShimCold {
        // As shipped: text input is a single-shot print session, run cold.
        sb.as_shipped();
    }
    let log = std::env::var("BENCH_WARM_LOG")
        .ok()
        .filter(|_| way == Replay::ShimWarm);
    if let Some(log) = &log {
        sb.set_env("CLAUDE_SHIM_LOG", log);
    }
    if way == Replay::ShimWarm {
        // `BENCH_WARM_ENV=K=V,…`: settings of the warm way's shim, to compare.
        let extra = std::env::var("BENCH_WARM_ENV").unwrap_or_default();
        for (k, v) in extra.split(',').filter_map(|kv| kv.split_once('=')) {
            sb.set_env(k, v);
        }
    }
    let mut history: Vec<(String, String)> = Vec::new();
    let mut times = Vec::new();
    for k in 1..=turns {
        let msg = message(k, doc);
        let prompt = labels(&history, &msg, "Human", "\n\n");
        let cmd = match way {
            Replay::Direct => sb.direct(["-p"]),
            _ => sb.shimmed(["-p"]),
        };
        let (start, at) = (Instant::now(), std::time::SystemTime::now());
        let out = run(cmd, prompt.as_bytes());
        times.push(ms(start.elapsed()));
        if let Some(log) = &log {
            log_turn(log, k, at, times[k - 1]);
        }
        assert!(out.status.success(), "{}", describe(&out));
        history.push((msg, text_reply(&out.stdout)));
    }
    let memory = (way == Replay::ShimWarm)
        .then(|| warm_memory(&sb))
        .flatten();
    if way == Replay::ShimWarm {
        stop_keeper(&sb);
    }
    (times, memory)
}

/// Turn 1 of new conversations, one after another with a pause between (a
/// server opening conversations), through the shim: after the first, each
/// can take the CLI started ready for it. Returns the times of conversations
/// 2.., and how many of them ran in a ready CLI.
fn first_turns(conversations: usize) -> (Vec<f64>, usize) {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
                     // Room for the conversations it opens and a ready CLI beside them (a
                     // full pool starts none: it never ends a conversation's CLI for one).
    sb.set_env("CLAUDE_SHIM_WARM_MAX", "8");
    let mut times = Vec::new();
    for k in 0..=conversations {
        let prompt = labels(&[], &format!("conversation {k}"), "Human", "\n\n");
        let start = Instant::now();
        let out = run(sb.shimmed(["-p"]), prompt.as_bytes());
        let took = ms(start.elapsed());
        assert!(out.status.success(), "{}", describe(&out));
        if k > 0 {
            times.push(took);
        }
        // The ready CLI starts once the turn is done; give it its start-up.
        std::thread::sleep(Duration::from_millis(1500));
    }
    (times, took_ready_and_stop(&sb))
}

/// New conversations arriving `gap` apart, as a batch job or a busy proxy
/// sends them: a conversation of three turns, then five new ones, each sent
/// `gap` after the one before (whether or not that one is done: at short
/// gaps they overlap), through the shim with its default pool bounds.
/// `shim`: another build to run instead of this one (the sandbox's `claude`
/// and `claude-shim` point to it). Returns the five turn-1 times and how many
/// of them ran in a ready CLI.
fn arrivals(gap: Duration, shim: Option<&std::path::Path>) -> (Vec<f64>, usize) {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
    let log = std::env::var("BENCH_ARRIVALS_LOG")
        .ok()
        .filter(|_| shim.is_none());
    if let Some(log) = &log {
        sb.set_env("CLAUDE_SHIM_LOG", log);
    }
    if let Some(shim) = shim {
        for link in [sb.claude.clone(), sb.tools.join("claude-shim")] {
            std::fs::remove_file(&link).expect("unlink the shim");
            std::os::unix::fs::symlink(shim, &link).expect("link the compared shim");
        }
    }
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=3 {
        let msg = format!("message {k}");
        let prompt = labels(&history, &msg, "Human", "\n\n");
        let out = run(sb.shimmed(["-p"]), prompt.as_bytes());
        assert!(out.status.success(), "{}", describe(&out));
        history.push((msg, text_reply(&out.stdout)));
    }
    // As a client's next request follows its last reply.
    std::thread::sleep(gap);
    let begin = Instant::now();
    let sent: Vec<_> = (0..5u32)
        .map(|i| {
            let prompt = labels(&[], &format!("conversation {i}"), "Human", "\n\n");
            let cmd = sb.shimmed(["-p"]);
            let at = begin + gap * i;
            let log = log.clone();
            std::thread::spawn(move || {
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                let (start, at) = (Instant::now(), std::time::SystemTime::now());
                let out = run(cmd, prompt.as_bytes());
                let took = ms(start.elapsed());
                assert!(out.status.success(), "{}", describe(&out));
                if let Some(log) = log {
                    log_turn(&log, i as usize, at, took);
                }
                took
            })
        })
        .collect();
    let times = sent
        .into_iter()
        .map(|t| t.join().expect("a conversation"))
        .collect();
    (times, took_ready_and_stop(&sb))
}

/// Append turn `k`'s start (Unix seconds) and wall time (ms) to `LOG.turns`,
/// to line up with the shim's debug log in `LOG`.
fn log_turn(log: &str, k: usize, at: std::time::SystemTime, took: f64) {
    let at = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(format!("{log}.turns"))
        .expect("turns log");
    let line = format!("{k} {:.6} {took:.1}", at.as_secs_f64());
    writeln!(f, "{line}").expect("turns log");
}

/// The 1-minute load average.
fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// How many turns took a ready CLI in `sb`'s runs; then its keeper is stopped.
fn took_ready_and_stop(sb: &Sandbox) -> usize {
    let ready = support::store::run_rows(&sb.shim_home)
        .iter()
        .filter(|r| r.engine == "ready")
        .count();
    stop_keeper(sb);
    ready
}

/// End the sandbox's live CLIs and its keeper (with the sandbox's own build).
fn stop_keeper(sb: &Sandbox) {
    let mut stop = Command::new(sb.tools.join("claude-shim"));
    stop.args(["warm", "stop"])
        .env_clear()
        .env("HOME", &sb.home)
        .env("CLAUDE_SHIM_HOME", &sb.shim_home);
    let _ = run(stop, b"");
}

/// RSS of the live CLI and of the keeper (bytes).
fn warm_memory(sb: &Sandbox) -> Option<(u64, u64)> {
    let mut cmd = Command::new(support::shim_exe());
    cmd.args(["warm", "status", "--json"])
        .env_clear()
        .env("HOME", &sb.home)
        .env("CLAUDE_SHIM_HOME", &sb.shim_home);
    let out = run(cmd, b"");
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let keeper = v["keeper"]["pid"].as_u64()?;
    let live = v["keeper"]["live"][0]["rss_bytes"].as_u64()?;
    let status = std::fs::read_to_string(format!("/proc/{keeper}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((live, kb * 1024))
}

/// p50/p95/max of a way's turns 2..N beside the floor's, and the goal warm
/// p95 <= floor p50 + 30 ms.
fn spikes(floor: &[f64], warm: &[f64], load_before: &str) {
    println!(
        "\nspikes: turns 2..N, {} warm turns; load average {load_before} before, {} after",
        warm.len(),
        load_average()
    );
    println!(
        "{:<40} {:>8} {:>8} {:>8} {:>22}",
        "way", "p50", "p95", "max", "turns > floor p50 + 30"
    );
    let line = median(floor.to_vec()) + 30.0;
    for (name, t) in [
        ("one live CLI, a line per turn (the floor)", floor),
        ("through the shim, warm", warm),
    ] {
        let over = t.iter().filter(|&&x| x > line).count();
        println!(
            "{name:<40} {:>6.0}ms {:>6.0}ms {:>6.0}ms {:>14} of {:<4}",
            median(t.to_vec()),
            quantile(t.to_vec(), 0.95),
            quantile(t.to_vec(), 1.0),
            over,
            t.len()
        );
    }
    let p95 = quantile(warm.to_vec(), 0.95);
    println!(
        "goal: warm p95 <= floor p50 + 30 ms = {line:.0} ms; measured {p95:.0} ms: {}",
        if p95 <= line { "met" } else { "missed" }
    );
}

/// Only the floor and the warm way, interleaved, enough turns for a p95.
fn spikes_only() {
    let turns = env_or("BENCH_TURNS", 26);
    let rounds = env_or("BENCH_ROUNDS", 5);
    let load = load_average();
    let (mut fl, mut wa) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        fl.extend_from_slice(&floor(turns, "")[1..]);
        wa.extend_from_slice(&replay(Replay::ShimWarm, turns, "").0[1..]);
    }
    println!("{turns} turns x {rounds} rounds, the floor and the warm way interleaved");
    spikes(&fl, &wa, &load);
}

fn main() {
    if env_or("BENCH_WARM_SPIKES", 0) == 1 {
        return spikes_only();
    }
    let load = load_average();
    let turns = env_or("BENCH_TURNS", 10);
    let rounds = env_or("BENCH_ROUNDS", 3);
    let mut rows: Vec<(&str, Vec<f64>, Vec<f64>)> = vec![
        (
            "one live `claude -p --input-format stream-json …` started ahead, a line per turn (the floor)",
            vec![],
            vec![],
        ),
        (
            "a client resuming natively, a cold `claude -p --resume S` per turn",
            vec![],
            vec![],
        ),
        (
            "a `Human:`/`Assistant:` client replaying its transcript, no shim",
            vec![],
            vec![],
        ),
        (
            "the same client through the shim as shipped: cold (text input, single-shot)",
            vec![],
            vec![],
        ),
        (
            "the same client through the shim, warm (CLAUDE_SHIM_WARM_TEXT=1)",
            vec![],
            vec![],
        ),
    ];
    let mut memory = None;
    let (mut new_firsts, mut ready, mut new_total) = (Vec::new(), 0, 0);
    // `BENCH_ARRIVALS_ONLY=1`: the floor and the arrival gaps alone.
    let only_arrivals = env_or("BENCH_ARRIVALS_ONLY", 0) == 1;
    let mut gaps = Gaps::from_env(rounds);
    for _ in 0..rounds {
        if only_arrivals {
            let t = floor(turns, "");
            rows[0].1.push(t[0]);
            rows[0].2.extend_from_slice(&t[1..]);
            continue;
        }
        let (t, r) = first_turns(turns.min(5));
        new_total += t.len();
        new_firsts.extend(t);
        ready += r;
        let runs = [
            floor(turns, ""),
            native(turns),
            replay(Replay::Direct, turns, "").0,
            replay(Replay::ShimCold, turns, "").0,
            {
                let (t, m) = replay(Replay::ShimWarm, turns, "");
                memory = m.or(memory);
                t
            },
        ];
        for (row, t) in rows.iter_mut().zip(runs) {
            row.1.push(t[0]);
            row.2.extend_from_slice(&t[1..]);
        }
    }
    gaps.measure();
    let floor = median(rows[0].1.clone());
    let floor_next = median(rows[0].2.clone());
    if only_arrivals {
        println!(
            "the floor (one live CLI started ahead, a line per turn): turn 1 {floor:.0} ms, turns 2..N {floor_next:.0} ms"
        );
        gaps.print(floor);
        floor_by_age(rounds);
        return;
    }
    let (floor_rest, warm_rest) = (rows[0].2.clone(), rows[4].2.clone());
    println!("per-turn wall time, median; {turns} turns x {rounds} rounds, the ways interleaved");
    println!("{:<84} {:>10} {:>14}", "way", "turn 1", "turns 2..N");
    for (name, first, rest) in rows {
        println!(
            "{name:<84} {:>8.0}ms {:>12.0}ms",
            median(first),
            median(rest)
        );
    }
    let first = median(new_firsts);
    println!(
        "{:<84} {:>8.0}ms   ({ready} of {new_total} in a ready CLI)",
        "a new conversation's turn 1 through the shim, a CLI ready for it", first
    );
    println!(
        "goal: a new conversation's turn 1 <= floor + 30 ms; measured {first:.0} ms: {:+.0} ms over the floor's first message ({floor:.0} ms), {:+.0} ms over its later ones ({floor_next:.0} ms)",
        first - floor,
        first - floor_next
    );
    spikes(&floor_rest, &warm_rest, &load);
    if let Some((live, keeper)) = memory {
        println!(
            "memory: a live CLI {:.0} MiB resident after {turns} turns; the keeper {:.1} MiB",
            live as f64 / (1 << 20) as f64,
            keeper as f64 / (1 << 20) as f64
        );
    }
    gaps.print(floor);
    big_transcripts(turns.min(6), rounds);
}

/// New conversations at each arrival gap (`BENCH_GAPS`, seconds, default
/// `0.25,0.5,1,2,5`; `BENCH_ARRIVAL_ROUNDS` rounds, default `BENCH_ROUNDS`),
/// this build and, with `BENCH_COMPARE_SHIM=<another build's claude-shim>`,
/// that one beside it, interleaved.
struct Gaps {
    gaps: Vec<f64>,
    rounds: usize,
    compare: Option<std::path::PathBuf>,
    /// Per gap, per build: the turn-1 times, and how many ran ready.
    got: Vec<[(Vec<f64>, usize); 2]>,
    /// The load average (1 min) as each measurement began.
    loads: Vec<f64>,
}

impl Gaps {
    fn from_env(rounds: usize) -> Gaps {
        let gaps: Vec<f64> = std::env::var("BENCH_GAPS")
            .unwrap_or_else(|_| "0.25,0.5,1,2,5".into())
            .split(',')
            .filter_map(|g| g.trim().parse().ok())
            .collect();
        Gaps {
            got: vec![Default::default(); gaps.len()],
            gaps,
            rounds: env_or("BENCH_ARRIVAL_ROUNDS", rounds),
            compare: std::env::var_os("BENCH_COMPARE_SHIM").map(Into::into),
            loads: Vec::new(),
        }
    }

    fn measure(&mut self) {
        for _ in 0..self.rounds {
            for (i, &gap) in self.gaps.iter().enumerate() {
                let builds = [None, self.compare.as_deref()];
                for (b, shim) in builds.iter().enumerate() {
                    if b == 1 && shim.is_none() {
                        continue;
                    }
                    self.loads.push(load());
                    let (t, r) = arrivals(Duration::from_secs_f64(gap), *shim);
                    self.got[i][b].0.extend(t);
                    self.got[i][b].1 += r;
                }
            }
        }
    }

    fn print(&self, floor: f64) {
        if self.gaps.is_empty() || self.rounds == 0 {
            return;
        }
        let (lo, hi) = self
            .loads
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &l| (lo.min(l), hi.max(l)));
        let mean = self.loads.iter().sum::<f64>() / self.loads.len() as f64;
        println!(
            "\nnew conversations arriving a gap apart after a conversation of 3 turns: 5 per gap x {} rounds, default pool; turn 1, median",
            self.rounds
        );
        println!(
            "goal: turn 1 <= the floor's first message + 30 ms ({:.0} ms); load average (1 min) {mean:.2} (from {lo:.2} to {hi:.2})",
            floor + 30.0
        );
        let builds = match &self.compare {
            Some(other) => vec!["this build", other.to_str().unwrap_or("compared")],
            None => vec!["this build"],
        };
        for (b, name) in builds.iter().enumerate() {
            println!("{name}:");
            println!(
                "{:>8} {:>10} {:>12} {:>10}",
                "gap", "turn 1", "over floor", "ready"
            );
            for (i, gap) in self.gaps.iter().enumerate() {
                let (t, ready) = &self.got[i][b];
                let m = median(t.clone());
                println!(
                    "{:>6.2} s {m:>8.0}ms {:>+9.0} ms {:>5} of {:<3} {}",
                    gap,
                    m - floor,
                    ready,
                    t.len(),
                    if m <= floor + 30.0 { "goal met" } else { "" }
                );
            }
        }
    }
}

/// The floor's first message by how long its CLI had been up
/// (`BENCH_FLOOR_AGES`), the ages interleaved: a ready CLI is taken at any
/// age, and the floor above is measured at 1.5 s.
fn floor_by_age(rounds: usize) {
    let ages: Vec<f64> = std::env::var("BENCH_FLOOR_AGES")
        .unwrap_or_else(|_| "1,1.5,2,5".into())
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    if ages.is_empty() {
        return;
    }
    let load = load_average();
    let mut got = vec![Vec::new(); ages.len()];
    for _ in 0..rounds {
        for (i, age) in ages.iter().enumerate() {
            got[i].push(floor_after(1, "", Duration::from_secs_f64(*age))[0]);
        }
    }
    println!(
        "\nthe floor's first message by how long its CLI had been up ({rounds} rounds, median; load average {load} at the start):"
    );
    for (age, t) in ages.iter().zip(got) {
        println!("{age:>6.2} s {:>8.0}ms", median(t));
    }
}

/// The same ways with a document pasted into turn 1 (`BENCH_BIG_KIB`,
/// default 1024), so every later transcript is at least that big: the goal
/// is warm turns at the floor + 30 ms at 1 MiB.
fn big_transcripts(turns: usize, rounds: usize) {
    let kib = env_or("BENCH_BIG_KIB", 1024);
    if kib == 0 {
        return;
    }
    let doc = document(kib << 10);
    let mut rows: [(&str, Vec<f64>); 4] = [
        ("one live CLI, a line per turn (the floor)", vec![]),
        ("the replaying client, no shim", vec![]),
        ("through the shim as shipped: cold", vec![]),
        ("through the shim, warm (CLAUDE_SHIM_WARM_TEXT=1)", vec![]),
    ];
    for _ in 0..rounds {
        let runs = [
            floor(turns, &doc),
            replay(Replay::Direct, turns, &doc).0,
            replay(Replay::ShimCold, turns, &doc).0,
            replay(Replay::ShimWarm, turns, &doc).0,
        ];
        for (row, t) in rows.iter_mut().zip(runs) {
            row.1.extend_from_slice(&t[1..]);
        }
    }
    println!(
        "\n{kib} KiB transcripts (a document in turn 1), turns 2..{turns} x {rounds} rounds, median"
    );
    let floor = median(rows[0].1.clone());
    for (name, t) in &rows {
        let m = median(t.clone());
        println!(
            "{name:<84} {m:>8.0}ms   {:+.0} ms over the floor",
            m - floor
        );
    }
    println!(
        "goal: warm <= floor + 30 ms at 1 MiB; measured {:+.0} ms",
        median(rows[3].1.clone()) - floor
    );
}
