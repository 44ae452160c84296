//! `claude-shim log`: the recent managed turns newest first, with their
//! reasons, filtered by span, directory and count; unknown tokens and costs
//! shown as unknown (null in JSON), never 0; a real turn through the shim
//! shows up with its reason. Rows are seeded through the library's `Store`,
//! aged with its clock.

use crate::support::{ok, run, Input, Sandbox};
use claude_shim::events::Usage;
use claude_shim::store::runs::{Kind, Run, Spent, UsageFrom};
use serde_json::Value;

const HOUR: i64 = 3600;
const SESSION: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";

fn known(from: UsageFrom) -> Spent {
    Spent {
        usage: Some((
            Usage {
                input_tokens: 10,
                cache_creation_input_tokens: 800,
                cache_read_input_tokens: 12_000,
                output_tokens: 300,
                ..Default::default()
            },
            from,
        )),
        cost_usd: Some(0.0123),
        total_cost_usd: Some(0.5),
    }
}

/// Log a turn `hours_ago` back by the store's clock.
fn seed(s: &Sandbox, cwd: &str, kind: Kind, why: (&str, &str), spent: Spent, hours_ago: i64) {
    let at = claude_shim::store::now() - hours_ago * HOUR;
    s.store()
        .with_clock(move || at)
        .log_run(&Run {
            cwd,
            kind,
            why_code: why.0,
            why: why.1,
            exit: 0,
            bytes_in: 49_152,
            bytes_sent: 900,
            spent,
            session: Some(SESSION),
            conv_key: Some("k1"),
            engine: claude_shim::store::runs::Engine::Cold,
            replay_misses_prefix: false,
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        })
        .unwrap();
}

const RESUMED: (&str, &str) = ("resumed", "resumed the session in place at its head");
const FIRST: (&str, &str) = (
    "first-turn",
    "no earlier turns in the prompt: a first turn runs fresh and is pinned for the next",
);

/// proj: a fresh turn 30 h ago, a resumed one 2 h ago (usage from the
/// session file, cost unknown); elsewhere: a forked one now (so it is
/// today's, whenever the test runs).
fn seeded() -> (Sandbox, String) {
    let s = Sandbox::first_use();
    let proj = s.root.join("proj");
    std::fs::create_dir(&proj).unwrap();
    let proj = proj.to_string_lossy().into_owned();
    seed(&s, &proj, Kind::Fresh, FIRST, known(UsageFrom::Result), 30);
    let text_output = Spent {
        cost_usd: None,
        total_cost_usd: None,
        ..known(UsageFrom::SessionFile)
    };
    seed(&s, &proj, Kind::Resumed, RESUMED, text_output, 2);
    seed(
        &s,
        "/elsewhere",
        Kind::Forked,
        (
            "forked-busy",
            "another turn was still running in the session",
        ),
        Spent::default(),
        0,
    );
    (s, proj)
}

fn log_json(s: &Sandbox, args: &[&str]) -> Value {
    let out = ok(s.cli(&[&["log", "--json"], args].concat()));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn kinds(v: &Value) -> Vec<String> {
    v["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn json_lists_turns_newest_first_with_reasons_and_unknowns_as_null() {
    let (s, proj) = seeded();
    let v = log_json(&s, &[]);
    assert_eq!(kinds(&v), ["forked", "resumed", "fresh"]);
    let turns = v["turns"].as_array().unwrap();
    let forked = &turns[0];
    assert_eq!(forked["why_code"], "forked-busy");
    assert_eq!(forked["session"], SESSION, "full id in JSON");
    assert_eq!(forked["tokens"], Value::Null, "unknown, not zeros");
    assert_eq!(forked["cost_usd"], Value::Null);
    let resumed = &turns[1];
    assert_eq!(resumed["why"], RESUMED.1);
    assert_eq!(resumed["cwd"], proj.as_str());
    assert_eq!(resumed["usage_from"], "session-file");
    assert_eq!(resumed["tokens"]["cache_read"], 12_000);
    assert_eq!(resumed["cost_usd"], Value::Null);
    let fresh = &turns[2];
    assert_eq!(fresh["cost_usd"], 0.0123);
    assert_eq!(fresh["total_cost_usd"], 0.5);
    assert_eq!(
        (fresh["bytes_in"].clone(), fresh["bytes_sent"].clone()),
        (Value::from(49_152), Value::from(900))
    );
}

#[test]
fn since_cwd_and_limit_narrow_it() {
    let (s, proj) = seeded();
    assert_eq!(
        kinds(&log_json(&s, &["--since", "24h"])),
        ["forked", "resumed"]
    );
    assert_eq!(
        kinds(&log_json(&s, &["--cwd", &proj])),
        ["resumed", "fresh"]
    );
    let mut here = s.cli(&["log", "--json", "--cwd"]);
    here.current_dir(&proj);
    let v: Value = serde_json::from_str(&ok(here)).unwrap();
    assert_eq!(
        kinds(&v),
        ["resumed", "fresh"],
        "--cwd alone: this directory"
    );
    assert_eq!(kinds(&log_json(&s, &["--limit", "1"])), ["forked"]);
    assert_eq!(kinds(&log_json(&s, &["--limit", "0"])).len(), 3);
    let o = run(s.cli(&["log", "--since", "7days"]), Input::Null);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.err().contains("7d"), "{}", o.err());
}

#[test]
fn table_shows_time_kind_short_session_and_the_reason_plainly_when_piped() {
    let (s, _) = seeded();
    let mut cmd = s.cli(&["log"]);
    cmd.env("TZ", "UTC");
    let out = ok(cmd);
    assert!(!out.contains('\x1b'), "piped output is plain: {out:?}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("time"), "{out}");
    assert!(lines[1].contains("forked"), "{out}");
    assert!(lines[1].contains("6e8e0435 "), "{out}");
    assert!(!lines[1].contains(SESSION), "short id in the table: {out}");
    assert!(lines[1].contains("/elsewhere"), "{out}");
    assert!(lines[1].contains("48.0 KiB → 900 B"), "{out}");
    assert!(lines[1].contains("unknown"), "{out}");
    assert_eq!(
        lines[2].trim(),
        "another turn was still running in the session"
    );
    assert!(lines[3].contains("10/800/12,000/300"), "{out}");
    assert_eq!(
        lines[4].trim(),
        format!("{}; read its prompt cache (12,000 tokens)", RESUMED.1),
        "{out}"
    );
    assert!(lines[5].contains("$0.0123"), "{out}");
    assert_eq!(
        lines[6].trim(),
        FIRST.1,
        "not wrapped off a terminal: {out}"
    );
    // Today's turns show the time alone, older ones a date.
    let clock = |l: &str| l.split_whitespace().next().unwrap_or("").to_owned();
    assert_eq!(clock(lines[1]).len(), 5, "HH:MM: {out}");
    assert!(out.contains("never counted as 0"), "{out}");
}

#[test]
fn a_limited_log_says_how_to_see_more_and_an_empty_one_says_why() {
    let (s, _) = seeded();
    let out = ok(s.cli(&["log", "--limit", "2"]));
    assert!(out.contains("--limit 0 for all"), "{out}");
    let out = ok(s.cli(&["log", "--since", "30m", "--cwd", "/elsewhere/not"]));
    assert!(
        out.contains("no managed turns recorded in the last 30m"),
        "{out}"
    );

    let empty = Sandbox::first_use();
    let out = ok(empty.cli(&["log"]));
    assert!(out.contains("no managed turns recorded"), "{out}");
    assert!(out.contains("explain"), "a next step: {out}");
    assert!(
        !empty.shim_home.join("shim.db").exists(),
        "log creates nothing"
    );
}

#[test]
fn a_turn_through_the_shim_shows_up_with_its_reason() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let mut turn = std::process::Command::new(s.shim_dir().join("claude"));
    s.env(&mut turn);
    turn.env("CLAUDE_SHIM_REAL", s.real_claude())
        .env(
            "FAKE_USAGE",
            r#"{"input_tokens":12,"cache_creation_input_tokens":3000,"cache_read_input_tokens":9000,"output_tokens":40}"#,
        )
        .env("FAKE_COST", "0.0123")
        .args(["-p", "hello there", "--output-format", "json"]);
    ok(turn);
    let v = log_json(&s, &[]);
    let t = &v["turns"][0];
    assert_eq!(t["kind"], "fresh", "{v}");
    assert!(t["why_code"].as_str().is_some_and(|c| !c.is_empty()), "{v}");
    assert!(t["why"].as_str().is_some_and(|w| w.len() > 10), "{v}");
    assert_eq!(t["tokens"]["cache_read"], 9000, "{v}");
    assert_eq!(t["cost_usd"], 0.0123, "{v}");
    assert_eq!(t["engine"], "cold", "{v}");
}
