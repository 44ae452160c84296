//! The keeper's pool: lending a conversation's live CLI (or starting one),
//! taking it back, room by the count and memory bounds (least recently used
//! first), idle ones watched, expired and reaped, and the pool drained. It
//! knows the processes, not the connections: a connection is a number here,
//! and what a request's answer is, the server's.

use super::config::{Limits, READY_FOR, RESERVE, TYPICAL_RSS};
use super::entry::{Entry, State};
use super::spawn::Spawn;
use crate::store::pins::Lease;
use crate::store::Store;
use crate::warm::protocol::{Counters, End, Live, LiveState, Miss, Reply, Request, Room, Status};
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

pub struct Pool {
    pub(super) limits: Limits,
    pub(super) entries: HashMap<u64, Entry>,
    next_id: u64,
    pub(super) spawner: Box<dyn Spawn>,
    /// The store the turns use (a fleet's leases and heads are shared):
    /// an entry is ended under its session's lease.
    store: Option<Store>,
    /// No more lending: a new shim build or a stop.
    pub draining: bool,
    /// Per scope (`key`), when its latest new conversations arrived (first
    /// first): how many CLIs to keep ready (`ready`).
    pub(super) arrivals: HashMap<String, VecDeque<Instant>>,
    /// Lends, misses, starts and ends, for `claude-shim metrics`.
    pub counters: Counters,
}

/// What the pool does for a turn.
pub enum ForTurn {
    /// Lent to the asking connection: the reply, and the CLI's stdin,
    /// stdout and stderr to go with it.
    Lent {
        id: u64,
        reply: Reply,
        fds: [RawFd; 3],
    },
    /// Its live CLI cannot serve (something changed since it started): it
    /// is ending (the asker holds the lease); ask again once it is gone.
    EndFirst(u64),
    /// Its live CLI is still lent for the turn before (whose caller already
    /// has the result, and moved on): ask again once it is given back.
    Finishing(u64),
    Miss(Miss),
}

/// What [`Pool::reap`] found.
#[derive(Default)]
pub struct Reaped {
    /// Connections whose lent CLI exited, and how.
    pub ended: Vec<(u64, ExitStatus)>,
    /// Connections whose lent CLI is gone.
    pub freed: Vec<u64>,
    /// Some entry is gone.
    pub any: bool,
}

/// The live processes (not those ending) and their resident memory.
pub(super) struct Held {
    pub(super) count: usize,
    pub(super) rss: u64,
}

/// The session file is as the live process left it, or longer: it may write
/// its last records of a turn after the result reached us. Shorter (truncated,
/// replaced) means someone else wrote it.
fn grown(was: Option<u64>, now: Option<u64>) -> bool {
    match (was, now) {
        (Some(was), Some(now)) => now >= was,
        (was, now) => was == now,
    }
}

impl Pool {
    pub fn new(limits: Limits, store: Option<Store>, spawner: Box<dyn Spawn>) -> Pool {
        Pool {
            counters: Counters::default(),
            limits,
            entries: HashMap::new(),
            next_id: 0,
            spawner,
            store,
            draining: false,
            arrivals: HashMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `id` has not exited yet.
    pub fn holds(&self, id: u64) -> bool {
        self.entries.contains_key(&id)
    }

    /// Whether `id` is lent for a turn.
    pub fn is_lent(&self, id: u64) -> bool {
        self.entries
            .get(&id)
            .is_some_and(|e| matches!(e.state, State::Lent(_)))
    }

    /// The pipes of the idle CLIs, which the keeper's loop wakes for.
    pub fn watched(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.entries
            .values()
            .filter(|e| e.state == State::Idle)
            .flat_map(|e| [e.stdout.as_fd(), e.stderr.as_fd()])
    }

    pub(super) fn insert(&mut self, entry: Entry) -> u64 {
        self.counters.started += 1;
        self.next_id += 1;
        self.entries.insert(self.next_id, entry);
        self.next_id
    }

    /// A live CLI for a turn of `req` (a `Request::Turn`), lent to `conn`:
    /// its conversation's own, or a new one.
    pub fn turn(&mut self, conn: u64, req: &Request) -> ForTurn {
        let Request::Turn {
            session,
            head,
            key,
            file_size,
            start,
            ..
        } = req
        else {
            return ForTurn::Miss(Miss::BadRequest);
        };
        let file_size = *file_size;
        if self.draining {
            return ForTurn::Miss(Miss::Draining);
        }
        let found = self
            .entries
            .iter()
            .find(|(_, e)| &e.session == session && !matches!(e.state, State::Stopping { .. }))
            .map(|(k, e)| (*k, e.state));
        match found {
            Some((e, State::Lent(_))) => return ForTurn::Finishing(e),
            Some((e, State::Idle)) => {
                let entry = self.entries.get_mut(&e).expect("found above");
                if &entry.key == key && &entry.head == head && grown(entry.file_size, file_size) {
                    // A CLI started ready has not had a turn: it is new.
                    let fresh = entry.turns == 0;
                    return self.lend(conn, e, fresh);
                }
                crate::debug!(
                    "keeper: {} cannot serve (key {}, head {}, file {})",
                    session,
                    if &entry.key == key { "same" } else { "changed" },
                    if &entry.head == head { "same" } else { "moved" },
                    if grown(entry.file_size, file_size) {
                        "as left"
                    } else {
                        "rewritten"
                    }
                );
                // Something changed since it started (environment, files,
                // flags) or someone else wrote the session: it cannot
                // serve. The asker holds the lease; end it, then go on.
                // Someone else's writes (the head moved on, the file is not
                // as it was left): its closing records would land in a file
                // it no longer knows, where no run without the shim writes;
                // it is killed without them, as `stop_leased` does.
                if &entry.head != head || !grown(entry.file_size, file_size) {
                    entry.child.kill();
                }
                entry.ending_for(End::Changed);
                return ForTurn::EndFirst(e);
            }
            _ => {}
        }
        let Some(start) = start else {
            return ForTurn::Miss(Miss::NoLiveProcess);
        };
        if let Err(room) = self.make_room() {
            return ForTurn::Miss(Miss::NoRoom(room));
        }
        match self.spawner.spawn(start) {
            Ok(spawned) => {
                let mut entry = Entry::new(spawned, start);
                entry.session = session.clone();
                entry.key = key.clone();
                let id = self.insert(entry);
                self.lend(conn, id, true)
            }
            Err(e) => ForTurn::Miss(Miss::SpawnFailed(e.to_string())),
        }
    }

    fn lend(&mut self, conn: u64, id: u64, fresh: bool) -> ForTurn {
        let Some(entry) = self.entries.get_mut(&id) else {
            return ForTurn::Miss(Miss::Ending);
        };
        let Some(stdin) = entry.stdin.as_ref() else {
            return ForTurn::Miss(Miss::Ending);
        };
        let fds = [
            stdin.as_raw_fd(),
            entry.stdout.as_raw_fd(),
            entry.stderr.as_raw_fd(),
        ];
        entry.state = State::Lent(conn);
        self.counters.lends += 1;
        entry.lent_at = entry
            .session_file()
            .and_then(|f| std::fs::metadata(f).ok().map(|m| m.len()));
        let reply = Reply::Lent {
            pid: entry.pid() as i32,
            fresh,
            turns: entry.turns,
            began_fresh: entry.began_fresh,
        };
        ForTurn::Lent { id, reply, fds }
    }

    /// The lent `id` is back from its turn: healthy, it serves the next
    /// (with what it has taken in now, `key`); else it ends (killed, when
    /// `at_once`).
    pub fn give_back(
        &mut self,
        id: u64,
        (healthy, at_once): (bool, bool),
        head: Option<String>,
        file_size: Option<u64>,
        key: Option<String>,
    ) {
        let draining = self.draining;
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if healthy && !draining {
            entry.state = State::Idle;
            entry.head = head;
            entry.file_size = file_size;
            if let Some(key) = key {
                entry.key = key;
            }
            entry.turns += 1;
            entry.last_used = Instant::now();
        } else {
            if !draining {
                entry.ending_for(End::Unwell);
            }
            if at_once {
                entry.child.kill();
            }
            entry.stop();
        }
    }

    /// The lent `id`'s caller hung up mid-turn: without the shim the CLI
    /// would have died with it. It is killed at once (no request more is
    /// made, nothing more billed), and what it wrote of the turn is taken
    /// back from the session, so a retry or another message meets the
    /// session as it was before.
    pub fn abandon(&mut self, id: u64) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        entry.ending_for(End::Abandoned);
        entry.child.kill();
        entry.stop();
        // SIGKILL is not refused: the wait is short (bounded all the same).
        let deadline = Instant::now() + Duration::from_secs(2);
        while matches!(entry.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if matches!(entry.child.try_wait(), Ok(Some(_))) {
            entry.undo_turn();
        }
    }

    /// The idle CLIs of `session`, for a release before a cold run writes
    /// to it; none while a turn runs in one.
    pub fn release(&self, session: &str) -> Result<Vec<u64>, Miss> {
        let busy = self
            .entries
            .values()
            .any(|e| e.session == session && matches!(e.state, State::Lent(_)));
        if busy {
            return Err(Miss::InUse);
        }
        Ok(self.idle(Some(session)))
    }

    /// The idle CLIs (of `session`, or all).
    pub fn idle(&self, session: Option<&str>) -> Vec<u64> {
        self.entries
            .iter()
            .filter(|(_, e)| session.is_none_or(|s| e.session == s))
            .filter(|(_, e)| e.state == State::Idle)
            .map(|(k, _)| *k)
            .collect()
    }

    /// End `ids`: `graceful`ly, their stdin closed (the asker holds their
    /// sessions' lease), else as [`stop_leased`](Self::stop_leased) does.
    /// Those still to exit.
    pub fn end(&mut self, ids: Vec<u64>, graceful: bool) -> Vec<u64> {
        for &id in &ids {
            if graceful {
                if let Some(entry) = self.entries.get_mut(&id) {
                    entry.stop();
                }
            } else {
                self.stop_leased(id);
            }
        }
        ids.into_iter().filter(|&id| self.holds(id)).collect()
    }

    /// The machine has less than `bytes` free.
    pub(super) fn short_of(&self, bytes: u64) -> bool {
        self.spawner
            .available_memory()
            .is_some_and(|free| free < bytes)
    }

    /// Room for one more live process: within the count, the memory budget
    /// and what the machine has free, ending idle ones (least recently used
    /// first) as needed. `Err`: no room (the turn runs cold), and the bound.
    fn make_room(&mut self) -> Result<(), Room> {
        loop {
            let held = self.held();
            let full = if held.count >= self.limits.max {
                Room::Count {
                    count: held.count,
                    max: self.limits.max,
                }
            } else if held.rss + TYPICAL_RSS > self.limits.memory {
                Room::Memory {
                    held: held.rss,
                    budget: self.limits.memory,
                }
            } else if self.short_of(TYPICAL_RSS + RESERVE) {
                Room::MachineShort
            } else {
                return Ok(());
            };
            match self.least_recently_used() {
                Some(old) => self.stop_for(old, End::Room),
                None => return Err(full),
            }
        }
    }

    /// Idle processes past the memory budget or the machine's free memory
    /// (they grow as their sessions do): the least recently used end.
    pub fn trim(&mut self) {
        let held = self.held();
        let short = self.short_of(RESERVE);
        if held.rss > self.limits.memory || (short && held.count > 0) {
            if let Some(old) = self.least_recently_used() {
                crate::debug!(
                    "keeper: {} MiB held, ending the least recently used",
                    held.rss >> 20
                );
                self.stop_for(old, End::Room);
            }
        }
    }

    /// The idle CLI to end first: a ready one nobody came for, else the one
    /// used longest ago. Not one already waiting for its session's lease to
    /// end: asked again, it would still be idle (and `make_room` would loop).
    fn least_recently_used(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|(_, e)| e.state == State::Idle && !e.want_stop)
            .min_by_key(|(_, e)| (!e.ready, e.last_used))
            .map(|(k, _)| *k)
    }

    pub(super) fn held(&self) -> Held {
        let live: Vec<&Entry> = self
            .entries
            .values()
            .filter(|e| !matches!(e.state, State::Stopping { .. }))
            .collect();
        Held {
            count: live.len(),
            rss: live
                .iter()
                .map(|e| e.child.rss().unwrap_or(TYPICAL_RSS))
                .sum(),
        }
    }

    /// Any output or end of an idle process: it is not in a state to serve.
    pub fn watch_idle(&mut self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ids: Vec<u64> = self.idle(None);
        for id in ids {
            // Which of its pipes has something (or was closed): only that
            // one is read, so the keeper never blocks on the other.
            let stirred = {
                let e = &self.entries[&id];
                let mut fds = [
                    PollFd::new(e.stdout.as_fd(), PollFlags::POLLIN),
                    PollFd::new(e.stderr.as_fd(), PollFlags::POLLIN),
                ];
                let ready = poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0);
                let has = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
                match (ready, has(&fds[0]), has(&fds[1])) {
                    (false, ..) => None,
                    (true, true, _) => Some(e.stdout.as_raw_fd()),
                    (true, false, _) => Some(e.stderr.as_raw_fd()),
                }
            };
            if let Some(fd) = stirred {
                let mut peek = [0u8; 512];
                let n = nix::unistd::read(fd, &mut peek).unwrap_or(0);
                crate::debug!(
                    "keeper: idle {} stirred ({}); ending it",
                    self.entries[&id].session,
                    String::from_utf8_lossy(&peek[..n])
                );
                self.stop_for(id, End::Unwell);
            }
        }
    }

    /// [`stop_leased`](Self::stop_leased), for `why`.
    fn stop_for(&mut self, id: u64, why: End) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.ending_for(why);
        }
        self.stop_leased(id);
    }

    /// End an entry without a turn holding its session: under the lease
    /// (the CLI's closing records must not meet another writer); a process
    /// whose session moved on is killed without them.
    pub fn stop_leased(&mut self, id: u64) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if matches!(entry.state, State::Stopping { .. }) {
            return;
        }
        let lease = match self.store.as_mut() {
            Some(store) => store
                .try_lease(
                    &entry.session,
                    entry.head.as_deref(),
                    std::process::id() as i32,
                    &crate::platform::alive,
                )
                .unwrap_or(Lease::NotHead),
            None => Lease::NotHead,
        };
        match lease {
            Lease::Taken => {
                entry.leased = true;
                entry.stop();
                // It only writes its closing records now: a turn of its
                // conversation arriving meanwhile waits for it (a bounded
                // time) rather than branching.
                if let Some(store) = self.store.as_ref() {
                    let _ = store.mark_draining(&entry.session, std::process::id() as i32);
                }
            }
            // A turn is writing the session now: try again later.
            Lease::Held { .. } => entry.want_stop = true,
            Lease::NotHead => {
                entry.child.kill();
                entry.stop();
            }
        }
    }

    /// Forget the CLIs that exited (their leases released), and hurry those
    /// slow to finish: SIGTERM, then SIGKILL.
    pub fn reap(&mut self) -> Reaped {
        let mut reaped = Reaped::default();
        let mut gone = Vec::new();
        for (id, e) in self.entries.iter_mut() {
            match e.child.try_wait() {
                Ok(Some(status)) => {
                    if let State::Lent(conn) = e.state {
                        reaped.ended.push((conn, status));
                    }
                    gone.push((*id, Some(status)));
                }
                Err(_) => gone.push((*id, None)),
                Ok(None) => {
                    if let State::Stopping { since } = e.state {
                        let waited = since.elapsed();
                        // Within the time a next turn waits for a draining
                        // lease (turn::lookup's DRAIN_WAIT).
                        if waited > Duration::from_secs(4) {
                            e.child.kill();
                        } else if waited > Duration::from_millis(1500) {
                            e.child.terminate();
                        }
                    }
                }
            }
        }
        for (id, status) in gone {
            if let Some(e) = self.entries.remove(&id) {
                let how = e.ending.unwrap_or(match status {
                    Some(status) if status.success() => End::Exited,
                    _ => End::Crashed,
                });
                *self
                    .counters
                    .ended
                    .entry(how.as_str().to_owned())
                    .or_default() += 1;
                if e.leased {
                    if let Some(store) = &self.store {
                        let _ = store.release_lease(&e.session, std::process::id() as i32);
                    }
                }
                if let State::Lent(conn) = e.state {
                    reaped.freed.push(conn);
                }
            }
            reaped.any = true;
        }
        reaped
    }

    /// End the idle CLIs past their time (or waiting to end).
    pub fn expire(&mut self) {
        let ttl = self.limits.ttl;
        let old: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| {
                e.state == State::Idle
                    && (e.want_stop
                        || e.last_used.elapsed() >= ttl
                        || (e.ready && e.started.elapsed() >= READY_FOR))
            })
            .map(|(k, _)| *k)
            .collect();
        for id in old {
            self.stop_for(id, End::Ttl);
        }
    }

    /// Lend nothing more, and end the idle.
    pub fn drain(&mut self) {
        self.draining = true;
        for id in self.idle(None) {
            self.stop_leased(id);
        }
    }

    pub fn status(&self, build: &str) -> Status {
        Status {
            pid: std::process::id(),
            build: build.to_owned(),
            max: self.limits.max,
            memory: self.limits.memory,
            ttl_secs: self.limits.ttl.as_secs(),
            counters: self.counters.clone(),
            live: self
                .entries
                .values()
                .map(|e| Live {
                    session: e.session.clone(),
                    pid: e.pid() as i32,
                    state: match e.state {
                        State::Idle if e.ready => LiveState::Ready,
                        State::Idle => LiveState::Idle,
                        State::Lent(_) => LiveState::Busy,
                        State::Stopping { .. } => LiveState::Stopping,
                    },
                    turns: e.turns,
                    cwd: e.cwd.clone(),
                    idle_secs: e.last_used.elapsed().as_secs(),
                    age_secs: e.started.elapsed().as_secs(),
                    rss_bytes: e.child.rss(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::MAX_READY;
    use super::super::fake::{start, turn, Fake};
    use super::*;
    use std::time::Duration;

    const MIB: u64 = 1 << 20;

    fn pool(fake: &Fake, max: usize, memory: u64) -> Pool {
        let limits = Limits {
            max,
            memory,
            ttl: Duration::from_secs(600),
        };
        Pool::new(limits, None, Box::new(fake.clone()))
    }

    /// Lend `session`'s CLI to `conn`: its entry, and the reply.
    fn lend(p: &mut Pool, conn: u64, session: &str) -> (u64, Reply) {
        match p.turn(conn, &turn(session)) {
            ForTurn::Lent { id, reply, .. } => (id, reply),
            ForTurn::EndFirst(id) => panic!("{session}: {id} to end first"),
            ForTurn::Finishing(id) => panic!("{session}: {id} still lent"),
            ForTurn::Miss(why) => panic!("{session}: {why}"),
        }
    }

    /// A turn of `session` served and given back, healthy: its entry.
    fn served(p: &mut Pool, session: &str) -> u64 {
        let (id, _) = lend(p, 1, session);
        p.give_back(id, (true, false), None, None, None);
        // Turns given back in the same instant would tie for the least
        // recently used.
        std::thread::sleep(Duration::from_millis(2));
        id
    }

    fn miss(p: &mut Pool, session: &str) -> Miss {
        match p.turn(9, &turn(session)) {
            ForTurn::Miss(why) => why,
            _ => panic!("{session} was served"),
        }
    }

    fn state(p: &Pool, id: u64) -> Option<State> {
        p.entries.get(&id).map(|e| e.state)
    }

    fn stopping(p: &Pool, id: u64) -> bool {
        matches!(state(p, id), Some(State::Stopping { .. }))
    }

    #[test]
    fn a_full_pool_ends_the_least_recently_used_idle_cli() {
        let fake = Fake::default();
        let mut p = pool(&fake, 2, 1 << 40);
        let a = served(&mut p, "A");
        let b = served(&mut p, "B");
        // A served again: B is now the one used longest ago.
        assert_eq!(served(&mut p, "A"), a);
        let (c, _) = lend(&mut p, 1, "C");
        assert!(stopping(&p, b) && fake.kid("B").killed(), "B ends");
        assert_eq!(state(&p, a), Some(State::Idle));
        assert_eq!(state(&p, c), Some(State::Lent(1)));
        assert!(!fake.kid("A").killed());
        // Nothing idle to end: no room, and nothing ended.
        let _ = lend(&mut p, 2, "A");
        p.reap();
        assert_eq!(
            miss(&mut p, "D"),
            Miss::NoRoom(Room::Count { count: 2, max: 2 })
        );
        assert_eq!(fake.kids().len(), 3);
        assert!(!stopping(&p, a) && !stopping(&p, c));
    }

    #[test]
    fn a_ready_cli_nobody_came_for_ends_before_a_conversations() {
        let fake = Fake::default();
        let mut p = pool(&fake, 2, 1 << 40);
        let a = served(&mut p, "A");
        p.start_ready("k".into(), &start("R"));
        let _ = lend(&mut p, 1, "C");
        assert!(fake.kid("R").killed(), "the ready one ends");
        assert_eq!(state(&p, a), Some(State::Idle));
    }

    #[test]
    fn the_memory_bound_ends_the_least_recently_used() {
        let fake = Fake::default();
        // Room for two CLIs of 200 MiB, not a third (one is taken to need
        // TYPICAL_RSS until it runs).
        let mut p = pool(&fake, 10, 600 * MIB);
        let a = served(&mut p, "A");
        fake.kid("A").set_rss(200 * MIB);
        let b = served(&mut p, "B");
        fake.kid("B").set_rss(200 * MIB);
        let (c, _) = lend(&mut p, 1, "C");
        assert!(stopping(&p, a) && fake.kid("A").killed(), "A ends");
        assert!(!stopping(&p, b) && !stopping(&p, c));
        p.give_back(c, (true, false), None, None, None);
        fake.kid("C").set_rss(200 * MIB);
        p.reap();
        // Within the budget, nothing ends; past it (C grew), the least
        // recently used does.
        p.trim();
        assert!(!stopping(&p, b) && !stopping(&p, c));
        fake.kid("C").set_rss(500 * MIB);
        p.trim();
        assert!(stopping(&p, b) && !stopping(&p, c));
        // All lent and past the budget: no room.
        p.reap();
        let _ = lend(&mut p, 1, "C");
        assert_eq!(
            miss(&mut p, "D"),
            Miss::NoRoom(Room::Memory {
                held: 500 * MIB,
                budget: 600 * MIB
            })
        );
        assert_eq!(
            miss(&mut p, "D").to_string(),
            "no room: the live processes hold 500 MiB (at most 600 MiB), all busy"
        );
    }

    #[test]
    fn a_machine_short_of_memory_starts_none_and_ends_the_idle() {
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        let a = served(&mut p, "A");
        let b = served(&mut p, "B");
        fake.set_free(Some(TYPICAL_RSS + RESERVE - 1));
        // The idle end to make room; the machine is still short.
        assert_eq!(miss(&mut p, "C"), Miss::NoRoom(Room::MachineShort));
        assert!(stopping(&p, a) && stopping(&p, b));
        p.reap();
        fake.set_free(None);
        let d = served(&mut p, "D");
        // Below the reserve itself, the idle end.
        fake.set_free(Some(RESERVE));
        p.trim();
        assert!(!stopping(&p, d));
        fake.set_free(Some(RESERVE - 1));
        p.trim();
        assert!(stopping(&p, d));
    }

    #[test]
    fn a_ready_cli_is_reserved_once_and_lent_to_its_new_conversation() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        p.start_ready("k".into(), &start("R"));
        // One per key.
        p.start_ready("k".into(), &start("R2"));
        assert_eq!(fake.kids().len(), 1);
        assert_eq!(p.reserve_ready("another key"), None);
        assert_eq!(p.reserve_ready("k").as_deref(), Some("R"));
        assert_eq!(p.reserve_ready("k"), None, "reserved once");
        let (id, reply) = lend(&mut p, 1, "R");
        assert_eq!(fake.kids().len(), 1, "no new CLI started");
        assert_eq!(
            reply,
            Reply::Lent {
                pid: fake.kid("R").pid() as i32,
                fresh: true,
                turns: 0,
                began_fresh: true,
            }
        );
        assert_eq!(state(&p, id), Some(State::Lent(1)));
    }

    #[test]
    fn a_ready_cli_of_another_key_or_too_old_serves_no_one() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        p.start_ready("k1".into(), &start("R1"));
        // The directory's environment or files changed: a new key.
        p.start_ready("k2".into(), &start("R2"));
        assert!(fake.kid("R1").killed());
        p.reap();
        assert_eq!(p.reserve_ready("k1"), None);
        assert!(!fake.kid("R2").killed());
        // Past its time: not reserved, and ended.
        let (&id, e) = p.entries.iter_mut().find(|(_, e)| e.ready).unwrap();
        e.started -= READY_FOR;
        assert_eq!(p.reserve_ready("k2"), None);
        p.expire();
        assert!(stopping(&p, id) && fake.kid("R2").killed());
    }

    /// `key`'s new conversations: `n` arrived `gap` apart, the last just now.
    fn arrivals(p: &mut Pool, key: &str, n: u32, gap: Duration) {
        let now = Instant::now();
        for i in (0..n).rev() {
            p.arrived(key, now - gap * i);
        }
    }

    /// How many CLIs wait ready for `key`.
    fn ready(p: &Pool, key: &str) -> usize {
        p.entries
            .values()
            .filter(|e| e.ready && e.key == key && e.state == State::Idle)
            .count()
    }

    #[test]
    fn as_many_clis_are_kept_ready_as_new_conversations_arrive_for() {
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        // No stream of arrivals: one.
        p.start_ready("k".into(), &start("R"));
        assert_eq!(ready(&p, "k"), 1);
        // A second apart: one more arrives before a CLI started now is.
        arrivals(&mut p, "k", 3, Duration::from_secs(1));
        p.start_ready("k".into(), &start("R2"));
        assert_eq!(ready(&p, "k"), 2);
        // Four a second: bounded.
        arrivals(&mut p, "k", 4, Duration::from_millis(250));
        p.start_ready("k".into(), &start("R3"));
        assert_eq!(ready(&p, "k"), MAX_READY);
        // While a turn runs, no more than one (a start competes with it
        // for the cores); once none runs, as many as wanted.
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        let (a, _) = lend(&mut p, 1, "A");
        arrivals(&mut p, "k", 4, Duration::from_millis(250));
        p.start_ready("k".into(), &start("R"));
        assert_eq!(ready(&p, "k"), 1);
        p.give_back(a, (true, false), None, None, None);
        p.start_ready("k".into(), &start("R2"));
        assert_eq!(ready(&p, "k"), MAX_READY);
        // Five seconds apart: one is enough; until the last comes half a
        // second after the one before (the stream speeds up).
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        arrivals(&mut p, "k", 3, Duration::from_secs(5));
        p.start_ready("k".into(), &start("R"));
        assert_eq!(ready(&p, "k"), 1);
        p.arrived("k", Instant::now() + Duration::from_millis(500));
        p.start_ready("k".into(), &start("R2"));
        assert_eq!(ready(&p, "k"), 3);
    }

    #[test]
    fn every_new_conversation_is_an_arrival_hit_or_miss() {
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        assert_eq!(p.reserve_ready("k"), None);
        assert_eq!(p.reserve_ready("k"), None);
        // Two in a moment: as many as a scope may have, each for a
        // conversation of its own.
        p.start_ready("k".into(), &start("R"));
        assert_eq!(ready(&p, "k"), MAX_READY);
        let sessions: std::collections::HashSet<&str> =
            p.entries.values().map(|e| e.session.as_str()).collect();
        assert_eq!(sessions.len(), MAX_READY);
        assert!(sessions.contains("R"));
    }

    #[test]
    fn a_new_conversation_takes_the_ready_cli_started_first() {
        let fake = Fake::default();
        let mut p = pool(&fake, 10, 1 << 40);
        arrivals(&mut p, "k", 3, Duration::from_millis(500));
        p.start_ready("k".into(), &start("R"));
        assert_eq!(ready(&p, "k"), 3);
        // Whichever started first has had the longest to start.
        let e = p.entries.values_mut().nth(1).unwrap();
        e.started -= Duration::from_millis(300);
        let first = e.session.clone();
        assert_eq!(p.reserve_ready("k"), Some(first));
        assert_eq!(ready(&p, "k"), 2);
    }

    #[test]
    fn arrivals_end_a_long_idle_conversations_cli_for_a_ready_one() {
        let fake = Fake::default();
        let mut p = pool(&fake, 2, 1 << 40);
        let a = served(&mut p, "A");
        let b = served(&mut p, "B");
        // No stream of new conversations: a full pool starts none.
        p.start_ready("k".into(), &start("R1"));
        assert_eq!(fake.kids().len(), 2);
        // A second apart, A and B used just now: they may be back first.
        arrivals(&mut p, "k", 3, Duration::from_secs(1));
        p.start_ready("k".into(), &start("R2"));
        assert_eq!(fake.kids().len(), 2);
        assert!(!stopping(&p, a) && !stopping(&p, b));
        // A idle 3 s, B 1.5 s: the first ready CLI is worth more than A's
        // (its conversation comes within a gap); a second, waiting two
        // gaps, not more than B's.
        p.entries.get_mut(&a).unwrap().last_used -= Duration::from_secs(3);
        p.entries.get_mut(&b).unwrap().last_used -= Duration::from_millis(1500);
        p.start_ready("k".into(), &start("R3"));
        assert!(stopping(&p, a) && fake.kid("A").killed());
        assert!(!stopping(&p, b));
        assert_eq!(ready(&p, "k"), 1);
        // A lent CLI is never ended for one, however long ago it was used.
        p.reap();
        let (lent, _) = lend(&mut p, 5, "B");
        p.entries.get_mut(&lent).unwrap().last_used -= Duration::from_secs(60);
        arrivals(&mut p, "k", 4, Duration::from_millis(250));
        p.start_ready("k".into(), &start("R4"));
        assert_eq!(state(&p, lent), Some(State::Lent(5)));
        assert!(!fake.kid("B").killed());
        assert_eq!(ready(&p, "k"), 1);
    }

    #[test]
    fn a_lent_cli_is_not_lent_twice_nor_released() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        let (id, _) = lend(&mut p, 1, "A");
        assert!(matches!(p.turn(9, &turn("A")), ForTurn::Finishing(e) if e == id));
        assert!(p.is_lent(id));
        assert_eq!(p.release("A"), Err(Miss::InUse));
        assert_eq!(p.idle(None), Vec::<u64>::new());
        assert_eq!(fake.kids().len(), 1);
        assert_eq!(state(&p, id), Some(State::Lent(1)));
        // Back from its turn, it serves the next, and may be released.
        p.give_back(id, (true, false), None, None, None);
        let (again, reply) = lend(&mut p, 2, "A");
        assert_eq!(again, id);
        assert!(matches!(
            reply,
            Reply::Lent {
                fresh: false,
                turns: 1,
                ..
            }
        ));
        p.give_back(id, (true, false), None, None, None);
        assert_eq!(p.release("A"), Ok(vec![id]));
        // Back unhealthy: it ends.
        let (b, _) = lend(&mut p, 3, "B");
        p.give_back(b, (false, false), None, None, None);
        assert!(stopping(&p, b));
    }

    #[test]
    fn a_cli_that_cannot_serve_ends_first() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        let a = served(&mut p, "A");
        let mut moved = turn("A");
        if let Request::Turn { head, .. } = &mut moved {
            *head = Some("elsewhere".into());
        }
        assert!(matches!(p.turn(1, &moved), ForTurn::EndFirst(id) if id == a));
        // Someone else wrote the session: killed, without its closing
        // records.
        assert!(fake.kid("A").killed());
        assert_eq!(p.end(vec![a], true), vec![a]);
        p.reap();
        assert!(!p.holds(a));
        assert!(matches!(p.turn(1, &moved), ForTurn::Lent { .. }));
    }

    #[test]
    fn dead_clis_are_reaped_and_idle_ones_expire() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        let a = served(&mut p, "A");
        let (b, _) = lend(&mut p, 7, "B");
        // An idle one exits on its own; a lent one dies mid-turn.
        fake.kid("A").exit(0);
        fake.kid("B").exit(3);
        let reaped = p.reap();
        assert!(!p.holds(a) && !p.holds(b) && p.is_empty());
        assert!(reaped.any);
        assert_eq!(reaped.freed, vec![7]);
        assert_eq!(reaped.ended.len(), 1);
        assert_eq!((reaped.ended[0].0, reaped.ended[0].1.code()), (7, Some(3)));
        // Idle past its TTL: ended.
        let c = served(&mut p, "C");
        p.expire();
        assert!(!stopping(&p, c));
        p.entries.get_mut(&c).unwrap().last_used -= Duration::from_secs(600);
        p.expire();
        assert!(stopping(&p, c));
        p.reap();
        assert!(p.is_empty());
    }

    #[test]
    fn a_stirring_idle_cli_ends() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        let a = served(&mut p, "A");
        p.watch_idle();
        assert!(!stopping(&p, a));
        fake.kid("A").say(b"unasked\n");
        p.watch_idle();
        assert!(stopping(&p, a));
    }

    #[test]
    fn a_cli_slow_to_finish_is_hurried() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        let a = served(&mut p, "A");
        let kid = fake.kid("A");
        kid.stubborn();
        p.end(vec![a], true);
        let since = |p: &mut Pool, secs: u64| {
            p.entries.get_mut(&a).unwrap().state = State::Stopping {
                since: Instant::now() - Duration::from_secs(secs),
            };
        };
        p.reap();
        assert!(!kid.terminated() && !kid.killed());
        since(&mut p, 2);
        p.reap();
        assert!(kid.terminated() && !kid.killed());
        since(&mut p, 5);
        p.reap();
        assert!(kid.killed());
        p.reap();
        assert!(p.is_empty());
    }

    #[test]
    fn a_failed_start_is_a_miss() {
        let fake = Fake::default();
        let mut p = pool(&fake, 4, 1 << 40);
        fake.fail_next();
        assert!(matches!(miss(&mut p, "A"), Miss::SpawnFailed(_)));
        assert!(p.is_empty());
        let mut no_start = turn("A");
        if let Request::Turn { start, .. } = &mut no_start {
            *start = None;
        }
        assert!(matches!(
            p.turn(1, &no_start),
            ForTurn::Miss(Miss::NoLiveProcess)
        ));
        p.drain();
        assert_eq!(miss(&mut p, "A"), Miss::Draining);
    }
}
