//! Adding up the runs log for `stats`, and the estimate of what the same
//! turns would have cost had every one replayed its whole transcript.
//!
//! The estimate, per turn: the bytes the shim stripped from the prompt
//! (`bytes_in − bytes_sent`) are history the resumed session already held.
//! At ~4 bytes a token that is `H = ⌈stripped / 4⌉` tokens. The turn read at
//! most that much history from the prompt cache; replayed, the same tokens
//! would have been new input, written to the cache instead. So
//! `moved = min(H, cache_read)` tokens move from cache reads (0.1× the input
//! price) to cache writes (1.25×, 5-minute cache). The price comes from the
//! turn's own `total_cost_usd`, assuming output costs 5× input (true of the
//! current Claude models): `price = cost / (input + 1.25·write + 0.1·read +
//! 5·output)`, and `replay = cost + price · moved · 1.15`. It ignores the
//! larger context a replay re-reads on later tool calls within the turn, so
//! it tends to understate the saving. It is an estimate, labelled as one.

use crate::store::report::RunRow;
use serde::Serialize;

const WRITE: f64 = 1.25;
const READ: f64 = 0.1;
const OUTPUT: f64 = 5.0;
const BYTES_PER_TOKEN: i64 = 4;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub turns: i64,
    pub resumed: i64,
    pub forked: i64,
    pub fresh: i64,
    pub fallback: i64,
    pub unchanged: i64,
    /// Kinds this build does not know (a newer shim wrote them).
    pub other: i64,
    pub bytes_in: i64,
    pub bytes_sent: i64,
    pub bytes_stripped: i64,
    pub input_tokens: i64,
    pub cache_write_tokens: i64,
    pub cache_read_tokens: i64,
    pub output_tokens: i64,
    /// Turns whose output carried no usage (text output, failures).
    pub turns_without_usage: i64,
    pub cost_usd: f64,
    /// Estimated; see the module comment.
    pub replay_cache_write_tokens: i64,
    pub replay_cache_read_tokens: i64,
    pub replay_cost_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Day {
    pub day: String,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub total: Totals,
    /// Days that had turns, oldest first.
    pub days: Vec<Day>,
}

impl Totals {
    fn add(&mut self, r: &RunRow) {
        self.turns += 1;
        match r.kind.as_str() {
            "resumed" => self.resumed += 1,
            "forked" => self.forked += 1,
            "fresh" => self.fresh += 1,
            "fallback" => self.fallback += 1,
            "unchanged" => self.unchanged += 1,
            _ => self.other += 1,
        }
        let stripped = (r.bytes_in - r.bytes_sent).max(0);
        self.bytes_in += r.bytes_in;
        self.bytes_sent += r.bytes_sent;
        self.bytes_stripped += stripped;
        let Some(t) = r.tokens else {
            self.turns_without_usage += 1;
            self.cost_usd += r.cost_usd.unwrap_or(0.0);
            self.replay_cost_usd += r.cost_usd.unwrap_or(0.0);
            return;
        };
        self.input_tokens += t.input;
        self.cache_write_tokens += t.cache_write;
        self.cache_read_tokens += t.cache_read;
        self.output_tokens += t.output;
        let history = (stripped + BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN;
        let moved = history.min(t.cache_read).max(0);
        self.replay_cache_write_tokens += t.cache_write + moved;
        self.replay_cache_read_tokens += t.cache_read - moved;
        let cost = r.cost_usd.unwrap_or(0.0);
        self.cost_usd += cost;
        let weighted = t.input as f64
            + WRITE * t.cache_write as f64
            + READ * t.cache_read as f64
            + OUTPUT * t.output as f64;
        let price = if weighted > 0.0 { cost / weighted } else { 0.0 };
        self.replay_cost_usd += cost + price * moved as f64 * (WRITE - READ);
    }

    /// Estimated saving: replayed minus actual.
    pub fn saved_usd(&self) -> f64 {
        self.replay_cost_usd - self.cost_usd
    }
}

/// Add up rows (in time order) into totals and per-day totals.
pub fn tally(rows: &[RunRow]) -> Tally {
    let mut t = Tally::default();
    for r in rows {
        t.total.add(r);
        match t.days.last_mut() {
            Some(d) if d.day == r.day => d.totals.add(r),
            _ => {
                let mut totals = Totals::default();
                totals.add(r);
                t.days.push(Day {
                    day: r.day.clone(),
                    totals,
                });
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::report::Tokens;

    fn row(
        day: &str,
        kind: &str,
        bytes: (i64, i64),
        tokens: Option<Tokens>,
        cost: Option<f64>,
    ) -> RunRow {
        RunRow {
            day: day.into(),
            kind: kind.into(),
            bytes_in: bytes.0,
            bytes_sent: bytes.1,
            tokens,
            cost_usd: cost,
        }
    }

    fn tokens(input: i64, cache_write: i64, cache_read: i64, output: i64) -> Option<Tokens> {
        Some(Tokens {
            input,
            cache_write,
            cache_read,
            output,
        })
    }

    #[test]
    fn counts_kinds_bytes_and_days() {
        let rows = [
            row("d1", "fresh", (100, 100), tokens(1, 2, 3, 4), Some(0.5)),
            row("d1", "resumed", (400, 40), None, None),
            row("d2", "forked", (80, 20), tokens(0, 0, 0, 0), Some(0.0)),
            row("d2", "fallback", (10, 10), None, None),
            row("d2", "unchanged", (5, 5), None, None),
            row("d2", "martian", (0, 0), None, None),
        ];
        let t = tally(&rows);
        let k = &t.total;
        assert_eq!(
            (
                k.turns,
                k.resumed,
                k.forked,
                k.fresh,
                k.fallback,
                k.unchanged,
                k.other
            ),
            (6, 1, 1, 1, 1, 1, 1)
        );
        assert_eq!(
            (k.bytes_in, k.bytes_sent, k.bytes_stripped),
            (595, 175, 420)
        );
        assert_eq!(k.turns_without_usage, 4);
        assert_eq!(
            (
                k.input_tokens,
                k.cache_write_tokens,
                k.cache_read_tokens,
                k.output_tokens
            ),
            (1, 2, 3, 4)
        );
        assert_eq!(t.days.len(), 2);
        assert_eq!((t.days[0].day.as_str(), t.days[0].totals.turns), ("d1", 2));
        assert_eq!(t.days[1].totals.turns, 4);
    }

    #[test]
    fn replay_moves_stripped_history_from_reads_to_writes() {
        // 4000 bytes stripped ≈ 1000 tokens of history, all read from cache.
        // Price: cost 1.0 over 100 + 1.25·0 + 0.1·5000 + 5·80 = 1000 → 0.001/token.
        let t = tally(&[row(
            "d",
            "resumed",
            (4100, 100),
            tokens(100, 0, 5000, 80),
            Some(1.0),
        )])
        .total;
        assert_eq!(t.replay_cache_write_tokens, 1000);
        assert_eq!(t.replay_cache_read_tokens, 4000);
        assert!(
            (t.replay_cost_usd - (1.0 + 0.001 * 1000.0 * 1.15)).abs() < 1e-9,
            "{}",
            t.replay_cost_usd
        );
        assert!((t.saved_usd() - 1.15).abs() < 1e-9);
    }

    #[test]
    fn replay_never_moves_more_than_was_read() {
        // A cold cache: the resumed turn read 10 tokens; only those can move.
        let t = tally(&[row(
            "d",
            "resumed",
            (40_000, 0),
            tokens(0, 9000, 10, 0),
            Some(1.0),
        )])
        .total;
        assert_eq!(
            (t.replay_cache_write_tokens, t.replay_cache_read_tokens),
            (9010, 0)
        );
        // Nothing stripped, nothing saved.
        let t = tally(&[row(
            "d",
            "fresh",
            (500, 500),
            tokens(10, 10, 10, 10),
            Some(2.0),
        )])
        .total;
        assert_eq!(t.replay_cost_usd, 2.0);
        assert_eq!(t.saved_usd(), 0.0);
    }
}
