//! What the shim adds to a real client's turn: the official Agent SDKs (Python and
//! TypeScript, pinned; `.ci/install-sdks`) replaying their transcript with one
//! `query()` per turn, against the real CLI and the loopback API server (which answers
//! at once, so this is everything but the model), directly and through the shim,
//! interleaved in one run. Prints the median wall time of turn 1 and of turns 2..N
//! (each `query()` from its call to its end, as the client sees it) and the difference.
//! Figures, never assertions.
//!
//! `cargo bench --bench clients` (`BENCH_TURNS`, default 6; `BENCH_ROUNDS`, default 5;
//! `BENCH_SDK=python|typescript`: one SDK only; `BENCH_SHIM_LOG`: a file for the shim's
//! debug log, timestamped to the millisecond).

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::Value;
use std::path::PathBuf;
use support::figures::{env_or, median};
use support::{describe, run, sdk, ApiServer, Sandbox};

#[derive(Clone, Copy)]
enum Sdk {
    Python,
    TypeScript,
}

impl Sdk {
    fn name(self) -> &'static str {
        match self {
            Sdk::Python => "Python claude-agent-sdk",
            Sdk::TypeScript => "TypeScript @anthropic-ai/claude-agent-sdk",
        }
    }
}

/// How a conversation's turns reach the CLI.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// One `query()` per turn, replaying the transcript, straight to the CLI.
    Direct,
    /// The same through the shim, after another conversation in the same
    /// place (the shim has learned the answer to `initialize`, as it has on
    /// any machine after two turns).
    Shim,
    /// One client session: one CLI for every turn (the floor).
    Session,
}

/// One conversation of `turns` turns; per-turn wall times in ms.
fn conversation(sdk: Sdk, way: Way, turns: usize) -> Vec<f64> {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    sb.ready_clis(); // as users run it (tests turn it off)
    if let Some(log) = std::env::var_os("BENCH_SHIM_LOG") {
        sb.set_env("CLAUDE_SHIM_LOG", log);
    }
    let cli: PathBuf = match way {
        Way::Shim => sb.shim_claude(),
        Way::Direct | Way::Session => sb.real_bin.join("claude"),
    };
    let (program, script) = match sdk {
        Sdk::Python => (sdk::python(), sdk::py_client()),
        Sdk::TypeScript => (PathBuf::from("node"), sdk::ts_client()),
    };
    let client = |mode: &str, turns: usize, prompt: &str| {
        let mut cmd = sb.client(program.clone(), [script.as_os_str()]);
        cmd.args([mode, "--cli"]).arg(&cli).args([
            "--turns",
            &turns.to_string(),
            "--prompt",
            prompt,
        ]);
        if let Sdk::TypeScript = sdk {
            cmd.env("CLAUDE_AGENT_SDK_DIR", sdk::ts_package());
        }
        let out = run(cmd, b"");
        assert!(out.status.success(), "{}", describe(&out));
        out
    };
    if way == Way::Shim {
        client("replay", 3, "an earlier question {k}");
    }
    let mode = if way == Way::Session {
        "session"
    } else {
        "replay"
    };
    let out = client(mode, turns, "message {k}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|t| t.get("turn").is_some())
        .map(|t| t["t_done"].as_f64().unwrap_or(0.0) - t["t_start"].as_f64().unwrap_or(0.0))
        .collect()
}

fn main() {
    let turns = env_or("BENCH_TURNS", 6);
    let rounds = env_or("BENCH_ROUNDS", 5);
    println!(
        "Agent SDK clients, one query() per turn replaying the transcript; {turns} turns x {rounds} rounds, \
         direct, through the shim and as one client session (the floor) interleaved"
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>12} {:>10}",
        "client",
        "turn 1",
        "turn 1",
        "turn 1",
        "turns 2..N",
        "turns 2..N",
        "turns 2..N",
        "shim vs",
        "goal"
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>12} {:>10}",
        "", "session", "direct", "shim", "session", "direct", "shim", "session", ""
    );
    let only = std::env::var("BENCH_SDK")
        .unwrap_or_default()
        .to_lowercase();
    for sdk in [Sdk::Python, Sdk::TypeScript]
        .into_iter()
        .filter(|s| s.name().to_lowercase().contains(&only))
    {
        let mut first = [vec![], vec![], vec![]];
        let mut rest = [vec![], vec![], vec![]];
        for _ in 0..rounds {
            for (i, way) in [Way::Session, Way::Direct, Way::Shim]
                .into_iter()
                .enumerate()
            {
                let t = conversation(sdk, way, turns);
                first[i].push(t[0]);
                rest[i].extend_from_slice(&t[1..]);
            }
        }
        let [f0, f1, f2] = first.map(median);
        let [r0, r1, r2] = rest.map(median);
        println!(
            "{:<44} {:>7.0}ms {:>7.0}ms {:>7.0}ms {:>9.0}ms {:>9.0}ms {:>9.0}ms {:>+10.0}ms {:>10}",
            sdk.name(),
            f0,
            f1,
            f2,
            r0,
            r1,
            r2,
            r2 - r0,
            "<= +30ms"
        );
    }
}
