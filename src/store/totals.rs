//! Running totals of the turns, for `claude-shim metrics`: each recorded
//! turn adds its [`deltas`] to one row per family and label set, in the
//! statement that writes its run, so a scrape reads a few dozen rows however
//! many turns the store holds. On a fleet each replica adds to its own rows
//! (the `replica` column: its host and data dir) and reads only those: Prometheus sums the replicas
//! without counting a turn twice. Rows are never pruned with the runs log:
//! counters only grow.
//!
//! Histograms keep one row per bucket the turns fell in (`le=…`, not
//! cumulative: a turn adds to one row) and one for the sum (`sum`); the
//! exposition adds them up.

use crate::cache_miss::Previous;
use crate::store::types::runs::{Kind, Run};
use anyhow::Result;

pub trait Totals {
    /// This host's totals: `(family, labels, value)`.
    fn totals(&self) -> Result<Vec<Total>>;

    /// The latest run of `session` (not run `except`, the turn's own row
    /// written ahead), for why a turn missed its cache.
    fn previous_run(&self, session: &str, except: Option<i64>) -> Result<Option<Previous>>;

    /// The Claude Code versions the store has probed (`claude_shim_build_info`).
    fn cli_versions(&self) -> Result<Vec<String>>;
}

#[derive(Debug, Clone, PartialEq)]
pub struct Total {
    pub family: String,
    /// `k=v,k=v` (values from small fixed sets: never a comma), or a
    /// histogram's `le=…` / `sum`.
    pub labels: String,
    pub value: f64,
}

/// What one turn adds to a total.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub family: &'static str,
    pub labels: String,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Type {
    Counter,
    Histogram(&'static [f64]),
}

/// A family of the turns' totals. `name` is without `_total`, which the
/// encoding adds to counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub ty: Type,
}

pub const TURNS: &str = "claude_shim_turns";
pub const TURNS_FAILED: &str = "claude_shim_turns_failed";
pub const FALLBACKS: &str = "claude_shim_fallbacks";
pub const PROMPT_RECEIVED: &str = "claude_shim_prompt_received_bytes";
pub const PROMPT_SENT: &str = "claude_shim_prompt_sent_bytes";
pub const TOKENS: &str = "claude_shim_tokens";
pub const COST: &str = "claude_shim_cost_usd";
pub const SAVED: &str = "claude_shim_saved_usd";
pub const CACHE_MISSES: &str = "claude_shim_cache_misses";
pub const COLD: &str = "claude_shim_cold_turns";
pub const ERRORS: &str = "claude_shim_turn_errors";
pub const OVERHEAD: &str = "claude_shim_overhead_seconds";
pub const TURN_SECONDS: &str = "claude_shim_turn_seconds";
pub const FIRST_BYTE: &str = "claude_shim_first_byte_seconds";
pub const STORE_WAIT: &str = "claude_shim_store_wait_seconds";

const SHORT: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0,
];
const LONG: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0, 600.0,
];

pub const FAMILIES: &[Family] = &[
    Family {
        name: TURNS,
        help: "Turns the shim managed (the rows of `claude-shim log`), by kind (resumed, forked, fresh, fallback, unchanged: run as the caller asked) and engine (cold, warm, live, ready, handshake)",
        ty: Type::Counter,
    },
    Family {
        name: TURNS_FAILED,
        help: "Managed turns that ended in an error exit or a signal, by kind",
        ty: Type::Counter,
    },
    Family {
        name: FALLBACKS,
        help: "Turns run as the caller asked instead of resumed (kinds fallback and unchanged), by the reason code `claude-shim log` shows",
        ty: Type::Counter,
    },
    Family {
        name: PROMPT_RECEIVED,
        help: "Prompt bytes the callers sent",
        ty: Type::Counter,
    },
    Family {
        name: PROMPT_SENT,
        help: "Prompt bytes the shim sent the CLI (the rest was history the session already held)",
        ty: Type::Counter,
    },
    Family {
        name: TOKENS,
        help: "Tokens the turns used, by type as Claude Code's own claude_code.token.usage names them (input, output, cacheRead, cacheCreation)",
        ty: Type::Counter,
    },
    Family {
        name: COST,
        help: "What the turns cost, in USD, as the CLI reported (turns of unknown cost add nothing)",
        ty: Type::Counter,
    },
    Family {
        name: SAVED,
        help: "Estimated USD saved against replaying each turn's history (the cache reads a replay would have written, as `claude-shim stats` estimates them without a fresh turn to learn the shared prefix from: a low estimate)",
        ty: Type::Counter,
    },
    Family {
        name: CACHE_MISSES,
        help: "Resumed and forked turns (cold or warm) that wrote more to the prompt cache than they read, by reason (idle, model, system_prompt, tools, compaction, snapshot, unknown)",
        ty: Type::Counter,
    },
    Family {
        name: COLD,
        help: "Turns that ran in a new CLI where they might have run in a live one, by reason (single-shot: a call with text input, which the CLI runs as a single-shot print session; and the other codes of docs/metrics.md)",
        ty: Type::Counter,
    },
    Family {
        name: ERRORS,
        help: "Failures the shim worked around during turns (lines of errors.log), by store backend",
        ty: Type::Counter,
    },
    Family {
        name: OVERHEAD,
        help: "The shim's own part of a turn: before its CLI started and after it ended, up to the turn's record",
        ty: Type::Histogram(SHORT),
    },
    Family {
        name: TURN_SECONDS,
        help: "Whole turns, from the shim's start to the turn's record",
        ty: Type::Histogram(LONG),
    },
    Family {
        name: FIRST_BYTE,
        help: "From the shim's start to the first byte the caller read",
        ty: Type::Histogram(LONG),
    },
    Family {
        name: STORE_WAIT,
        help: "The time a turn waited for its store (opening it, the lookup)",
        ty: Type::Histogram(SHORT),
    },
];

pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

/// What a recorded turn adds, sorted (so that turns adding to the same
/// rows at once take their locks in one order). `backend`: the store's.
pub fn deltas(run: &Run<'_>, backend: &str) -> Vec<Delta> {
    let mut d = Vec::with_capacity(24);
    let mut add = |family, labels: String, value: f64| {
        d.push(Delta {
            family,
            labels,
            value,
        })
    };
    let kind = run.kind.as_str();
    add(
        TURNS,
        format!("kind={kind},engine={}", run.engine.as_str()),
        1.0,
    );
    if run.exit != 0 {
        add(TURNS_FAILED, format!("kind={kind}"), 1.0);
    }
    if matches!(run.kind, Kind::Fallback | Kind::Unchanged) {
        add(FALLBACKS, format!("reason={}", run.why_code), 1.0);
    }
    add(PROMPT_RECEIVED, String::new(), run.bytes_in as f64);
    add(PROMPT_SENT, String::new(), run.bytes_sent as f64);
    if let Some((u, _)) = run.spent.usage {
        for (ty, n) in [
            ("input", u.input_tokens),
            ("output", u.output_tokens),
            ("cacheRead", u.cache_read_input_tokens),
            ("cacheCreation", u.cache_creation_input_tokens),
        ] {
            add(TOKENS, format!("type={ty}"), n as f64);
        }
    }
    if let Some(cost) = run.spent.cost_usd.filter(|c| *c >= 0.0) {
        add(COST, String::new(), cost);
        if let Some(saved) = saving(run, cost) {
            add(SAVED, String::new(), saved);
        }
    }
    if let Some(miss) = run.cache_miss {
        add(CACHE_MISSES, format!("reason={}", miss.as_str()), 1.0);
    }
    if let Some(why) = run.cold {
        add(COLD, format!("reason={why}"), 1.0);
    }
    if run.errors > 0 {
        add(ERRORS, format!("backend={backend}"), run.errors as f64);
    }
    if let Some(t) = run.timing {
        let mut observe = |family: &'static str, v: f64| {
            let Some(Family {
                ty: Type::Histogram(bounds),
                ..
            }) = self::family(family)
            else {
                return;
            };
            let le = bounds
                .iter()
                .find(|b| v <= **b)
                .map_or("+Inf".to_owned(), |b| b.to_string());
            add(family, format!("le={le}"), 1.0);
            add(family, "sum".to_owned(), v);
        };
        if let Some(o) = t.overhead {
            observe(OVERHEAD, o);
        }
        observe(TURN_SECONDS, t.turn);
        if let Some(f) = t.first_byte {
            observe(FIRST_BYTE, f);
        }
        observe(STORE_WAIT, t.store_wait);
    }
    d.sort_by(|a, b| (a.family, &a.labels).cmp(&(b.family, &b.labels)));
    d
}

/// The turn's saving against replaying its history, `stats`'s estimate
/// (see `cli::tally`) where no fresh turn tells the shared prefix: of its
/// cache reads, the history the shim stripped (all of them where a replay
/// would have sent another system prompt) would have been written anew, at
/// 1.25× the input price instead of 0.1×.
fn saving(run: &Run<'_>, cost: f64) -> Option<f64> {
    const WRITE: f64 = 1.25;
    const READ: f64 = 0.1;
    const OUTPUT: f64 = 5.0;
    let (u, _) = run.spent.usage?;
    let stripped = run.bytes_in.saturating_sub(run.bytes_sent) as u64;
    if stripped == 0 {
        return Some(0.0);
    }
    let read = u.cache_read_input_tokens;
    let moved = if run.replay_misses_prefix {
        read
    } else {
        stripped.div_ceil(4).min(read)
    };
    let priced = u.input_tokens as f64
        + WRITE * u.cache_creation_input_tokens as f64
        + READ * read as f64
        + OUTPUT * u.output_tokens as f64;
    if priced <= 0.0 {
        return None;
    }
    Some(cost / priced * moved as f64 * (WRITE - READ))
}

/// A histogram's rows summed: `(buckets, count, sum)`, each bucket's own
/// count (not cumulative: the encoding adds them up).
pub fn histogram(bounds: &[f64], rows: &[&Total]) -> (Vec<(f64, u64)>, u64, f64) {
    let mut per = vec![0u64; bounds.len() + 1];
    let mut sum = 0.0;
    for r in rows {
        if r.labels == "sum" {
            sum += r.value;
            continue;
        }
        let Some(le) = r.labels.strip_prefix("le=") else {
            continue;
        };
        let i = match le {
            "+Inf" => bounds.len(),
            v => match v.parse::<f64>() {
                Ok(x) => bounds.iter().position(|b| *b >= x).unwrap_or(bounds.len()),
                Err(_) => continue,
            },
        };
        per[i] += r.value.max(0.0) as u64;
    }
    let count = per.iter().sum();
    let buckets = per
        .into_iter()
        .enumerate()
        .map(|(i, n)| (bounds.get(i).copied().unwrap_or(f64::INFINITY), n))
        .collect();
    (buckets, count, sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Usage;
    use crate::store::types::runs::{Engine, Spent, UsageFrom};
    use crate::timeline::Timing;

    fn run() -> Run<'static> {
        Run {
            cwd: "/w",
            kind: Kind::Resumed,
            why_code: "resumed",
            why: "resumed in place",
            exit: 0,
            bytes_in: 4_000,
            bytes_sent: 400,
            spent: Spent {
                usage: Some((
                    Usage {
                        input_tokens: 10,
                        cache_creation_input_tokens: 100,
                        cache_read_input_tokens: 2_000,
                        output_tokens: 20,
                        ..Default::default()
                    },
                    UsageFrom::Result,
                )),
                cost_usd: Some(0.01),
                total_cost_usd: Some(0.05),
            },
            session: Some("S"),
            conv_key: None,
            engine: Engine::Warm,
            replay_misses_prefix: false,
            cache_miss: None,
            prefix: None,
            timing: Some(Timing {
                turn: 3.0,
                overhead: Some(0.0015),
                first_byte: Some(700.0),
                store_wait: 0.0003,
            }),
            errors: 0,
            cold: None,
        }
    }

    fn find<'a>(d: &'a [Delta], family: &str, labels: &str) -> Option<&'a Delta> {
        d.iter().find(|x| x.family == family && x.labels == labels)
    }

    #[test]
    fn a_turn_adds_to_its_kind_engine_tokens_cost_and_buckets() {
        let d = deltas(&run(), "sqlite");
        assert_eq!(
            find(&d, TURNS, "kind=resumed,engine=warm").unwrap().value,
            1.0
        );
        assert!(find(&d, FALLBACKS, "reason=resumed").is_none());
        assert!(d.iter().all(|x| x.family != TURNS_FAILED));
        assert_eq!(find(&d, PROMPT_RECEIVED, "").unwrap().value, 4_000.0);
        assert_eq!(find(&d, PROMPT_SENT, "").unwrap().value, 400.0);
        assert_eq!(find(&d, TOKENS, "type=cacheRead").unwrap().value, 2_000.0);
        assert_eq!(find(&d, TOKENS, "type=cacheCreation").unwrap().value, 100.0);
        assert_eq!(find(&d, COST, "").unwrap().value, 0.01);
        // 900 tokens of history read instead of written, at 0.01 over
        // 10 + 125 + 200 + 100 input-token prices each.
        let saved = find(&d, SAVED, "").unwrap().value;
        assert!(
            (saved - 0.01 / 435.0 * 900.0 * 1.15).abs() < 1e-12,
            "{saved}"
        );
        assert_eq!(find(&d, OVERHEAD, "le=0.002").unwrap().value, 1.0);
        assert_eq!(find(&d, OVERHEAD, "sum").unwrap().value, 0.0015);
        assert_eq!(find(&d, FIRST_BYTE, "le=+Inf").unwrap().value, 1.0);
        assert_eq!(find(&d, STORE_WAIT, "le=0.0005").unwrap().value, 1.0);
        let mut sorted = d.clone();
        sorted.sort_by(|a, b| (a.family, &a.labels).cmp(&(b.family, &b.labels)));
        assert_eq!(d, sorted);
    }

    #[test]
    fn fallbacks_failures_misses_and_unknowns() {
        let r = Run {
            kind: Kind::Fallback,
            why_code: "resume-refused",
            exit: 1,
            cache_miss: Some(crate::cache_miss::CacheMiss::Idle),
            spent: Spent::default(),
            timing: None,
            errors: 2,
            cold: Some("single-shot"),
            ..run()
        };
        let d = deltas(&r, "postgres");
        assert!(find(&d, FALLBACKS, "reason=resume-refused").is_some());
        assert!(find(&d, TURNS_FAILED, "kind=fallback").is_some());
        assert!(find(&d, CACHE_MISSES, "reason=idle").is_some());
        assert_eq!(find(&d, ERRORS, "backend=postgres").unwrap().value, 2.0);
        assert_eq!(find(&d, COLD, "reason=single-shot").unwrap().value, 1.0);
        assert!(deltas(&run(), "sqlite").iter().all(|x| x.family != COLD));
        // Unknown usage and cost add nothing, never zero.
        assert!(d.iter().all(|x| x.family != TOKENS && x.family != COST));
        assert!(d.iter().all(|x| x.family != OVERHEAD));
    }

    #[test]
    fn a_histogram_reads_back_per_bucket() {
        let rows = [
            Total {
                family: OVERHEAD.into(),
                labels: "le=0.001".into(),
                value: 2.0,
            },
            Total {
                family: OVERHEAD.into(),
                labels: "le=0.01".into(),
                value: 1.0,
            },
            Total {
                family: OVERHEAD.into(),
                labels: "le=+Inf".into(),
                value: 1.0,
            },
            Total {
                family: OVERHEAD.into(),
                labels: "sum".into(),
                value: 3.5,
            },
        ];
        let refs: Vec<&Total> = rows.iter().collect();
        let (buckets, count, sum) = histogram(SHORT, &refs);
        assert_eq!(count, 4);
        assert_eq!(sum, 3.5);
        assert_eq!(buckets[1], (0.001, 2));
        assert_eq!(buckets[4], (0.01, 1));
        assert_eq!(buckets.last().unwrap().1, 1);
        assert!(buckets.last().unwrap().0.is_infinite());
    }
}
