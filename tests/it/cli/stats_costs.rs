//! `claude-shim stats` with true per-turn costs: a turn of unknown cost or
//! usage is counted as unknown (null in JSON, "unknown" for people), never
//! summed as $0; the replay estimate covers the turns of known cost and is
//! never below what they cost; text-output turns count their tokens.

use crate::support::{ok, Sandbox};
use claude_shim::events::Usage;
use claude_shim::store::runs::{Kind, Run, Spent, UsageFrom};
use serde_json::Value;

fn usage(from: UsageFrom) -> Option<(Usage, UsageFrom)> {
    Some((
        Usage {
            input_tokens: 10,
            cache_creation_input_tokens: 100,
            cache_read_input_tokens: 5000,
            output_tokens: 20,
            ..Default::default()
        },
        from,
    ))
}

fn seed(s: &Sandbox, kind: Kind, spent: Spent) {
    s.store()
        .log_run(&Run {
            cwd: "/w",
            kind,
            why_code: "resumed",
            why: "resumed the session in place at its head",
            exit: 0,
            bytes_in: 8000,
            bytes_sent: 800,
            spent,
            session: None,
            conv_key: None,
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

fn stats(s: &Sandbox) -> (Value, String) {
    let json = ok(s.cli(&["stats", "--json"]));
    let v = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (v, ok(s.cli(&["stats"])))
}

#[test]
fn unknown_costs_are_counted_apart_and_never_summed_as_zero() {
    let s = Sandbox::first_use();
    for _ in 0..3 {
        seed(
            &s,
            Kind::Resumed,
            Spent {
                usage: usage(UsageFrom::Result),
                cost_usd: Some(0.02),
                total_cost_usd: Some(0.5),
            },
        );
    }
    // Text output: tokens from the session file, no cost.
    seed(
        &s,
        Kind::Resumed,
        Spent {
            usage: usage(UsageFrom::SessionFile),
            ..Spent::default()
        },
    );
    let (v, text) = stats(&s);
    let t = &v["total"];
    assert_eq!(t["turns"], 4);
    assert_eq!(t["turns_cost_unknown"], 1);
    assert_eq!(t["turns_tokens_unknown"], 0);
    assert_eq!(
        t["cache_read_tokens"],
        4 * 5000,
        "text-output turn's tokens count"
    );
    let cost = t["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - 0.06).abs() < 1e-9,
        "the three known, not the running totals: {cost}"
    );
    let replay = t["replay_cost_usd"].as_f64().unwrap();
    assert!(replay >= cost, "{replay} < {cost}");
    assert!(
        (t["saved_usd"].as_f64().unwrap() - (replay - cost)).abs() < 1e-9,
        "{v}"
    );
    assert!(v["cost_note"].as_str().unwrap().contains("own cost"), "{v}");
    assert!(
        text.contains("$0.06 actual (3 turns known; 1 turn unknown)"),
        "{text}"
    );
    assert!(text.contains("for the same 3 turns (estimate)"), "{text}");
}

#[test]
fn all_unknown_is_null_and_unknown_not_zero() {
    let s = Sandbox::first_use();
    seed(&s, Kind::Resumed, Spent::default());
    seed(&s, Kind::Fresh, Spent::default());
    let (v, text) = stats(&s);
    let t = &v["total"];
    for field in [
        "cost_usd",
        "replay_cost_usd",
        "saved_usd",
        "input_tokens",
        "cache_read_tokens",
        "saved_tokens",
    ] {
        assert_eq!(t[field], Value::Null, "{field}: {v}");
    }
    assert_eq!(
        (
            t["turns_cost_unknown"].clone(),
            t["turns_tokens_unknown"].clone()
        ),
        (Value::from(2), Value::from(2))
    );
    assert!(text.contains("cost            unknown"), "{text}");
    assert!(text.contains("tokens          unknown"), "{text}");
    assert!(!text.contains("$0.00"), "{text}");
}
