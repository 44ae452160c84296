//! When this process's turn reached each of its marks: the shim started,
//! the CLI started (or a live one was handed the message), the CLI ended,
//! the caller got its first byte. One turn is one process, so the marks are
//! process-wide; each is a few nanoseconds, and the turn's record reads
//! them for the metrics' histograms (`store::totals`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The process's zero: set by [`begin`], else at the first look.
static ZERO: OnceLock<Instant> = OnceLock::new();
/// Nanoseconds after [`ZERO`] plus one (0: not yet).
static CLI_STARTED: AtomicU64 = AtomicU64::new(0);
static CLI_ENDED: AtomicU64 = AtomicU64::new(0);
static FIRST_BYTE: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds the turn waited for its store.
static STORE_WAIT: AtomicU64 = AtomicU64::new(0);

fn zero() -> Instant {
    *ZERO.get_or_init(Instant::now)
}

fn since_zero() -> u64 {
    zero().elapsed().as_nanos() as u64 + 1
}

/// Time since the shim started.
pub fn elapsed() -> Duration {
    zero().elapsed()
}

/// The shim started (the first thing `main` does).
pub fn begin() {
    zero();
}

/// A CLI started for the turn (the first start counts: a rerun's CLI is
/// part of the turn's CLI time).
pub fn cli_started() {
    let _ = CLI_STARTED.compare_exchange(0, since_zero(), Ordering::Relaxed, Ordering::Relaxed);
}

/// The turn's CLI ended (the last end counts).
pub fn cli_ended() {
    CLI_ENDED.store(since_zero(), Ordering::Relaxed);
}

/// Bytes went to the caller's stdout.
pub fn wrote_out() {
    if FIRST_BYTE.load(Ordering::Relaxed) == 0 {
        let _ = FIRST_BYTE.compare_exchange(0, since_zero(), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The turn waited `d` for its store (opening it, the lookup).
pub fn waited_for_store(d: Duration) {
    STORE_WAIT.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// The turn's times so far.
pub fn now() -> Timing {
    let at = |a: &AtomicU64| match a.load(Ordering::Relaxed) {
        0 => None,
        n => Some(Duration::from_nanos(n - 1)),
    };
    Timing::of(
        zero().elapsed(),
        at(&CLI_STARTED),
        at(&CLI_ENDED),
        at(&FIRST_BYTE),
        Duration::from_nanos(STORE_WAIT.load(Ordering::Relaxed)),
    )
}

/// A turn's times, in seconds (pure: see [`Timing::of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// From the shim's start to now (the turn's record).
    pub turn: f64,
    /// The shim's own part: before its CLI started and after it ended.
    /// `None`: no CLI ran.
    pub overhead: Option<f64>,
    /// From the shim's start to the first byte on the caller's stdout.
    pub first_byte: Option<f64>,
    pub store_wait: f64,
}

impl Timing {
    /// From the marks, as offsets from the shim's start (`now`: the record).
    pub fn of(
        now: Duration,
        cli_started: Option<Duration>,
        cli_ended: Option<Duration>,
        first_byte: Option<Duration>,
        store_wait: Duration,
    ) -> Timing {
        let overhead = cli_started.map(|s| {
            let after = cli_ended.map_or(Duration::ZERO, |e| now.saturating_sub(e));
            (s + after).as_secs_f64()
        });
        Timing {
            turn: now.as_secs_f64(),
            overhead,
            first_byte: first_byte.map(|d| d.as_secs_f64()),
            store_wait: store_wait.as_secs_f64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_before_the_cli_and_after_it() {
        let ms = Duration::from_millis;
        let t = Timing::of(ms(1000), Some(ms(3)), Some(ms(998)), Some(ms(400)), ms(1));
        assert!((t.overhead.unwrap() - 0.005).abs() < 1e-9, "{t:?}");
        assert_eq!(t.turn, 1.0);
        assert_eq!(t.first_byte, Some(0.4));
        assert_eq!(t.store_wait, 0.001);
        // No CLI ran: no overhead to speak of. A CLI still running at the
        // record: only the part before it.
        assert_eq!(Timing::of(ms(9), None, None, None, ms(0)).overhead, None);
        let running = Timing::of(ms(900), Some(ms(2)), None, None, ms(0));
        assert!((running.overhead.unwrap() - 0.002).abs() < 1e-9);
    }
}
