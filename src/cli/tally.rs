//! Adding up the runs log for `stats` and `status`, and the estimate of what
//! the same turns would have cost had every one replayed its whole
//! transcript.
//!
//! Unknown stays unknown: a turn whose cost (or usage) the runs log does not
//! hold is counted as such and left out of the sum, never added as 0. A sum
//! over no known turn is `None`. Each cost is the turn's own (what it added
//! to its session; the CLI's `total_cost_usd` is a running total over the
//! whole session, across resumes and forks).
//!
//! The estimate, per continued turn: replayed, the same call would have
//! read from the prompt cache only the prefix every fresh call shares (the
//! CLI's system prompt and tools, `P`), and written everything after it
//! anew: the transcript, and the environment block and reminders a fresh
//! call writes each time. So of the turn's cache reads, `moved = read − P`
//! tokens move to cache writes. `P` is what the fresh turns among those
//! tallied read from the cache (their median); when none did (a cold
//! cache), what a fresh turn wrote less its own prompt and `FRESH_OVERHEAD`.
//! Without any fresh turn of known usage it falls back to the history the
//! shim stripped (`⌈stripped / 4⌉` tokens, at most the reads), which
//! understates.
//!
//! Except where the replayed call would have sent another system prompt
//! than the call before it (`RunRow::replay_misses_prefix`: the CLI's first
//! system block carries a hash of a few characters of the first user
//! message, see `cost::system_key`; a client that sends its first turn bare
//! and later ones as a transcript changes it on turn 2). Such a call reads
//! nothing from the cache, so all of the turn's reads move: `moved = read`.
//!
//! Prices, as fractions of the input price: cache writes 1.25× and output
//! 5× on every Claude model, while cache reads vary by model (0.1× on most,
//! 0.05× or less on some). Taking 0.1× where the model charges 0.05× put the
//! saving ~20% low: a resumed turn is mostly cache reads, so its price per
//! input token came out low. So the read fraction `ρ` is read back from the
//! turns' own bills: each cost is `p·(input + 1.25·write + 5·output) + q·read`,
//! and a least-squares fit of `p` and `q` over the tallied turns gives
//! `ρ = q / p` when it explains every turn's cost (one model's prices); else
//! (models mixed, too few turns) the list fraction, 0.1×. Then per turn
//! `price = cost / (input + 1.25·write + ρ·read + 5·output)` and
//! `replay = cost + price · moved · (1.25 − ρ)`, never below `cost`. Turns
//! of unknown cost are left out of it, as of the actual cost. Checked
//! against the CLI's own figures in `tests/e2e/costs.rs`
//! (`the_saving_stats_reports_matches_what_the_cli_spent`) and by
//! `cargo bench --bench cost`. It is an estimate, labelled as one.

use crate::store::report::RunRow;
use crate::store::runs::Kind;
use serde::Serialize;

const WRITE: f64 = 1.25;
/// The cache-read fraction of list prices, where the turns do not tell it.
const READ: f64 = 0.1;
const OUTPUT: f64 = 5.0;
const BYTES_PER_TOKEN: i64 = 4;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub turns: i64,
    /// Turns that failed (an error exit, or killed by a signal), whatever
    /// their kind: counted here and not under the kinds.
    pub failed: i64,
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
    /// Sums over the turns whose usage is known; `None` if none is.
    pub input_tokens: Option<i64>,
    pub cache_write_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// Turns whose usage the runs log does not hold.
    pub turns_tokens_unknown: i64,
    /// The turns' own costs, over the turns whose cost is known.
    pub cost_usd: Option<f64>,
    /// Turns whose cost the runs log does not hold.
    pub turns_cost_unknown: i64,
    /// Estimated (see the module comment), over the turns of known usage.
    pub replay_cache_write_tokens: Option<i64>,
    pub replay_cache_read_tokens: Option<i64>,
    /// Estimated, over the turns of known cost (the same as `cost_usd`).
    pub replay_cost_usd: Option<f64>,
    /// `replay_cost_usd − cost_usd`.
    pub saved_usd: Option<f64>,
    /// Estimated billed-equivalent input tokens saved: the moved tokens
    /// times (1.25 − ρ), i.e. priced as plain input.
    pub saved_tokens: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Day {
    pub day: String,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// The cached prefix fresh calls share, in tokens, as the estimate took
    /// it (see `shared_prefix`); null when no fresh turn told it.
    pub shared_prefix_tokens: Option<i64>,
    /// The cache-read price as a fraction of the input price, as the
    /// estimate took it (see `read_fraction`).
    pub cache_read_price: f64,
    /// Whether `cache_read_price` was read back from the turns' costs
    /// (else it is the list fraction, 0.1).
    pub cache_read_price_fitted: bool,
    pub total: Totals,
    /// Days that had turns, oldest first.
    pub days: Vec<Day>,
}

fn add<T: std::ops::Add<Output = T> + Default + Copy>(sum: &mut Option<T>, v: T) {
    *sum = Some(sum.unwrap_or_default() + v);
}

/// A cost the tally can use: a turn's own cost is never negative, so a
/// negative (or NaN) one is as unknown as a missing one.
fn known_cost(cost: Option<f64>) -> Option<f64> {
    cost.filter(|c| *c >= 0.0)
}

impl Totals {
    fn add(&mut self, r: &RunRow, prefix: Option<i64>, read: f64) {
        self.turns += 1;
        let failed = r.exit.is_some_and(|e| e != 0);
        match r.kind {
            _ if failed => self.failed += 1,
            Some(Kind::Resumed) => self.resumed += 1,
            Some(Kind::Forked) => self.forked += 1,
            Some(Kind::Fresh) => self.fresh += 1,
            Some(Kind::Fallback) => self.fallback += 1,
            Some(Kind::Unchanged) => self.unchanged += 1,
            None => self.other += 1,
        }
        let stripped = (r.bytes_in - r.bytes_sent).max(0);
        self.bytes_in += r.bytes_in;
        self.bytes_sent += r.bytes_sent;
        self.bytes_stripped += stripped;

        let mut moved = 0;
        match r.tokens {
            Some(t) => {
                add(&mut self.input_tokens, t.input);
                add(&mut self.cache_write_tokens, t.cache_write);
                add(&mut self.cache_read_tokens, t.cache_read);
                add(&mut self.output_tokens, t.output);
                let history = (stripped + BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN;
                moved = match prefix {
                    // Replayed with another system prompt than the call
                    // before, the call reads nothing from the cache: it
                    // writes the prefix too.
                    _ if stripped > 0 && r.replay_misses_prefix => t.cache_read.max(0),
                    // Replayed, the call reads only the prefix every fresh
                    // call shares (system prompt, tools) from the cache and
                    // writes all the rest anew.
                    Some(p) if stripped > 0 => (t.cache_read - p).max(0),
                    Some(_) => 0,
                    None => history.min(t.cache_read).max(0),
                };
                add(&mut self.replay_cache_write_tokens, t.cache_write + moved);
                add(&mut self.replay_cache_read_tokens, t.cache_read - moved);
                add(
                    &mut self.saved_tokens,
                    (moved as f64 * (WRITE - read)).round() as i64,
                );
            }
            None => self.turns_tokens_unknown += 1,
        }

        let Some(cost) = known_cost(r.cost_usd) else {
            self.turns_cost_unknown += 1;
            return;
        };
        add(&mut self.cost_usd, cost);
        let weighted = r.tokens.map_or(0.0, |t| {
            let (plain, read_tokens) = priced(&t);
            plain + read * read_tokens
        });
        let price = if weighted > 0.0 { cost / weighted } else { 0.0 };
        let replay = cost + price * moved as f64 * (WRITE - read);
        add(&mut self.replay_cost_usd, replay);
        add(&mut self.saved_usd, replay - cost);
    }

    /// Turns the estimate covers: those of known cost.
    pub fn turns_cost_known(&self) -> i64 {
        self.turns - self.turns_cost_unknown
    }
}

/// Add up rows (in time order) into totals and per-day totals.
pub fn tally(rows: &[RunRow]) -> Tally {
    let mut t = Tally::default();
    let prefix = shared_prefix(rows);
    t.shared_prefix_tokens = prefix;
    let fitted = read_fraction(rows);
    let read = fitted.unwrap_or(READ);
    (t.cache_read_price, t.cache_read_price_fitted) = (read, fitted.is_some());
    for r in rows {
        t.total.add(r, prefix, read);
        match t.days.last_mut() {
            Some(d) if d.day == r.day => d.totals.add(r, prefix, read),
            _ => {
                let mut totals = Totals::default();
                totals.add(r, prefix, read);
                t.days.push(Day {
                    day: r.day.clone(),
                    totals,
                });
            }
        }
    }
    t
}

/// The cached prefix every fresh call of these turns shares (the CLI's
/// system prompt and tools): what a fresh turn read from the cache (the
/// median over those that read any), else what a fresh turn on a cold cache
/// wrote, less its own message. `None`: no fresh turn of known usage.
fn shared_prefix(rows: &[RunRow]) -> Option<i64> {
    let fresh = || {
        rows.iter()
            .filter(|r| r.kind == Some(Kind::Fresh) && r.exit.is_none_or(|e| e == 0))
            .filter_map(|r| Some((r.tokens?, r.bytes_sent)))
    };
    let median = |mut v: Vec<i64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    };
    let read: Vec<i64> = fresh()
        .map(|(t, _)| t.cache_read)
        .filter(|&n| n > 0)
        .collect();
    if !read.is_empty() {
        return median(read);
    }
    median(
        fresh()
            .map(|(t, sent)| t.cache_write - sent / BYTES_PER_TOKEN - FRESH_OVERHEAD)
            .filter(|&n| n > 0)
            .collect(),
    )
}

/// A turn's tokens in input-token prices apart from its cache reads (writes
/// 1.25×, output 5×), and its cache reads.
fn priced(t: &crate::store::report::Tokens) -> (f64, f64) {
    (
        t.input as f64 + WRITE * t.cache_write as f64 + OUTPUT * t.output as f64,
        t.cache_read as f64,
    )
}

/// The cache-read price as a fraction of the input price, read back from
/// the turns' own costs: the `p`, `q` that best give each cost as
/// `p·plain + q·read` (least squares of the relative error), so `q / p`,
/// when that explains every turn's cost within `FIT_TOLERANCE` (the CLI
/// prices one model's turns exactly so; turns of several models, long-prompt
/// or one-hour-cache prices do not fit). `None`: no such fit (also with
/// fewer than two turns of unlike mixes of reads and the rest).
fn read_fraction(rows: &[RunRow]) -> Option<f64> {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.exit.is_none_or(|e| e == 0))
        .filter_map(|r| {
            let cost = known_cost(r.cost_usd).filter(|c| *c > 0.0)?;
            let (plain, read) = priced(&r.tokens?);
            // Each turn's equation divided by its cost: relative errors.
            Some((plain / cost, read / cost))
        })
        .collect();
    let (mut xx, mut xy, mut yy, mut x1, mut y1) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, y) in &points {
        (xx, xy, yy, x1, y1) = (xx + x * x, xy + x * y, yy + y * y, x1 + x, y1 + y);
    }
    let det = xx * yy - xy * xy;
    // Collinear (every turn the same mix): p and q cannot be told apart.
    if det.is_nan() || det <= 1e-6 * xx * yy {
        return None;
    }
    let (p, q) = ((x1 * yy - y1 * xy) / det, (y1 * xx - x1 * xy) / det);
    let fits = points
        .iter()
        .all(|(x, y)| (p * x + q * y - 1.0).abs() <= FIT_TOLERANCE);
    let fraction = q / p;
    (fits && p > 0.0 && (0.0..WRITE).contains(&fraction)).then_some(fraction)
}

/// How closely the fitted prices must give each turn's cost (relative).
const FIT_TOLERANCE: f64 = 0.005;

/// What a fresh call writes to the cache past the shared prefix besides its
/// prompt: the environment block and system reminders, ~2,600 tokens on
/// Claude Code 2.1.330 (measured against the loopback API server; more in a
/// git repository, where the estimate then errs low).
const FRESH_OVERHEAD: i64 = 2_600;

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
            kind: crate::store::runs::Kind::from_stored(kind),
            bytes_in: bytes.0,
            bytes_sent: bytes.1,
            tokens,
            cost_usd: cost,
            exit: Some(0),
            replay_misses_prefix: false,
        }
    }

    #[test]
    fn failed_turns_are_counted_apart_from_their_kind() {
        let mut api_error = row("d1", "fresh", (10, 10), tokens(0, 0, 0, 0), Some(0.0));
        api_error.exit = Some(1);
        let mut killed = row("d1", "resumed", (400, 40), None, None);
        killed.exit = Some(-15);
        let older = RunRow {
            exit: None,
            ..row("d1", "resumed", (400, 40), None, None)
        };
        let t = tally(&[api_error, killed, older]).total;
        assert_eq!((t.turns, t.failed, t.fresh, t.resumed), (3, 2, 0, 1));
    }

    fn tokens(input: i64, cache_write: i64, cache_read: i64, output: i64) -> Option<Tokens> {
        Some(Tokens {
            input,
            cache_write,
            cache_read,
            output,
        })
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
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
        assert_eq!((k.turns_tokens_unknown, k.turns_cost_unknown), (4, 4));
        assert_eq!(
            (
                k.input_tokens,
                k.cache_write_tokens,
                k.cache_read_tokens,
                k.output_tokens
            ),
            (Some(1), Some(2), Some(3), Some(4))
        );
        assert!(close(k.cost_usd, 0.5), "{:?}", k.cost_usd);
        assert_eq!(t.days.len(), 2);
        assert_eq!((t.days[0].day.as_str(), t.days[0].totals.turns), ("d1", 2));
        assert_eq!(t.days[1].totals.turns, 4);
    }

    #[test]
    fn unknown_is_never_summed_as_zero() {
        let t = tally(&[
            row("d", "resumed", (400, 40), None, None),
            row("d", "resumed", (400, 40), None, Some(-0.2)),
        ])
        .total;
        assert_eq!(t.cost_usd, None, "no known cost: unknown, not $0");
        assert_eq!(t.replay_cost_usd, None);
        assert_eq!(t.saved_usd, None);
        assert_eq!(t.input_tokens, None);
        assert_eq!(t.saved_tokens, None);
        assert_eq!((t.turns_cost_unknown, t.turns_tokens_unknown), (2, 2));

        // Tokens known from the session file, cost not: tokens count, the
        // cost and its estimate stay unknown.
        let t = tally(&[row("d", "resumed", (400, 0), tokens(1, 0, 500, 1), None)]).total;
        assert_eq!(t.cache_read_tokens, Some(500));
        assert_eq!(t.replay_cache_write_tokens, Some(100));
        assert_eq!(t.cost_usd, None);
        assert_eq!(t.replay_cost_usd, None);
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
        assert_eq!(t.replay_cache_write_tokens, Some(1000));
        assert_eq!(t.replay_cache_read_tokens, Some(4000));
        assert!(
            close(t.replay_cost_usd, 1.0 + 0.001 * 1000.0 * 1.15),
            "{:?}",
            t.replay_cost_usd
        );
        assert!(close(t.saved_usd, 1.15));
        assert_eq!(t.saved_tokens, Some(1150));
    }

    #[test]
    fn replay_covers_the_turns_of_known_cost_and_is_never_below_them() {
        let rows = [
            row(
                "d",
                "resumed",
                (4100, 100),
                tokens(100, 0, 5000, 80),
                Some(1.0),
            ),
            // Known cost, unknown usage: replays at its own cost.
            row("d", "resumed", (4100, 100), None, Some(0.5)),
            // Unknown cost: in neither sum.
            row("d", "resumed", (4100, 100), tokens(100, 0, 5000, 80), None),
        ];
        let t = tally(&rows).total;
        assert!(close(t.cost_usd, 1.5));
        assert!(close(t.replay_cost_usd, 1.5 + 1.15));
        assert_eq!(t.turns_cost_known(), 2);
        assert!(t.replay_cost_usd >= t.cost_usd);
        assert_eq!(t.saved_tokens, Some(2300), "both turns of known usage");
    }

    /// A turn priced as the CLI prices a model whose input costs `p` per
    /// token and cache reads `rho` of that.
    fn priced_row(kind: &str, stripped: i64, t: Option<Tokens>, p: f64, rho: f64) -> RunRow {
        let u = t.unwrap();
        let cost = p
            * (u.input as f64
                + 1.25 * u.cache_write as f64
                + rho * u.cache_read as f64
                + 5.0 * u.output as f64);
        row("d", kind, (stripped + 300, 300), t, Some(cost))
    }

    #[test]
    fn the_cache_read_price_is_read_back_from_the_turns_costs() {
        // A model whose cache reads cost 0.05× input: a cold fresh turn,
        // then resumed turns reading ever more from the cache.
        let (p, rho) = (4e-6, 0.05);
        let mut rows = vec![priced_row("fresh", 0, tokens(0, 12_255, 0, 375), p, rho)];
        for k in 0..3 {
            let read = 12_255 + 474 * k;
            rows.push(priced_row(
                "resumed",
                8000,
                tokens(0, 474, read, 375),
                p,
                rho,
            ));
        }
        let t = tally(&rows);
        assert!(t.cache_read_price_fitted);
        assert!(
            (t.cache_read_price - rho).abs() < 1e-9,
            "{}",
            t.cache_read_price
        );
        // Each resumed turn moves read − P tokens from reads to writes, at
        // the model's own prices.
        let prefix = t.shared_prefix_tokens.unwrap();
        let moved: i64 = rows[1..]
            .iter()
            .map(|r| r.tokens.unwrap().cache_read - prefix)
            .sum();
        let exact = p * (1.25 - rho) * moved as f64;
        let saved = t.total.saved_usd.unwrap();
        assert!(
            (saved - exact).abs() < 1e-9 * exact.max(1.0),
            "{saved} vs {exact}"
        );
        // Rounded per turn.
        let tokens = t.total.saved_tokens.unwrap() as f64;
        assert!((tokens - moved as f64 * 1.2).abs() <= 2.0, "{tokens}");
    }

    #[test]
    fn turns_of_several_models_keep_the_list_read_price() {
        // Two models with other input prices and read fractions: no one set
        // of prices gives every cost, so the list fraction stands.
        let rows = [
            priced_row("fresh", 0, tokens(0, 12_000, 0, 300), 4e-6, 0.05),
            priced_row("resumed", 8000, tokens(0, 500, 12_000, 300), 4e-6, 0.05),
            priced_row("fresh", 0, tokens(0, 9_000, 0, 200), 1e-6, 0.1),
            priced_row("resumed", 8000, tokens(0, 400, 30_000, 900), 1e-6, 0.1),
        ];
        let t = tally(&rows);
        assert!(!t.cache_read_price_fitted);
        assert_eq!(t.cache_read_price, 0.1);
        // One turn alone tells nothing either.
        let t = tally(&rows[1..2]);
        assert!(!t.cache_read_price_fitted);
    }

    #[test]
    fn a_replay_whose_system_prompt_differs_moves_the_prefix_too() {
        // The bench's LangChain conversation (2.1.330, 0.05× reads): turn 1
        // sent bare, turn 2 as a transcript, whose system prompt differs.
        let (p, rho) = (4e-6, 0.05);
        let mut rows = vec![priced_row("fresh", 0, tokens(0, 12_251, 0, 375), p, rho)];
        for k in 0..3 {
            let read = 12_251 + 473 * k;
            rows.push(priced_row(
                "resumed",
                1900 * (k + 1),
                tokens(0, 473, read, 375),
                p,
                rho,
            ));
        }
        let plain = tally(&rows);
        rows[1].replay_misses_prefix = true;
        let t = tally(&rows);
        // Turn 2 replayed reads nothing from the cache: its reads, the
        // shared prefix among them, are all written.
        let prefix = t.shared_prefix_tokens.unwrap();
        assert!(prefix > 9000, "{prefix}");
        let more = t.total.replay_cache_write_tokens.unwrap()
            - plain.total.replay_cache_write_tokens.unwrap();
        assert_eq!(more, prefix);
        let extra = t.total.saved_usd.unwrap() - plain.total.saved_usd.unwrap();
        let exact = p * (1.25 - rho) * prefix as f64;
        assert!((extra - exact).abs() < 1e-9, "{extra} vs {exact}");
        // Not where the shim stripped nothing: that call was the caller's own.
        let mut fresh = rows[0].clone();
        fresh.replay_misses_prefix = true;
        assert_eq!(tally(&[fresh]).total.saved_usd, Some(0.0));
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
            (Some(9010), Some(0))
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
        assert_eq!(t.replay_cost_usd, Some(2.0));
        assert_eq!(t.saved_usd, Some(0.0));
    }
}
