//! The keeper: a small per-user background process (`claude-shim keeper`,
//! started on demand by a shim) that owns the live Claude Code processes of
//! warm turns. One per data dir (a lock file), listening on `keeper.sock`
//! there. It lends a process to one turn at a time (passing its pipes), takes
//! it back idle, watches idle ones (any output or exit: discarded), ends those
//! idle past their TTL or pushed out by the pool bound (least recently used
//! first), and exits once it holds nothing.
//!
//! Nothing outlives it: live processes read their input from the keeper, so
//! should it be killed their stdin closes and they end (a lent one after its
//! turn: the shim still holds its stdin). It ends a process by closing its
//! stdin, which lets the CLI write its closing records; never while another
//! turn holds the session's lease.

use super::protocol::{self, Live, Reply, Request, Start, Status};
use crate::data_dir::DataDir;
use crate::store::pins::Lease;
use crate::store::Store;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub const SOCKET: &str = "keeper.sock";
const LOCK: &str = "keeper.lock";

#[derive(Debug, Clone)]
pub struct Config {
    pub dir: DataDir,
    pub max: usize,
    /// The most resident memory the live processes may hold together.
    pub memory: u64,
    pub ttl: Duration,
    /// How long the keeper stays with nothing to hold.
    pub linger: Duration,
    pub build: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Lent(u64),
    /// Its stdin is closed; it is finishing. `graceful`: we may wait for it.
    Stopping {
        since: Instant,
    },
}

struct Entry {
    session: String,
    head: Option<String>,
    key: String,
    file_size: Option<u64>,
    cwd: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    stderr: ChildStderr,
    state: State,
    started: Instant,
    last_used: Instant,
    turns: u32,
    /// The keeper holds the session's lease while ending it.
    leased: bool,
    /// To be ended as soon as no turn holds the session.
    want_stop: bool,
    /// It started its session anew (`--session-id`), not by resuming it.
    began_fresh: bool,
    /// Started ahead of a new conversation (no message yet, no session
    /// file), not yet reserved by a turn.
    ready: bool,
    /// The Claude config dir it writes its session in (from its start's
    /// environment).
    config_dir: Option<PathBuf>,
    /// While lent: the session file's length when the turn began (`None`:
    /// no file yet), to take the turn back should its caller die mid-turn.
    lent_at: Option<u64>,
}

/// How long a ready CLI waits for a new conversation. It took its snapshot
/// of the directory (git status, CLAUDE.md, …) when it started, as a cold
/// start does at the turn: a minute keeps that snapshot about as fresh as
/// the one a live CLI's second turn works from, and ends a CLI nobody came
/// for before it costs much.
pub const READY_FOR: Duration = Duration::from_secs(60);

struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    /// The entry lent to this connection.
    lent: Option<u64>,
    /// A request waiting for these entries to exit first.
    waiting: Option<(Vec<u64>, Request)>,
    closed: bool,
    /// How the process lent to it ended, once it has.
    ended: Option<std::process::ExitStatus>,
    /// It asked how its process ended, before it had.
    wants_end: bool,
    /// A CLI to start ready for the scope of its turn, once that is done.
    ready: Option<(String, Start)>,
}

pub struct Keeper {
    cfg: Config,
    entries: HashMap<u64, Entry>,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    last_activity: Instant,
    draining: bool,
    store: Option<Store>,
    /// Store connections readied for the next turns.
    store_pool: super::store_pool::StorePool,
}

static TERMINATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_term(_: nix::libc::c_int) {
    TERMINATED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Run the keeper until it holds nothing (or is told to stop). Returns at
/// once when another keeper already serves `dir`.
pub fn serve(cfg: Config) -> Result<()> {
    // Its socket and lock are private whatever umask started it.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(cfg.dir.join(LOCK))
        .context("opening the keeper's lock")?;
    let _lock = match nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err(_) => return Ok(()),
    };
    // Not in the caller's directory, which it would keep busy: in its own
    // (where `warm stop` finds it, even once the data dir is deleted).
    let _ = std::env::set_current_dir(cfg.dir.path());
    let path = cfg.dir.join(SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).context("binding the keeper's socket")?;
    listener.set_nonblocking(true)?;
    let ours = socket_identity(&path);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        let action = nix::sys::signal::SigAction::new(
            nix::sys::signal::SigHandler::Handler(on_term),
            nix::sys::signal::SaFlags::empty(),
            nix::sys::signal::SigSet::empty(),
        );
        let _ = nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGTERM, &action);
        let _ = nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGINT, &action);
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGHUP,
            nix::sys::signal::SigHandler::SigIgn,
        );
    }
    let mut k = Keeper {
        // The store the turns use (a fleet's leases and heads are shared).
        store: Store::open_configured(
            &cfg.dir,
            crate::store::postgres::Patience::Each(Duration::from_secs(2)),
        )
        .ok(),
        cfg,
        entries: HashMap::new(),
        conns: HashMap::new(),
        next_id: 1,
        last_activity: Instant::now(),
        draining: false,
        store_pool: Default::default(),
    };
    // A shared store: the turn that started us connected itself; the next
    // finds a connection ready.
    if let Ok(crate::store::backend::Location::Postgres(url)) =
        crate::store::backend::Location::configured(&k.cfg.dir)
    {
        if crate::env::store_ready() {
            k.store_pool.refill(&url);
        }
    }
    loop {
        // Told to stop, or orphaned: our socket was removed or replaced (the
        // data dir deleted, another keeper after a lock mix-up) so no shim
        // can reach us again.
        let orphaned = || socket_identity(&path) != ours;
        if !k.draining && (TERMINATED.load(std::sync::atomic::Ordering::SeqCst) || orphaned()) {
            k.drain();
        }
        k.tick(&listener)?;
        let idle = k.entries.is_empty() && k.conns.is_empty();
        if idle && (k.draining || k.last_activity.elapsed() >= k.cfg.linger) {
            break;
        }
    }
    if socket_identity(&path) == ours {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
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

/// Device and inode of the socket file, to tell ours from a replacement.
fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl Keeper {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn tick(&mut self, listener: &UnixListener) -> Result<()> {
        self.poll(listener);
        self.accept(listener);
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            self.read_conn(id);
        }
        self.watch_idle();
        self.reap();
        self.expire();
        self.trim();
        self.conns.retain(|_, c| !c.closed);
        Ok(())
    }

    /// Wait for something to do: a connection, a request, an idle process
    /// stirring, or the next timer tick.
    fn poll(&self, listener: &UnixListener) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        for c in self.conns.values() {
            fds.push(PollFd::new(c.stream.as_fd(), PollFlags::POLLIN));
        }
        for e in self.entries.values().filter(|e| e.state == State::Idle) {
            fds.push(PollFd::new(e.stdout.as_fd(), PollFlags::POLLIN));
            fds.push(PollFd::new(e.stderr.as_fd(), PollFlags::POLLIN));
        }
        let _ = poll(&mut fds, PollTimeout::from(200u16));
    }

    fn accept(&mut self, listener: &UnixListener) {
        while let Ok((stream, _)) = listener.accept() {
            // The kernel says who connected: only our own user is lent a
            // live CLI (its pipes carry the turns, API keys included).
            if !same_user(&stream) {
                crate::error!("keeper: refused a connection from another user");
                continue;
            }
            let _ = stream.set_nonblocking(true);
            let id = self.id();
            self.conns.insert(
                id,
                Conn {
                    stream,
                    buf: Vec::new(),
                    lent: None,
                    waiting: None,
                    closed: false,
                    ended: None,
                    wants_end: false,
                    ready: None,
                },
            );
            self.last_activity = Instant::now();
        }
    }

    fn read_conn(&mut self, id: u64) {
        let mut chunk = [0u8; 16 << 10];
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            match (&c.stream).read(&mut chunk) {
                Ok(0) => {
                    self.hang_up(id);
                    return;
                }
                Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.hang_up(id);
                    return;
                }
            }
        }
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            if c.waiting.is_some() {
                return;
            }
            let Some(nl) = memchr::memchr(b'\n', &c.buf) else {
                return;
            };
            let line: Vec<u8> = c.buf.drain(..=nl).collect();
            self.last_activity = Instant::now();
            match serde_json::from_slice::<Request>(&line) {
                Ok(req) => self.handle(id, req),
                Err(_) => self.reply(
                    id,
                    &Reply::Miss {
                        why: "bad request".into(),
                    },
                    &[],
                ),
            }
        }
    }

    /// The connection closed: a process still lent to it was abandoned
    /// mid-turn (its caller died, as a proxy's timeout kills it). Without
    /// the shim the CLI would have died with it: it is killed at once (no
    /// request more is made, nothing more billed), and what it wrote of the
    /// turn is taken back from the session, so a retry or another message
    /// meets the session as it was before.
    fn hang_up(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.closed = true;
        let Some(entry) = c.lent.take().and_then(|e| self.entries.get_mut(&e)) else {
            return;
        };
        let _ = entry.child.kill();
        stop(entry);
        // SIGKILL is not refused: the wait is short (bounded all the same).
        let deadline = Instant::now() + Duration::from_secs(2);
        while matches!(entry.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if matches!(entry.child.try_wait(), Ok(Some(_))) {
            undo_turn(entry);
        }
    }

    fn reply(&mut self, id: u64, reply: &Reply, fds: &[i32]) {
        if let Some(c) = self.conns.get_mut(&id) {
            let _ = c.stream.set_nonblocking(false);
            if protocol::send(&c.stream, reply, fds).is_err() {
                c.closed = true;
            }
            let _ = c.stream.set_nonblocking(true);
        }
    }

    fn handle(&mut self, id: u64, req: Request) {
        match req {
            Request::Hello { build } => {
                if build != self.cfg.build {
                    // Another build of the shim: its processes would be
                    // judged by other rules. Drain, and let it start anew.
                    self.drain();
                }
                let reply = Reply::Hello {
                    build: self.cfg.build.clone(),
                    pid: std::process::id(),
                };
                self.reply(id, &reply, &[]);
            }
            Request::Turn { .. } => self.turn(id, req),
            Request::Store { build, .. } if build != self.cfg.build => {
                self.drain();
                let why = "the keeper is another build".into();
                self.reply(id, &Reply::Miss { why }, &[]);
            }
            Request::Store { url, .. } => match self.store_pool.take(&url) {
                Some(ready) => {
                    let reply = Reply::Store {
                        answer: hex::encode(&ready.answer),
                        unix: ready.unix,
                    };
                    // Ours is closed once sent: the connection is the turn's.
                    self.reply(id, &reply, &[ready.socket.as_raw_fd()]);
                }
                None => self.reply(
                    id,
                    &Reply::Miss {
                        why: "no store connection ready yet".into(),
                    },
                    &[],
                ),
            },
            Request::Ready { key } => {
                let reply = match self.reserve_ready(&key) {
                    Some(session) => Reply::Ready { session },
                    None => Reply::Miss {
                        why: "no CLI ready for this scope".into(),
                    },
                };
                self.reply(id, &reply, &[]);
            }
            Request::Ended => {
                let Some(c) = self.conns.get_mut(&id) else {
                    return;
                };
                match (c.ended, c.lent) {
                    (Some(status), _) => self.reply(id, &ended(status), &[]),
                    (None, Some(_)) => c.wants_end = true,
                    (None, None) => {
                        let unknown = Reply::Ended {
                            code: None,
                            signal: None,
                        };
                        self.reply(id, &unknown, &[]);
                    }
                }
            }
            Request::Done {
                healthy,
                head,
                file_size,
                key,
            } => {
                let done_key = key.clone();
                let lent = self.conns.get_mut(&id).and_then(|c| c.lent.take());
                let ready = self.conns.get_mut(&id).and_then(|c| c.ready.take());
                if let Some(entry) = lent.and_then(|e| self.entries.get_mut(&e)) {
                    if healthy && !self.draining {
                        entry.state = State::Idle;
                        entry.head = head;
                        entry.file_size = file_size;
                        if let Some(key) = key {
                            entry.key = key;
                        }
                        entry.turns += 1;
                        entry.last_used = Instant::now();
                    } else {
                        stop(entry);
                    }
                }
                self.reply(id, &Reply::Ok, &[]);
                // It starts from the files as they are now (the turn's own
                // first start may have written some): the key sent with Done.
                if let Some((key, start)) = ready {
                    self.start_ready(done_key.unwrap_or(key), &start);
                }
            }
            Request::Release { ref session } => {
                let idle: Vec<u64> = self
                    .entries
                    .iter()
                    .filter(|(_, e)| &e.session == session && e.state == State::Idle)
                    .map(|(k, _)| *k)
                    .collect();
                let busy = self
                    .entries
                    .values()
                    .any(|e| &e.session == session && matches!(e.state, State::Lent(_)));
                if busy {
                    let why = "a turn of this session runs in its live process".into();
                    return self.reply(id, &Reply::Miss { why }, &[]);
                }
                // The asker holds the session's lease: end it gracefully.
                self.stop_then(id, idle, Request::Status, true);
            }
            Request::Status => {
                let status = self.status();
                self.reply(id, &Reply::Status(status), &[]);
            }
            Request::Stop { ref session } => {
                let ids: Vec<u64> = self
                    .entries
                    .iter()
                    .filter(|(_, e)| session.as_ref().is_none_or(|s| &e.session == s))
                    .filter(|(_, e)| e.state == State::Idle)
                    .map(|(k, _)| *k)
                    .collect();
                if session.is_none() {
                    self.draining = true;
                }
                self.stop_then(id, ids, Request::Status, false);
            }
        }
    }

    /// End `ids`, then answer `then` (a `Status` answers `Ok`).
    fn stop_then(&mut self, conn: u64, ids: Vec<u64>, then: Request, graceful: bool) {
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

    fn answer(&mut self, conn: u64, then: Request) {
        match then {
            Request::Status => self.reply(conn, &Reply::Ok, &[]),
            other => self.handle(conn, other),
        }
    }

    fn turn(&mut self, conn: u64, req: Request) {
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
    fn reserve_ready(&mut self, key: &str) -> Option<String> {
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
    fn start_ready(&mut self, key: String, start: &Start) {
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
    fn make_room(&mut self) -> Option<String> {
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
    fn trim(&mut self) {
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

    fn least_recently_used(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|(_, e)| e.state == State::Idle)
            .min_by_key(|(_, e)| (!e.ready, e.last_used))
            .map(|(k, _)| *k)
    }

    /// The live processes (not those ending) and their resident memory.
    fn pool(&self) -> Pool {
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

    fn lend(&mut self, conn: u64, e: u64, fresh: bool) {
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
    fn watch_idle(&mut self) {
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
    fn stop_leased(&mut self, id: u64) {
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

    fn reap(&mut self) {
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

    fn expire(&mut self) {
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

    fn drain(&mut self) {
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

    fn status(&self) -> Status {
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
                        State::Idle if e.ready => "ready",
                        State::Idle => "idle",
                        State::Lent(_) => "busy",
                        State::Stopping { .. } => "stopping",
                    }
                    .into(),
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

fn ended(status: std::process::ExitStatus) -> Reply {
    use std::os::unix::process::ExitStatusExt;
    Reply::Ended {
        code: status.code(),
        signal: status.signal(),
    }
}

fn pid(e: &Entry) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(e.child.id() as i32)
}

/// The session file of `e`, once there is one.
fn session_file(e: &Entry) -> Option<PathBuf> {
    crate::sessions::find(e.config_dir.as_deref()?, &e.session)
}

/// Take back what `e`, killed mid-turn, wrote of its turn (see `hang_up`).
fn undo_turn(e: &Entry) {
    let Some(file) = session_file(e) else {
        return;
    };
    // A turn the session holds whole stays: its caller may have had the
    // result (a streaming caller kills at the end of the reply), and the
    // next turn's lookup tells whether it continues from it.
    if crate::sessions::turn_finished_since(&file, e.lent_at).unwrap_or(true) {
        return;
    }
    match crate::sessions::undo_turn(&file, e.lent_at) {
        Ok(true) => crate::debug!("keeper: took back the abandoned turn of {}", e.session),
        Ok(false) => {}
        Err(why) => crate::error!(
            "keeper: taking back the abandoned turn of {}: {why}",
            e.session
        ),
    }
}

/// Close its stdin: the CLI finishes (writing its closing records) and exits.
fn stop(e: &mut Entry) {
    drop(e.stdin.take());
    if !matches!(e.state, State::Stopping { .. }) {
        e.state = State::Stopping {
            since: Instant::now(),
        };
    }
}

fn spawn(start: &Start) -> std::io::Result<Entry> {
    let mut cmd = Command::new(&start.program);
    cmd.args(&start.args)
        .env_clear()
        .envs(start.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&start.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The caller's umask, limits and niceness; none of our descriptors.
    crate::runner::detached::confine(
        &mut cmd,
        crate::runner::detached::Role::Cli(start.settings.clone()),
    );
    let mut child = cmd.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        return Err(std::io::Error::other("no pipes"));
    };
    let now = Instant::now();
    Ok(Entry {
        session: String::new(),
        head: None,
        key: String::new(),
        file_size: None,
        cwd: start.cwd.clone(),
        child,
        stdin: Some(stdin),
        stdout,
        stderr,
        state: State::Idle,
        started: now,
        last_used: now,
        turns: 0,
        leased: false,
        want_stop: false,
        began_fresh: !start.args.iter().any(|a| a == "--resume"),
        ready: false,
        config_dir: config_dir_of(&start.env),
        lent_at: None,
    })
}

/// The Claude config dir of a CLI started with `env` (as `env::claude_config_dir`
/// reads it from our own).
fn config_dir_of(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    match var("CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => var("HOME").map(|h| PathBuf::from(h).join(".claude")),
    }
}

/// Resident memory of a process (Linux; elsewhere unknown).
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What a live CLI holds (measured on 2.1.330: ~215 MiB after ten turns).
const TYPICAL_RSS: u64 = 256 << 20;
/// Free memory left to the machine: below it no live process is started,
/// and idle ones end.
const RESERVE: u64 = 1 << 30;

/// The default bound on live processes (`CLAUDE_SHIM_WARM_MAX`): a few
/// conversations warm at once, as one person or one small server has.
pub const DEFAULT_MAX: usize = 4;

/// The default memory budget (`CLAUDE_SHIM_WARM_MEMORY`): an eighth of the
/// machine's memory, at most 1 GiB (four live CLIs).
pub fn default_memory() -> u64 {
    let budget = meminfo("MemTotal:").map_or(1 << 30, |total| total / 8);
    budget.min(1 << 30)
}

struct Pool {
    count: usize,
    rss: u64,
}

/// Memory the machine can still give (Linux; elsewhere unknown).
fn available_memory() -> Option<u64> {
    meminfo("MemAvailable:")
}

fn meminfo(key: &str) -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with(key))?.to_owned();
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Where the keeper of `dir` listens.
pub fn socket(dir: &DataDir) -> PathBuf {
    dir.join(SOCKET)
}

/// Whether the process at the other end of `stream` runs as our user
/// (`SO_PEERCRED`: the kernel's word, not the socket file's).
pub fn same_user(stream: &UnixStream) -> bool {
    peer_uid(stream) == Some(nix::unistd::geteuid().as_raw())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|c| c.uid())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    // macOS and the BSDs: getpeereid(2).
    nix::unistd::getpeereid(stream)
        .ok()
        .map(|(uid, _)| uid.as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_says_the_peer_is_our_user() {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(same_user(&a) && same_user(&b));
        assert_eq!(peer_uid(&a), Some(nix::unistd::geteuid().as_raw()));
    }
}
