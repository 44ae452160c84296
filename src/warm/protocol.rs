//! Between a shim and the keeper: one JSON line each way per message, over
//! the keeper's Unix socket (in the private data dir). A lent live process's
//! stdin, stdout and stderr travel with the `lent` reply (SCM_RIGHTS), so the
//! shim talks to the CLI directly and the keeper never relays a byte.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// This shim build: a keeper of another build drains (its rules may differ).
pub fn build_id() -> String {
    use std::os::unix::fs::MetadataExt;
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok());
    match exe {
        Some(m) => format!(
            "{}-{}-{}.{}",
            env!("CARGO_PKG_VERSION"),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ),
        None => env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// How a new live process is started (the keeper is its parent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
    /// The caller's umask, limits and niceness, which the process gets.
    pub settings: crate::runner::detached::Settings,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    /// First message of a connection: which shim build asks. A keeper of
    /// another build drains and exits.
    Hello {
        build: String,
    },
    /// A turn of `session` at `head`: lend its live process if `key` (what
    /// the process took in at start) still holds and the session file is
    /// `file_size` long; else, with `start`, a new process for this turn.
    Turn {
        session: String,
        head: Option<String>,
        key: String,
        file_size: Option<u64>,
        start: Option<Box<Start>>,
        /// How to start a CLI ready for this scope's next new conversation
        /// (its own `--session-id`), once this turn is done.
        #[serde(default)]
        ready: Option<Box<Start>>,
    },
    /// A new conversation's first turn with `key`: the session id of a CLI
    /// started ready for it, now reserved for the asker.
    Ready {
        key: String,
    },
    /// The lent process finished its turn (`healthy`: and may serve the next).
    Done {
        healthy: bool,
        head: Option<String>,
        file_size: Option<u64>,
        /// What the process has taken in now (its own first start writes
        /// some of the files a start reads).
        key: Option<String>,
        /// End it at once (SIGKILL), not by closing its input: its turn left
        /// work in the background, which would call the model when it ends.
        #[serde(default)]
        at_once: bool,
    },
    /// The lent process ended mid-turn: how (the reply waits for its exit).
    Ended,
    /// End the live process of `session`, if any, before a cold run writes to
    /// the session; the reply comes once it has exited.
    Release {
        session: String,
    },
    /// A store connection readied for `url` (see
    /// `store::postgres::handoff`); the keeper readies the next one.
    Store {
        url: String,
        /// The asker's build (it skips the hello): a keeper of another
        /// build answers with a miss, and drains.
        build: String,
    },
    Status,
    /// End live processes: one session's, or all (and the keeper).
    Stop {
        session: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    Hello {
        build: String,
        pid: u32,
    },
    /// The process's stdin, stdout and stderr come with this line.
    /// `began_fresh`: it started its session anew (not by resuming it).
    Lent {
        pid: i32,
        fresh: bool,
        turns: u32,
        began_fresh: bool,
    },
    Miss {
        why: Miss,
    },
    /// A ready CLI's session id, reserved for the asker's turn.
    Ready {
        session: String,
    },
    /// The readied connection's socket comes with this line; `answer`
    /// (hex): the server's start-up answer.
    Store {
        answer: String,
        unix: bool,
    },
    Ok,
    /// How a lent process ended: an exit code, or the signal that killed it.
    Ended {
        code: Option<i32>,
        signal: Option<i32>,
    },
    Status(Status),
}

/// Why the keeper lends no live CLI (or readied connection): the turn runs
/// cold. Shown as it always read, in the debug log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "kebab-case")]
pub enum Miss {
    #[error("bad request")]
    BadRequest,
    /// The asker is another shim build (the keeper drains).
    #[error("the keeper is another build")]
    OtherBuild,
    #[error("the keeper is draining (a new shim build or a stop)")]
    Draining,
    /// A turn asked for a live CLI that is lent to another turn.
    #[error("another turn of this conversation runs in its live process")]
    Busy,
    /// A release asked to end a live CLI that is lent to a turn.
    #[error("a turn of this session runs in its live process")]
    InUse,
    /// The conversation has none, and the turn sent no way to start one.
    #[error("no live process for this conversation")]
    NoLiveProcess,
    /// None can start without going past a bound, and none is idle to end.
    #[error("no room: {0}, all busy")]
    NoRoom(Room),
    #[error("starting the CLI failed: {0}")]
    SpawnFailed(String),
    /// Its stdin is closed: it is finishing.
    #[error("ending")]
    Ending,
    #[error("no CLI ready for this scope")]
    NoReadyCli,
    #[error("no store connection ready yet")]
    NoStoreConnection,
}

impl Miss {
    /// A code for the metrics' `reason` label (no figures in it).
    pub fn code(&self) -> &'static str {
        match self {
            Miss::BadRequest => "bad-request",
            Miss::OtherBuild => "other-build",
            Miss::Draining => "draining",
            Miss::Busy => "busy",
            Miss::InUse => "in-use",
            Miss::NoLiveProcess => "no-live-process",
            Miss::NoRoom(Room::Count { .. }) => "no-room-count",
            Miss::NoRoom(Room::Memory { .. }) => "no-room-memory",
            Miss::NoRoom(Room::MachineShort) => "no-room-machine",
            Miss::SpawnFailed(_) => "spawn-failed",
            Miss::Ending => "ending",
            Miss::NoReadyCli => "no-ready-cli",
            Miss::NoStoreConnection => "no-store-connection",
        }
    }
}

/// The bound a new live CLI would go past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "kebab-case")]
pub enum Room {
    #[error("{count} live processes (at most {max})")]
    Count { count: usize, max: usize },
    /// Bytes held and the budget (shown in MiB).
    #[error("the live processes hold {} MiB (at most {} MiB)", held >> 20, budget >> 20)]
    Memory { held: u64, budget: u64 },
    #[error("the machine is short of free memory")]
    MachineShort,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub build: String,
    pub max: usize,
    /// The memory budget of the live processes, in bytes.
    #[serde(default)]
    pub memory: u64,
    pub ttl_secs: u64,
    pub live: Vec<Live>,
    /// Since the keeper started (a keeper of an older build sends none).
    #[serde(default)]
    pub counters: Counters,
}

/// What the keeper did since it started, for `claude-shim metrics`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Live CLIs lent to a turn.
    pub lends: u64,
    /// Turns it lent nothing, by [`Miss::code`].
    pub misses: std::collections::BTreeMap<String, u64>,
    /// CLIs it started (live or ready).
    pub started: u64,
    /// CLIs that ended, by [`End`].
    pub ended: std::collections::BTreeMap<String, u64>,
}

/// Why a live CLI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Idle past the keeper's TTL (or started ready and never taken).
    Ttl,
    /// Ended to make room under the count or memory bound.
    Room,
    /// Its conversation's turn came with another fingerprint (environment,
    /// files, flags) or someone else wrote its session.
    Changed,
    /// It printed or exited while idle, or its turn went wrong.
    Unwell,
    /// Its caller hung up mid-turn.
    Abandoned,
    /// `claude-shim warm stop`, or a new shim build.
    Stopped,
    /// It exited by itself, with an error or a signal.
    Crashed,
    /// It exited by itself, cleanly.
    Exited,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Ttl => "ttl",
            End::Room => "room",
            End::Changed => "fingerprint",
            End::Unwell => "unwell",
            End::Abandoned => "abandoned",
            End::Stopped => "stopped",
            End::Crashed => "crash",
            End::Exited => "exited",
        }
    }
}

/// What a live CLI is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveState {
    /// Started ahead of a new conversation, not reserved yet.
    Ready,
    /// Waiting for its conversation's next turn.
    Idle,
    /// Answering a turn.
    Busy,
    /// Its stdin closed: finishing.
    Stopping,
}

impl LiveState {
    pub fn as_str(self) -> &'static str {
        match self {
            LiveState::Ready => "ready",
            LiveState::Idle => "idle",
            LiveState::Busy => "busy",
            LiveState::Stopping => "stopping",
        }
    }
}

impl std::fmt::Display for LiveState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Live {
    pub session: String,
    pub pid: i32,
    pub state: LiveState,
    pub turns: u32,
    pub cwd: String,
    pub idle_secs: u64,
    pub age_secs: u64,
    /// Resident memory, from /proc (Linux).
    pub rss_bytes: Option<u64>,
}

/// Write one message (and, with `fds`, pass them along).
pub fn send<T: Serialize>(stream: &UnixStream, msg: &T, fds: &[RawFd]) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg)?;
    line.push(b'\n');
    if fds.is_empty() {
        return (&*stream).write_all(&line);
    }
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let cmsg = [ControlMessage::ScmRights(fds)];
    let iov = [std::io::IoSlice::new(&line)];
    let n = sendmsg::<()>(stream.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)?;
    (&*stream).write_all(&line[n..])
}

/// Read one message line, with any fds that came with it. `buf` keeps what
/// was read past the line.
pub fn recv<T: for<'de> Deserialize<'de>>(
    stream: &UnixStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<(T, Vec<OwnedFd>)> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    let mut fds = Vec::new();
    loop {
        if let Some(nl) = memchr::memchr(b'\n', buf) {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let msg = serde_json::from_slice(&line)?;
            return Ok((msg, fds));
        }
        let mut chunk = [0u8; 8192];
        let mut space = nix::cmsg_space!([RawFd; 3]);
        let mut iov = [std::io::IoSliceMut::new(&mut chunk)];
        let msg = match recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel just gave us these descriptors.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        let n = msg.bytes;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn messages_and_descriptors_round_trip() {
        let (a, b) = UnixStream::pair().unwrap();
        let req = Request::Turn {
            session: "S".into(),
            head: Some("H".into()),
            key: "k".into(),
            file_size: Some(9),
            start: None,
            ready: None,
        };
        send(&a, &req, &[]).unwrap();
        let mut buf = Vec::new();
        let (got, fds): (Request, _) = recv(&b, &mut buf).unwrap();
        assert_eq!((got, fds.len()), (req, 0));
        // A pipe's read end travels with a reply.
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let lent = Reply::Lent {
            pid: 7,
            fresh: true,
            turns: 0,
            began_fresh: true,
        };
        send(&b, &lent, &[r.as_raw_fd()]).unwrap();
        drop(r);
        let (got, mut fds): (Reply, _) = recv(&a, &mut buf).unwrap();
        assert_eq!(got, lent);
        let mut w = std::fs::File::from(w);
        w.write_all(b"through").unwrap();
        drop(w);
        let mut got = String::new();
        std::fs::File::from(fds.remove(0))
            .read_to_string(&mut got)
            .unwrap();
        assert_eq!(got, "through");
    }

    #[test]
    fn a_miss_travels_typed_and_reads_as_it_did() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut buf = Vec::new();
        for (miss, text) in [
            (
                Miss::Draining,
                "the keeper is draining (a new shim build or a stop)",
            ),
            (
                Miss::NoRoom(Room::Count { count: 4, max: 4 }),
                "no room: 4 live processes (at most 4), all busy",
            ),
            (
                Miss::NoRoom(Room::Memory {
                    held: 700 << 20,
                    budget: (1 << 30) + 5,
                }),
                "no room: the live processes hold 700 MiB (at most 1024 MiB), all busy",
            ),
            (
                Miss::SpawnFailed("No such file or directory (os error 2)".into()),
                "starting the CLI failed: No such file or directory (os error 2)",
            ),
        ] {
            assert_eq!(miss.to_string(), text);
            let reply = Reply::Miss { why: miss };
            send(&a, &reply, &[]).unwrap();
            let (got, _): (Reply, _) = recv(&b, &mut buf).unwrap();
            assert_eq!(got, reply);
        }
        // A plain miss is a plain string on the wire, as before.
        let line = serde_json::to_string(&Reply::Miss { why: Miss::Busy }).unwrap();
        assert_eq!(line, r#"{"reply":"miss","why":"busy"}"#);
    }
}
