//! `claude-shim metrics`, end to end: a real Prometheus (Debian's `prometheus`)
//! scrapes `metrics --serve` while the REAL CLI runs turns through the shim (cold,
//! resumed in a new live CLI, warm, a fallback), and what Prometheus's HTTP API
//! counts must equal what `log` shows. `promtool check metrics` passes on the
//! exposition. The fleet's test is in fleet.rs.

use std::collections::BTreeMap;

use crate::support::prometheus::{promtool_check, Endpoint, Prometheus};
use crate::support::{describe, run, World};
use serde_json::Value;

/// `log --json`'s turns.
fn logged(w: &World) -> Vec<Value> {
    let out = run(w.sb.cli(&["log", "--json", "--limit", "0"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("log --json");
    v["turns"].as_array().cloned().unwrap_or_default()
}

/// The turns by `kind,engine`, as `log` shows them.
fn by_kind_engine(turns: &[Value]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for t in turns {
        let key = format!(
            "{},{}",
            t["kind"].as_str().unwrap(),
            t["engine"].as_str().unwrap()
        );
        *m.entry(key).or_default() += 1.0;
    }
    m
}

fn token_sum(turns: &[Value], field: &str) -> f64 {
    turns
        .iter()
        .filter_map(|t| t["tokens"][field].as_f64())
        .sum()
}

#[test]
fn prometheus_counts_what_log_shows() {
    let mut w = World::new();
    let endpoint = Endpoint::serve(w.sb.cli(&[]));
    let prom = Prometheus::scraping(std::slice::from_ref(&endpoint.addr));
    prom.wait_for("up{job=\"claude-shim\"}", 1.0);

    w.turn("first message");
    w.turn("second message");
    w.turn("third message");
    // The keeper holds this conversation's live CLI between turns.
    prom.wait_for("claude_shim_keeper_up", 1.0);
    prom.wait_for("sum(claude_shim_live_clis{state=\"idle\"})", 1.0);
    assert!(prom.value("claude_shim_live_clis_resident_bytes") > 0.0);
    assert!(prom.value("claude_shim_keeper_lends_total") >= 2.0);

    // A fallback: the session's file is gone bad, the CLI refuses the resume,
    // and the turn reruns fresh.
    w.stop_keeper();
    let session = logged(&w)[0]["session"].as_str().unwrap().to_owned();
    let file = w.sb.session_file(&session).expect("the session's file");
    std::fs::write(&file, "").expect("empty the session file");
    w.turn("fourth message");
    // As shipped, a call with text input runs cold (a single-shot print
    // session): counted by its reason, which `log` says.
    w.turn_env("fifth message", &[("CLAUDE_SHIM_WARM_TEXT", "0")]);

    let turns = logged(&w);
    // (Newest first.)
    let last = &turns[0];
    assert_eq!(last["engine"], "cold", "{}", w.context());
    assert!(
        last["why"]
            .as_str()
            .unwrap_or_default()
            .contains("single-shot"),
        "{last}"
    );
    let kinds: Vec<&str> = turns.iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"fallback"), "{kinds:?}\n{}", w.context());
    let engines: Vec<&str> = turns
        .iter()
        .map(|t| t["engine"].as_str().unwrap())
        .collect();
    assert!(engines.contains(&"warm"), "{engines:?}\n{}", w.context());
    prom.wait_for("sum(claude_shim_turns_total)", turns.len() as f64);

    let counted: BTreeMap<String, f64> = prom
        .query("sum by (kind, engine) (claude_shim_turns_total)")
        .into_iter()
        .map(|(m, v)| {
            let key = format!(
                "{},{}",
                m["kind"].as_str().unwrap(),
                m["engine"].as_str().unwrap()
            );
            (key, v)
        })
        .collect();
    assert_eq!(counted, by_kind_engine(&turns), "{}", w.context());
    assert_eq!(
        prom.value("sum(claude_shim_fallbacks_total{reason=\"resume-refused\"})"),
        1.0
    );
    assert_eq!(
        prom.value("sum(claude_shim_cold_turns_total{reason=\"single-shot\"})"),
        1.0
    );
    for (ty, field) in [
        ("cacheRead", "cache_read"),
        ("cacheCreation", "cache_write"),
    ] {
        assert_eq!(
            prom.value(&format!("sum(claude_shim_tokens_total{{type=\"{ty}\"}})")),
            token_sum(&turns, field),
            "{ty}"
        );
    }
    let bytes_in: f64 = turns.iter().filter_map(|t| t["bytes_in"].as_f64()).sum();
    assert_eq!(
        prom.value("claude_shim_prompt_received_bytes_total"),
        bytes_in
    );
    assert_eq!(
        prom.value("claude_shim_overhead_seconds_count"),
        turns.len() as f64
    );
    assert!(prom.value("claude_shim_overhead_seconds_sum") > 0.0);
    assert!(prom.value("claude_shim_first_byte_seconds_count") >= 1.0);

    // The printed exposition passes promtool (whose parser is the classic
    // text's: the OpenMetrics text, which Prometheus scraped above, it does
    // not read).
    let out = run(w.sb.cli(&["metrics"]), b"");
    assert!(out.status.success(), "{}", describe(&out));
    let (ok, said) = promtool_check(&out.stdout);
    assert!(ok, "promtool check metrics: {said}");
    assert!(
        prom.query("claude_shim_build_info").len() == 1,
        "the scrape (OpenMetrics) read the info metric"
    );
    w.assert_no_shim_errors();
}

/// The fenced block of `lang` that follows `heading` in docs/metrics.md.
fn doc_block(heading: &str, lang: &str) -> String {
    let doc = include_str!("../../docs/metrics.md");
    let after = &doc[doc.find(heading).expect("the heading")..];
    let open = format!("```{lang}\n");
    let start = after.find(&open).expect("the block") + open.len();
    let len = after[start..].find("```").expect("its end");
    after[start..start + len].to_owned()
}

/// docs/metrics.md's alert rules pass `promtool check rules`, and each of its
/// PromQL recipes is a query a real Prometheus answers.
#[test]
fn the_documented_rules_and_queries_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("claude-shim.rules.yml");
    std::fs::write(&rules, doc_block("## Alerts", "yaml")).unwrap();
    let mut cmd = std::process::Command::new("promtool");
    cmd.args(["check", "rules"]).arg(&rules);
    let out = run(cmd, b"");
    assert!(out.status.success(), "{}", describe(&out));

    let w = World::new();
    let endpoint = Endpoint::serve(w.sb.cli(&[]));
    let prom = Prometheus::scraping(std::slice::from_ref(&endpoint.addr));
    prom.wait_for("up{job=\"claude-shim\"}", 1.0);
    // Each expression: a line, and the indented lines that continue it.
    let mut queries: Vec<String> = Vec::new();
    for line in doc_block("## PromQL", "promql").lines() {
        match line {
            l if l.trim().is_empty() || l.starts_with('#') => {}
            l if l.starts_with(' ') => queries.last_mut().unwrap().push_str(l),
            l => queries.push(l.to_owned()),
        }
    }
    assert!(queries.len() > 10, "{queries:?}");
    for q in queries {
        // `query` asserts the answer is 200 (a query that does not parse is 400).
        prom.query(&q);
    }
}
