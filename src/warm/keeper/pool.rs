//! The keeper's pool: lending a conversation's live CLI (or starting one),
//! CLIs started ready for new conversations, room by the count and memory
//! bounds (least recently used first), idle ones watched, ended ones reaped,
//! and the keeper drained.

use super::*;

impl Keeper {
    /// End `ids`, then answer `then` (a `Status` answers `Ok`).
    pub(super) fn stop_then(&mut self, conn: u64, ids: Vec<u64>, then: Request, graceful: bool) {
        for e in &ids {
            if let Some(entry) = self.entries.get_mut(e) {
                if graceful {
                    stop(entry);
                }
            }
        }
        if !graceful {
            for e in &ids {
                self.stop_leased(*e);
            }
        }
        let pending: Vec<u64> = ids
            .into_iter()
            .filter(|e| self.entries.contains_key(e))
            .collect();
        if pending.is_empty() {
            self.answer(conn, then);
        } else if let Some(c) = self.conns.get_mut(&conn) {
            c.waiting = Some((pending, then));
        }
    }

    pub(super) fn answer(&mut self, conn: u64, then: Request) {
        match then {
            Request::Status => self.reply(conn, &Reply::Ok, &[]),
            other => self.handle(conn, other),
        }
    }

    pub(super) fn turn(&mut self, conn: u64, req: Request) {
        let Request::Turn {
            session,
            head,
            key,
            file_size,
            start,
            ready,
        } = req.clone()
        else {
            return;
        };
        if let (Some(c), Some(r)) = (self.conns.get_mut(&conn), ready) {
            c.ready = Some((key.clone(), *r));
        }
        if self.draining {
            let why = "the keeper is draining (a new shim build or a stop)".into();
            return self.reply(conn, &Reply::Miss { why }, &[]);
        }
        let found = self
            .entries
            .iter()
            .find(|(_, e)| e.session == session && !matches!(e.state, State::Stopping { .. }))
            .map(|(k, e)| (*k, e.state));
        match found {
            Some((_, State::Lent(_))) => {
                let why = "another turn of this conversation runs in its live process".into();
                return self.reply(conn, &Reply::Miss { why }, &[]);
            }
            Some((e, State::Idle)) => {
                let entry = &self.entries[&e];
                if entry.key == key && entry.head == head && grown(entry.file_size, file_size) {
                    // A CLI started ready has not had a turn: it is new.
                    let fresh = entry.turns == 0;
                    return self.lend(conn, e, fresh);
                }
                crate::debug!(
                    "keeper: {} cannot serve (key {}, head {}, file {})",
                    session,
                    if entry.key == key { "same" } else { "changed" },
                    if entry.head == head { "same" } else { "moved" },
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
                if entry.head != head || !grown(entry.file_size, file_size) {
                    let _ = nix::sys::signal::kill(pid(entry), nix::sys::signal::Signal::SIGKILL);
                }
                return self.stop_then(conn, vec![e], req, true);
            }
            _ => {}
        }
        let Some(start) = start else {
            let why = "no live process for this conversation".into();
            return self.reply(conn, &Reply::Miss { why }, &[]);
        };
        if let Some(why) = self.make_room() {
            return self.reply(conn, &Reply::Miss { why }, &[]);
        }
        match spawn(&start) {
            Ok(mut entry) => {
                entry.session = session;
                entry.key = key;
                let id = self.id();
                self.entries.insert(id, entry);
                self.lend(conn, id, true);
            }
            Err(e) => {
                let why = format!("starting the CLI failed: {e}");
                self.reply(conn, &Reply::Miss { why }, &[]);
            }
        }
    }

    /// Reserve the CLI ready for `key`, if one is (and young enough): its
    /// session id. Ready CLIs of the same directory started under another
    /// key (the environment, flags or files changed) can serve no one: ended.
    pub(super) fn reserve_ready(&mut self, key: &str) -> Option<String> {
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
        let found = self.entries.iter_mut().find(|(_, e)| {
            e.ready && e.key == key && e.state == State::Idle && e.started.elapsed() < READY_FOR
        });
        let Some((_, e)) = found else {
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
    pub(super) fn start_ready(&mut self, key: String, start: &Start) {
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
        let pool = self.pool();
        if pool.count >= self.cfg.max
            || pool.rss + TYPICAL_RSS > self.cfg.memory
            || available_memory().is_some_and(|free| free < TYPICAL_RSS + RESERVE)
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
        match spawn(start) {
            Ok(mut entry) => {
                crate::debug!("keeper: a CLI ready for the next conversation ({session})");
                entry.session = session;
                entry.key = key;
                entry.ready = true;
                let id = self.id();
                self.entries.insert(id, entry);
            }
            Err(e) => crate::debug!("keeper: starting a ready CLI failed: {e}"),
        }
    }

    /// Room for one more live process: within the count, the memory budget
    /// and what the machine has free, ending idle ones (least recently used
    /// first) as needed. `Some(why)`: no room (the turn runs cold).
    pub(super) fn make_room(&mut self) -> Option<String> {
        loop {
            let pool = self.pool();
            let why = if pool.count >= self.cfg.max {
                format!("{} live processes (at most {})", pool.count, self.cfg.max)
            } else if pool.rss + TYPICAL_RSS > self.cfg.memory {
                format!(
                    "the live processes hold {} MiB (at most {} MiB)",
                    pool.rss >> 20,
                    self.cfg.memory >> 20
                )
            } else if available_memory().is_some_and(|free| free < TYPICAL_RSS + RESERVE) {
                "the machine is short of free memory".to_string()
            } else {
                return None;
            };
            match self.least_recently_used() {
                Some(old) => self.stop_leased(old),
                None => return Some(format!("no room: {why}, all busy")),
            }
        }
    }

    /// Idle processes past the memory budget or the machine's free memory
    /// (they grow as their sessions do): the least recently used end.
    pub(super) fn trim(&mut self) {
        let pool = self.pool();
        let short = available_memory().is_some_and(|free| free < RESERVE);
        if pool.rss > self.cfg.memory || (short && pool.count > 0) {
            if let Some(old) = self.least_recently_used() {
                crate::debug!(
                    "keeper: {} MiB held, ending the least recently used",
                    pool.rss >> 20
                );
                self.stop_leased(old);
            }
        }
    }

    pub(super) fn least_recently_used(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|(_, e)| e.state == State::Idle)
            .min_by_key(|(_, e)| (!e.ready, e.last_used))
            .map(|(k, _)| *k)
    }

    /// The live processes (not those ending) and their resident memory.
    pub(super) fn pool(&self) -> Pool {
        let live: Vec<&Entry> = self
            .entries
            .values()
            .filter(|e| !matches!(e.state, State::Stopping { .. }))
            .collect();
        Pool {
            count: live.len(),
            rss: live
                .iter()
                .map(|e| rss(e.child.id()).unwrap_or(TYPICAL_RSS))
                .sum(),
        }
    }

    pub(super) fn lend(&mut self, conn: u64, e: u64, fresh: bool) {
        let Some(entry) = self.entries.get_mut(&e) else {
            return;
        };
        let Some(stdin) = entry.stdin.as_ref() else {
            return self.reply(
                conn,
                &Reply::Miss {
                    why: "ending".into(),
                },
                &[],
            );
        };
        entry.state = State::Lent(conn);
        entry.lent_at =
            session_file(entry).and_then(|f| std::fs::metadata(f).ok().map(|m| m.len()));
        let fds = [
            stdin.as_raw_fd(),
            entry.stdout.as_raw_fd(),
            entry.stderr.as_raw_fd(),
        ];
        let reply = Reply::Lent {
            pid: entry.child.id() as i32,
            fresh,
            turns: entry.turns,
            began_fresh: entry.began_fresh,
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.lent = Some(e);
        }
        self.reply(conn, &reply, &fds);
    }

    /// Any output or end of an idle process: it is not in a state to serve.
    pub(super) fn watch_idle(&mut self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state == State::Idle)
            .map(|(k, _)| *k)
            .collect();
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
                let e = &mut self.entries.get_mut(&id).expect("listed above");
                let mut peek = [0u8; 512];
                let n = nix::unistd::read(fd, &mut peek).unwrap_or(0);
                crate::debug!(
                    "keeper: idle {} stirred ({}); ending it",
                    e.session,
                    String::from_utf8_lossy(&peek[..n])
                );
                self.stop_leased(id);
            }
        }
    }

    /// End an entry without a turn holding its session: under the lease
    /// (the CLI's closing records must not meet another writer); a process
    /// whose session moved on is killed without them.
    pub(super) fn stop_leased(&mut self, id: u64) {
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
                    crate::platform::alive,
                )
                .unwrap_or(Lease::NotHead),
            None => Lease::NotHead,
        };
        match lease {
            Lease::Taken => {
                entry.leased = true;
                stop(entry);
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
                let _ = nix::sys::signal::kill(pid(entry), nix::sys::signal::Signal::SIGKILL);
                stop(entry);
            }
        }
    }

    pub(super) fn reap(&mut self) {
        let mut gone = Vec::new();
        let mut endings = Vec::new();
        for (id, e) in self.entries.iter_mut() {
            match e.child.try_wait() {
                Ok(Some(status)) => {
                    if let State::Lent(conn) = e.state {
                        endings.push((conn, status));
                    }
                    gone.push(*id);
                }
                Err(_) => gone.push(*id),
                Ok(None) => {
                    if let State::Stopping { since } = e.state {
                        let waited = since.elapsed();
                        // Within the time a next turn waits for a draining
                        // lease (turn::lookup's DRAIN_WAIT).
                        if waited > Duration::from_secs(4) {
                            let _ = e.child.kill();
                        } else if waited > Duration::from_millis(1500) {
                            let _ =
                                nix::sys::signal::kill(pid(e), nix::sys::signal::Signal::SIGTERM);
                        }
                    }
                }
            }
        }
        for (conn, status) in endings {
            let wants = self.conns.get_mut(&conn).map(|c| {
                c.ended = Some(status);
                std::mem::take(&mut c.wants_end)
            });
            if wants == Some(true) {
                self.reply(conn, &ended(status), &[]);
            }
        }
        for id in gone {
            if let Some(e) = self.entries.remove(&id) {
                if e.leased {
                    if let Some(store) = &self.store {
                        let _ = store.release_lease(&e.session, std::process::id() as i32);
                    }
                }
                if let State::Lent(conn) = e.state {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.lent = None;
                    }
                }
            }
            self.last_activity = Instant::now();
        }
        // Requests that waited for exits.
        let ready: Vec<(u64, Request)> = self
            .conns
            .iter_mut()
            .filter_map(|(id, c)| {
                let (ids, _) = c.waiting.as_ref()?;
                if ids.iter().any(|e| self.entries.contains_key(e)) {
                    return None;
                }
                c.waiting.take().map(|(_, r)| (*id, r))
            })
            .collect();
        for (conn, then) in ready {
            self.answer(conn, then);
            self.read_conn(conn);
        }
    }

    pub(super) fn expire(&mut self) {
        self.store_pool.expire();
        let ttl = self.cfg.ttl;
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
            self.stop_leased(id);
        }
    }

    pub(super) fn drain(&mut self) {
        self.draining = true;
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state == State::Idle)
            .map(|(k, _)| *k)
            .collect();
        for id in ids {
            self.stop_leased(id);
        }
    }

    pub(super) fn status(&self) -> Status {
        Status {
            pid: std::process::id(),
            build: self.cfg.build.clone(),
            max: self.cfg.max,
            memory: self.cfg.memory,
            ttl_secs: self.cfg.ttl.as_secs(),
            live: self
                .entries
                .values()
                .map(|e| Live {
                    session: e.session.clone(),
                    pid: e.child.id() as i32,
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
                    rss_bytes: rss(e.child.id()),
                })
                .collect(),
        }
    }
}
