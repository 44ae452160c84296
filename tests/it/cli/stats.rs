//! `claude-shim stats`: counts, bytes, tokens, the replay estimate, days and
//! bars from the runs log (seeded through the library's `Store`), the
//! span and cwd filters, plain output off a terminal or with NO_COLOR, and a
//! real turn through the shim showing up.

use crate::support::store::seed_run;
use crate::support::{ok, run, Input, Sandbox};
use claude_shim::events::Usage;
use claude_shim::store::runs::{Kind, Run, Spent, UsageFrom};
use serde_json::Value;
use std::io::Read;

fn spent(cache_read: u64, cost: f64) -> Spent {
    let usage = Usage {
        input_tokens: 10,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: cache_read,
        output_tokens: 20,
        ..Default::default()
    };
    Spent {
        usage: Some((usage, UsageFrom::Result)),
        cost_usd: Some(cost),
        total_cost_usd: Some(cost),
    }
}

/// Log a run `days_ago` back in time (by the store's clock).
fn seed(s: &Sandbox, cwd: &str, kind: Kind, bytes: (usize, usize), days_ago: i64) {
    seed_run(
        s,
        &Run {
            cwd,
            kind,
            why_code: "resumed",
            why: "resumed",
            exit: 0,
            bytes_in: bytes.0,
            bytes_sent: bytes.1,
            // A fresh call reads only the prefix all fresh calls share.
            spent: spent(if kind == Kind::Fresh { 1000 } else { 5000 }, 0.01),
            session: None,
            conv_key: None,
            engine: claude_shim::store::runs::Engine::Cold,
            replay_misses_prefix: false,
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        },
        days_ago,
    );
}

fn seeded() -> (Sandbox, String) {
    let s = Sandbox::first_use();
    let proj = s.root.join("proj");
    std::fs::create_dir(&proj).unwrap();
    let proj = proj.to_string_lossy().into_owned();
    seed(&s, &proj, Kind::Fresh, (1000, 1000), 2);
    seed(&s, &proj, Kind::Resumed, (8000, 800), 1);
    seed(&s, &proj, Kind::Resumed, (9000, 900), 1);
    seed(&s, "/elsewhere", Kind::Forked, (4000, 400), 1);
    seed(&s, "/elsewhere", Kind::Fallback, (500, 500), 0);
    seed(&s, "/elsewhere", Kind::Unchanged, (300, 300), 0);
    seed(&s, &proj, Kind::Resumed, (7000, 700), 20);
    (s, proj)
}

fn json(s: &Sandbox, args: &[&str]) -> Value {
    let out = ok(s.cli(&[&["stats", "--json"], args].concat()));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn counts_bytes_tokens_and_estimate_over_the_span() {
    let (s, _) = seeded();
    let v = json(&s, &[]);
    let t = &v["total"];
    assert_eq!(t["turns"], 6, "the 20-day-old run is outside 7d: {v}");
    assert_eq!(
        (
            &t["resumed"],
            &t["forked"],
            &t["fresh"],
            &t["fallback"],
            &t["unchanged"]
        ),
        (
            &Value::from(2),
            &Value::from(1),
            &Value::from(1),
            &Value::from(1),
            &Value::from(1)
        )
    );
    assert_eq!(v["pass_through"], Value::Null);
    assert!(v["pass_through_note"]
        .as_str()
        .unwrap()
        .contains("not counted"));
    assert_eq!(t["bytes_in"], 22_800);
    assert_eq!(t["bytes_stripped"], 22_800 - 3_900);
    assert_eq!(t["cache_read_tokens"], 5 * 5000 + 1000);
    assert_eq!(v["shared_prefix_tokens"], 1000, "{v}");
    let cost = t["cost_usd"].as_f64().unwrap();
    let replay = t["replay_cost_usd"].as_f64().unwrap();
    assert!((cost - 0.06).abs() < 1e-9, "{cost}");
    assert!(
        replay > cost,
        "stripped history costs more replayed: {replay} vs {cost}"
    );
    assert_eq!(v["days"].as_array().unwrap().len(), 3);
    let all = json(&s, &["--since", "30d"]);
    assert_eq!(all["total"]["turns"], 7);
    let recent = json(&s, &["--since", "12h"]);
    assert_eq!(recent["total"]["turns"], 2);
}

#[test]
fn cwd_filters_to_one_directory_defaulting_to_the_current_one() {
    let (s, proj) = seeded();
    let v = json(&s, &["--since", "30d", "--cwd", &proj]);
    assert_eq!(v["total"]["turns"], 4);
    let mut here = s.cli(&["stats", "--json", "--cwd"]);
    here.current_dir(&proj);
    let v: Value = serde_json::from_str(&ok(here)).unwrap();
    assert_eq!(v["total"]["turns"], 3);
    assert_eq!(v["cwd"], Value::from(proj));
}

#[test]
fn human_report_has_a_day_table_with_bars_and_no_escapes_when_piped() {
    let (s, _) = seeded();
    let out = ok(s.cli(&["stats"]));
    assert!(!out.contains('\x1b'), "piped output is plain: {out:?}");
    assert!(out.contains("last 7d"), "{out}");
    assert!(out.contains("turns           6"), "{out}");
    assert!(out.contains("pass-through  not counted"), "{out}");
    assert!(out.contains("(estimate)"), "{out}");
    let days: Vec<&str> = out.lines().filter(|l| l.starts_with("20")).collect();
    assert_eq!(days.len(), 3, "{out}");
    // The busiest day (3 turns) gets the full bar; a 1-turn day a third.
    assert!(days[1].ends_with(&"█".repeat(24)), "{out}");
    assert!(days[0].ends_with(&"█".repeat(8)), "{out}");
}

#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let (s, _) = seeded();
    let on_pty = |no_color: bool| -> String {
        let pty = crate::support::process::pty();
        let mut cmd = s.cli(&["stats"]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        cmd.stdout(std::process::Stdio::from(pty.slave));
        let status = cmd.status().expect("run on pty");
        assert!(status.success());
        drop(cmd);
        let mut out = Vec::new();
        let mut master = std::fs::File::from(pty.master);
        // EIO once the slave side is closed and drained.
        let _ = master.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    let color = on_pty(false);
    assert!(
        color.contains("\x1b[32m"),
        "bars are coloured on a terminal: {color:?}"
    );
    let plain = on_pty(true);
    assert!(plain.contains("turns"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR: {plain:?}");
}

#[test]
fn empty_and_missing_databases_report_nothing_and_create_nothing() {
    let s = Sandbox::first_use();
    let out = ok(s.cli(&["stats"]));
    assert!(out.contains("no managed turns recorded"), "{out}");
    assert!(!s.shim_home.join("shim.db").exists());
}

#[test]
fn bad_spans_are_refused_with_the_accepted_units() {
    let s = Sandbox::first_use();
    for bad in ["7", "7days", "x", "1.5d"] {
        let o = run(s.cli(&["stats", "--since", bad]), Input::Null);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.err().contains("7d"), "{bad}: {}", o.err());
    }
}

#[test]
fn a_turn_through_the_shim_is_counted() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let mut turn = std::process::Command::new(s.shim_dir().join("claude"));
    s.env(&mut turn);
    turn.env("CLAUDE_SHIM_REAL", s.real_claude())
        .env("FAKE_REPLY", "Hello from the fake.")
        .env(
            "FAKE_USAGE",
            r#"{"input_tokens":12,"cache_creation_input_tokens":3000,"cache_read_input_tokens":9000,"output_tokens":40}"#,
        )
        .env("FAKE_COST", "0.0123")
        .args(["-p", "hello there", "--output-format", "json"]);
    let out = ok(turn);
    assert!(out.contains("Hello from the fake."), "{out}");
    let v = json(&s, &[]);
    assert_eq!(v["total"]["turns"], 1, "{v}");
    assert_eq!(v["total"]["cache_read_tokens"], 9000, "{v}");
    assert!((v["total"]["cost_usd"].as_f64().unwrap() - 0.0123).abs() < 1e-9);
}
