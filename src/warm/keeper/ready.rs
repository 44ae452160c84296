//! CLIs started ready for a conversation not begun yet, per scope (`key`):
//! as many as the scope's new conversations arrive for, started after a
//! turn of the scope, reserved by its next new conversations, and ended
//! once the scope's files or environment change (a new key) or past
//! [`READY_FOR`].
//!
//! How many, and at whose cost (docs/performance.md, "New conversations"):
//!
//! - Each new conversation asks for one (hit or miss): its arrival. Over the
//!   scope's last [`ARRIVALS_KEPT`] arrivals within [`ARRIVALS_FOR`], the
//!   mean gap (or the last, if shorter) says how many arrive while a ready CLI taken is replaced
//!   ([`READY_LEAD`]): `ceil(READY_LEAD / gap)` are kept ready, at most
//!   [`MAX_READY`] (a second apart: two; half a second: three; two or more
//!   seconds: one). One arrival, or none lately: one.
//! - Within the pool's bounds. The first is started only where there is
//!   room; a stream of arrivals (two or more) may also make room by ending
//!   the least recently used idle conversation's CLI, when that one has sat
//!   idle longer than the ready CLI is expected to wait (the `j`th ready CLI:
//!   `j` gaps). The evidence then says a new conversation comes first; the
//!   ended one's next turn resumes cold, as without the shim. A lent CLI, a
//!   ready one, and a conversation's CLI used more recently are never ended
//!   for one.
//! - Beyond the first, only while no turn runs (a start competes with the
//!   turns for the cores); the next turn's end tops them up.
//! - A conversation takes the one started first: likely done starting, and
//!   if not, still sooner ready than a CLI started now, which would begin
//!   from nothing and share the cores with it. The keeper cannot tell a
//!   starting CLI from a started one (neither writes before its first
//!   message), and needs not.

use super::config::{
    ARRIVALS_FOR, ARRIVALS_KEPT, MAX_READY, READY_FOR, READY_LEAD, RESERVE, TYPICAL_RSS,
};
use super::entry::{Entry, State};
use super::pool::Pool;
use crate::warm::protocol::Start;
use std::time::{Duration, Instant};

impl Pool {
    /// Reserve a CLI ready for `key`, if one is (and young enough): its
    /// session id. Ready CLIs of the same directory started under another
    /// key (the environment, flags or files changed) can serve no one: ended.
    /// Hit or miss, a new conversation of `key`'s scope arrived.
    pub fn reserve_ready(&mut self, key: &str) -> Option<String> {
        self.arrived(key, Instant::now());
        let cwd = self
            .entries
            .values()
            .find(|e| e.ready && e.key == key)
            .map(|e| e.cwd.clone());
        let stale: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.ready && e.key != key && Some(&e.cwd) == cwd.as_ref())
            .map(|(k, _)| *k)
            .collect();
        for id in stale {
            self.stop_leased(id);
        }
        let found = self
            .entries
            .values_mut()
            .filter(|e| {
                e.ready && e.key == key && e.state == State::Idle && e.started.elapsed() < READY_FOR
            })
            .min_by_key(|e| e.started);
        let Some(e) = found else {
            crate::debug!(
                "keeper: no CLI ready for key {key} (ready: {:?})",
                self.entries
                    .values()
                    .filter(|e| e.ready)
                    .map(|e| e.key.as_str())
                    .collect::<Vec<_>>()
            );
            return None;
        };
        e.ready = false;
        e.last_used = Instant::now();
        Some(e.session.clone())
    }

    /// Remember that a new conversation of `key` arrived `at`; forget
    /// scopes whose last arrival is too old to tell a rate.
    pub(super) fn arrived(&mut self, key: &str, at: Instant) {
        self.arrivals
            .retain(|_, a| a.back().is_some_and(|t| t.elapsed() < ARRIVALS_FOR));
        let a = self.arrivals.entry(key.to_owned()).or_default();
        a.push_back(at);
        while a.len() > ARRIVALS_KEPT {
            a.pop_front();
        }
    }

    /// The gap between `key`'s recent new conversations: the mean, or the
    /// last if shorter (a stream that speeds up is met at once; a miss costs
    /// a cold start, a ready CLI too many only memory for a minute). `None`
    /// for fewer than two within [`ARRIVALS_FOR`].
    fn arrival_gap(&self, key: &str) -> Option<Duration> {
        let recent: Vec<Instant> = self
            .arrivals
            .get(key)?
            .iter()
            .copied()
            .filter(|t| t.elapsed() < ARRIVALS_FOR)
            .collect();
        let (first, last) = (recent.first()?, recent.last()?);
        let n = u32::try_from(recent.len()).ok()?.checked_sub(1)?;
        let before_last = recent.get(recent.len().checked_sub(2)?)?;
        let latest = last.saturating_duration_since(*before_last);
        (n > 0).then(|| (last.saturating_duration_since(*first) / n).min(latest))
    }

    /// How many CLIs to keep ready for `key` (see the module's doc).
    pub(super) fn ready_wanted(&self, key: &str) -> usize {
        let Some(gap) = self.arrival_gap(key) else {
            return 1;
        };
        let ahead = (READY_LEAD.as_secs_f64() / gap.as_secs_f64().max(1e-3)).ceil();
        (ahead.min(MAX_READY as f64) as usize).max(1)
    }

    /// Start CLIs ready for the next new conversations of `key`'s scope, up
    /// to [`ready_wanted`](Self::ready_wanted), each where there is room (or
    /// room is made, see the module's doc).
    pub fn start_ready(&mut self, key: String, start: &Start) {
        if self.draining {
            return;
        }
        // Ready CLIs of this directory under another key can serve no one.
        let stale: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.ready && e.cwd == start.cwd && e.key != key)
            .map(|(k, _)| *k)
            .collect();
        for id in stale {
            self.stop_leased(id);
        }
        let wanted = self.ready_wanted(&key);
        let gap = self.arrival_gap(&key);
        let mut session = None;
        loop {
            let have = self
                .entries
                .values()
                .filter(|e| e.ready && e.key == key && e.state == State::Idle)
                .count();
            // More than one only while no turn runs: a start takes a core
            // for most of a second and slows the turns it overlaps, while
            // those started amid a burst come too late for it (new
            // conversations 0.25 s apart at load 9: turn 1 1.65 s against
            // main's 1.10; one at a time while turns run, 1.35 against 1.39).
            let turning = self
                .entries
                .values()
                .any(|e| matches!(e.state, State::Lent(_)));
            if have >= wanted || (have >= 1 && turning) {
                return;
            }
            // The turn's own id for the first; a new one for each more.
            let start = match session {
                None => start.clone(),
                Some(_) => with_session(start, &uuid::Uuid::new_v4().to_string()),
            };
            let Some(id) = session_of(&start) else {
                return;
            };
            // The `j`th ready CLI may end a conversation's CLI idle for `j`
            // gaps or more.
            let displace = gap.map(|g| g * (have as u32 + 1));
            if !self.room_for_ready(displace) {
                return;
            }
            match self.spawner.spawn(&start) {
                Ok(spawned) => {
                    crate::debug!(
                        "keeper: a CLI ready for a next conversation ({id}, {} of {wanted})",
                        have + 1
                    );
                    let mut entry = Entry::new(spawned, &start);
                    entry.session = id.clone();
                    entry.key = key.clone();
                    entry.ready = true;
                    self.insert(entry);
                }
                Err(e) => {
                    crate::debug!("keeper: starting a ready CLI failed: {e}");
                    return;
                }
            }
            session = Some(id);
        }
    }

    /// Room for one more ready CLI: within the count and memory bounds and
    /// what the machine has free. `displace`: a conversation's CLI idle at
    /// least this long may be ended for it (least recently used first);
    /// `None`, none is.
    fn room_for_ready(&mut self, displace: Option<Duration>) -> bool {
        loop {
            if self.short_of(TYPICAL_RSS + RESERVE) {
                return false;
            }
            let held = self.held();
            if held.count < self.limits.max && held.rss + TYPICAL_RSS <= self.limits.memory {
                return true;
            }
            let Some(idle_for) = displace else {
                return false;
            };
            let victim = self
                .entries
                .iter()
                .filter(|(_, e)| e.state == State::Idle && !e.ready && !e.want_stop)
                .min_by_key(|(_, e)| e.last_used)
                .filter(|(_, e)| e.last_used.elapsed() >= idle_for)
                .map(|(k, _)| *k);
            let Some(victim) = victim else {
                return false;
            };
            crate::debug!(
                "keeper: ending {}'s idle CLI for a ready one (new conversations arrive sooner)",
                self.entries[&victim].session
            );
            self.stop_leased(victim);
            // A turn holds its session's lease: it ends later (`want_stop`).
            if self.entries[&victim].want_stop {
                return false;
            }
        }
    }
}

/// The session id `start` gives its CLI.
fn session_of(start: &Start) -> Option<String> {
    start
        .args
        .iter()
        .position(|a| a == "--session-id")
        .and_then(|i| start.args.get(i + 1))
        .cloned()
}

/// `start`, with `session` as its session id.
fn with_session(start: &Start, session: &str) -> Start {
    let mut start = start.clone();
    if let Some(i) = start.args.iter().position(|a| a == "--session-id") {
        if let Some(id) = start.args.get_mut(i + 1) {
            *id = session.to_owned();
        }
    }
    start
}
