//! Token economics: an N-turn conversation through the REAL Claude Code CLI
//! against the loopback Messages-API server (which models prompt caching on
//! the exact request bytes), three ways, side by side:
//!
//! - replay: the client re-sends the whole transcript each turn, no shim (today);
//! - shim:   the same client, with the shim on PATH;
//! - native: a client that resumes its session itself and sends only the new
//!   message (the limit).
//!
//! Prints per-turn and total billed-equivalent input tokens
//! (plain + 1.25 × cache writes + 0.1 × cache reads) and the ratios, and writes
//! `target/bench-cost.csv`. `BENCH_TURNS` sets N (default 12).
//! Run: `.ci/install-cli && cargo bench --bench cost`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{run, ApiServer, LoggedRequest, Sandbox};

const REPLY_BYTES: usize = 1500;

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Replay,
    Shim,
    Native,
}

/// A ~300-byte user message.
fn user_message(i: usize) -> String {
    let mut s =
        format!("Question {i}: please look at part {i} of the plan and tell me what to change.");
    while s.len() < 300 {
        s.push_str(" More context about the plan follows here.");
    }
    s
}

fn transcript(turns: &[(String, String)], current: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (u, a) in turns {
        parts.push(format!("Human: {u}"));
        parts.push(format!("Assistant: {a}"));
    }
    parts.push(format!("Human: {current}"));
    parts.join("\n\n")
}

/// Drive one conversation; returns the main request of each turn.
fn drive(way: Way, n: usize) -> Vec<LoggedRequest> {
    let server = ApiServer::start();
    server.set_reply_size(Some(REPLY_BYTES));
    let sandbox = Sandbox::new(&server);
    let session = uuid::Uuid::new_v4().to_string();
    let mut history: Vec<(String, String)> = Vec::new();
    for i in 1..=n {
        let current = user_message(i);
        let (cmd, stdin) = match way {
            Way::Replay => (sandbox.direct(["-p"]), transcript(&history, &current)),
            Way::Shim => (sandbox.shimmed(["-p"]), transcript(&history, &current)),
            Way::Native if i == 1 => (
                sandbox.direct(["-p", "--session-id", &session]),
                current.clone(),
            ),
            Way::Native => (
                sandbox.direct(["-p", "--resume", &session]),
                current.clone(),
            ),
        };
        let out = run(cmd, stdin.as_bytes());
        assert!(
            out.status.success(),
            "turn {i} failed: {}",
            support::describe(&out)
        );
        let reply = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        history.push((current, reply));
    }
    let main = server.main_requests();
    assert_eq!(main.len(), n, "one request per turn");
    main
}

fn main() {
    let n: usize = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let cli = support::RealCli::path();
    println!("cost: {n}-turn Human:/Assistant: conversation, replies ~{REPLY_BYTES} B, user messages ~300 B");
    println!(
        "real CLI: {} ({})",
        cli.display(),
        support::RealCli::pinned_version()
    );
    let replay = drive(Way::Replay, n);
    let shim = drive(Way::Shim, n);
    let native = drive(Way::Native, n);

    let mut csv =
        String::from("turn,way,request_bytes,plain,cache_write,cache_read,billed_equivalent\n");
    println!(
        "\n{:>4} | {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8} | {:>7} {:>7}",
        "turn", "replay", "shim", "native", "req B r", "req B s", "req B n", "s/n", "r/s"
    );
    let mut tot = [0.0f64; 3];
    for i in 0..n {
        let rows = [&replay[i], &shim[i], &native[i]];
        for (w, r) in ["replay", "shim", "native"].iter().zip(rows) {
            csv.push_str(&format!(
                "{},{w},{},{},{},{},{:.1}\n",
                i + 1,
                r.bytes,
                r.plain,
                r.cache_write,
                r.cache_read,
                r.billed_equivalent()
            ));
        }
        let b: Vec<f64> = rows.iter().map(|r| r.billed_equivalent()).collect();
        for k in 0..3 {
            tot[k] += b[k];
        }
        println!(
            "{:>4} | {:>10.0} {:>10.0} {:>10.0} | {:>8} {:>8} {:>8} | {:>7.3} {:>7.2}",
            i + 1,
            b[0],
            b[1],
            b[2],
            rows[0].bytes,
            rows[1].bytes,
            rows[2].bytes,
            b[1] / b[2],
            b[0] / b[1]
        );
    }
    println!(
        "\ntotal billed-equivalent input tokens: replay {:.0}, shim {:.0}, native {:.0}",
        tot[0], tot[1], tot[2]
    );
    println!(
        "shim / native = {:.3}×   replay / shim = {:.2}×",
        tot[1] / tot[2],
        tot[0] / tot[1]
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-cost.csv");
    match std::fs::write(&path, csv) {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}
