//! CLIs started ready for a conversation not begun yet: one per scope
//! (`key`) at most, started after a turn of the scope when there is room,
//! reserved by the scope's next new conversation, and ended once the
//! scope's files or environment change (a new key) or past [`READY_FOR`].

use super::config::{READY_FOR, RESERVE, TYPICAL_RSS};
use super::entry::{Entry, State};
use super::pool::Pool;
use crate::warm::protocol::Start;
use std::time::Instant;

impl Pool {
    /// Reserve the CLI ready for `key`, if one is (and young enough): its
    /// session id. Ready CLIs of the same directory started under another
    /// key (the environment, flags or files changed) can serve no one: ended.
    pub fn reserve_ready(&mut self, key: &str) -> Option<String> {
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
        let found = self.entries.values_mut().find(|e| {
            e.ready && e.key == key && e.state == State::Idle && e.started.elapsed() < READY_FOR
        });
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

    /// Start a CLI ready for the next new conversation of `key`'s scope,
    /// unless one is, or there is no room without ending another.
    pub fn start_ready(&mut self, key: String, start: &Start) {
        if self.draining || self.entries.values().any(|e| e.ready && e.key == key) {
            return;
        }
        // Ready CLIs of this directory under another key can serve no one.
        let stale: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.ready && e.cwd == start.cwd)
            .map(|(k, _)| *k)
            .collect();
        for id in stale {
            self.stop_leased(id);
        }
        let held = self.held();
        if held.count >= self.limits.max
            || held.rss + TYPICAL_RSS > self.limits.memory
            || self.short_of(TYPICAL_RSS + RESERVE)
        {
            return;
        }
        let Some(session) = start
            .args
            .iter()
            .position(|a| a == "--session-id")
            .and_then(|i| start.args.get(i + 1))
            .cloned()
        else {
            return;
        };
        match self.spawner.spawn(start) {
            Ok(spawned) => {
                crate::debug!("keeper: a CLI ready for the next conversation ({session})");
                let mut entry = Entry::new(spawned, start);
                entry.session = session;
                entry.key = key;
                entry.ready = true;
                self.insert(entry);
            }
            Err(e) => crate::debug!("keeper: starting a ready CLI failed: {e}"),
        }
    }
}
