//! What the shim adds to a real client's turn: the official Agent SDKs (Python and
//! TypeScript, pinned; `.ci/install-sdks`) replaying their transcript with one
//! `query()` per turn, against the real CLI and the loopback API server (which answers
//! at once, so this is everything but the model), directly and through the shim,
//! interleaved in one run. Prints the median wall time of turn 1 and of turns 2..N
//! (each `query()` from its call to its end, as the client sees it) and the difference.
//! Figures, never assertions.
//!
//! `cargo bench --bench clients` (`BENCH_TURNS`, default 6; `BENCH_ROUNDS`, default 5).

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

/// One conversation of `turns` turns; per-turn wall times in ms.
fn conversation(sdk: Sdk, shimmed: bool, turns: usize) -> Vec<f64> {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let cli: PathBuf = if shimmed {
        sb.shim_claude()
    } else {
        sb.real_bin.join("claude")
    };
    let (program, script) = match sdk {
        Sdk::Python => (sdk::python(), sdk::py_client()),
        Sdk::TypeScript => (PathBuf::from("node"), sdk::ts_client()),
    };
    let mut cmd = sb.client(program, [script.as_os_str()]);
    cmd.args(["replay", "--cli"])
        .arg(&cli)
        .args(["--turns", &turns.to_string()]);
    if let Sdk::TypeScript = sdk {
        cmd.env("CLAUDE_AGENT_SDK_DIR", sdk::ts_package());
    }
    let out = run(cmd, b"");
    assert!(out.status.success(), "{}", describe(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|t| t["t_done"].as_f64().unwrap_or(0.0) - t["t_start"].as_f64().unwrap_or(0.0))
        .collect()
}

fn main() {
    let turns = env_or("BENCH_TURNS", 6);
    let rounds = env_or("BENCH_ROUNDS", 5);
    println!(
        "Agent SDK clients, one query() per turn replaying the transcript; {turns} turns x {rounds} rounds, \
         direct and through the shim interleaved"
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>14} {:>14} {:>10}",
        "client", "turn 1", "turn 1", "added", "turns 2..N", "turns 2..N", "added"
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>14} {:>14} {:>10}",
        "", "direct", "shim", "", "direct", "shim", ""
    );
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let (mut d1, mut s1, mut dn, mut sn) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            for shimmed in [false, true] {
                let t = conversation(sdk, shimmed, turns);
                let (first, rest) = if shimmed {
                    (&mut s1, &mut sn)
                } else {
                    (&mut d1, &mut dn)
                };
                first.push(t[0]);
                rest.extend_from_slice(&t[1..]);
            }
        }
        let (d1, s1, dn, sn) = (median(d1), median(s1), median(dn), median(sn));
        println!(
            "{:<44} {:>8.0}ms {:>8.0}ms {:>+8.0}ms {:>12.0}ms {:>12.0}ms {:>+8.0}ms",
            sdk.name(),
            d1,
            s1,
            s1 - d1,
            dn,
            sn,
            sn - dn
        );
    }
}
