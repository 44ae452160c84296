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

mod entry;
mod pool;

use super::protocol::{self, Live, LiveState, Reply, Request, Start, Status};
use super::socket::{same_user, SOCKET};
use crate::data_dir::DataDir;
use crate::store::pins::Lease;
use crate::store::Store;
use anyhow::{Context, Result};
use entry::*;
pub use entry::{default_memory, DEFAULT_MAX};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

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

impl Config {
    /// The keeper's settings, from the environment it was started with.
    pub fn from_env(dir: &DataDir) -> Config {
        let ttl = crate::env::warm_ttl();
        Config {
            dir: dir.clone(),
            max: crate::env::warm_max().unwrap_or(DEFAULT_MAX),
            memory: crate::env::warm_memory().unwrap_or_else(default_memory),
            ttl,
            linger: ttl.min(Duration::from_secs(60)),
            build: protocol::build_id(),
        }
    }
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

/// Tell the shim that started us that we listen: a byte on the pipe it
/// passed (`CLAUDE_SHIM_KEEPER_READY` names its descriptor), then closed.
fn say_ready() {
    let Some(fd) = crate::env::keeper_ready() else {
        return;
    };
    std::env::remove_var(crate::env::KEEPER_READY);
    // SAFETY: the descriptor was handed to us for this, and is ours alone.
    let pipe = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let _ = nix::unistd::write(&pipe, b"1");
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
    say_ready();
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
}
