//! The shim's side of the keeper: connect (starting a keeper when none
//! answers), borrow a conversation's live process for a turn, give it back.
//! Anything amiss — no keeper, a slow one, another build — and the turn runs
//! cold, as it would without warm turns.

use super::protocol::{self, Miss, Reply, Request, Status};
use crate::data_dir::DataDir;
use crate::store::postgres::handoff::Handed;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a turn waits for the keeper to answer (a reply may wait for an
/// old process of the conversation to end first).
const REPLY_WAIT: Duration = Duration::from_secs(10);
/// How long a shim waits for a keeper it started to listen.
const START_WAIT: Duration = Duration::from_millis(500);
/// How long a keeper may take to say hello: at once, unless it is stopped
/// or wedged (then this turn does without it), or the machine is very
/// busy (a CI run's keeper was seen taking more than 250 ms).
const HELLO_WAIT: Duration = Duration::from_secs(2);
/// How long a turn on a shared store waits for a readied connection, in
/// all: connecting itself costs a few milliseconds.
const STORE_WAIT: Duration = Duration::from_millis(25);

/// The keeper did not say hello in time in this process: its later calls
/// (the turn's release, a warm turn) are not made, each would wait as long.
static SILENT: AtomicBool = AtomicBool::new(false);

pub struct Keeper {
    stream: UnixStream,
    buf: Vec<u8>,
    /// Replies to requests not waited for (a turn's `Done`): read before
    /// the next call's own.
    owed: usize,
    /// Descriptors read with the hello's answer: the pipes of the answer
    /// behind it (a read may take in both answers, and the descriptors
    /// come with the first).
    ahead: Vec<std::os::fd::OwnedFd>,
}

/// A live process lent for one turn: its pid and pipes.
pub struct Lent {
    pub pid: i32,
    /// Started for this turn (its first turn: the session is not proven yet).
    pub fresh: bool,
    /// Turns it served before this one.
    pub turns: u32,
    /// It started its session anew rather than by resuming it.
    pub began_fresh: bool,
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// Why the keeper lent no live process for a turn (it runs cold).
#[derive(Debug, thiserror::Error)]
pub enum NotLent {
    /// The keeper's own reason.
    #[error(transparent)]
    Miss(Miss),
    #[error("the keeper sent no pipes")]
    NoPipes,
    #[error("unexpected reply {0:?}")]
    Unexpected(Box<Reply>),
    /// Talking to the keeper failed.
    #[error("keeper: {0}")]
    Keeper(std::io::Error),
}

impl Keeper {
    /// The keeper of `dir`, if one answers (with `start`, one is started
    /// when none does).
    pub fn connect(dir: &DataDir, start: bool) -> Option<Keeper> {
        let mut k = Keeper::connect_within(dir, start, HELLO_WAIT)?;
        k.wait(REPLY_WAIT);
        Some(k)
    }

    /// The status of `dir`'s keeper, if one runs, asked without a hello: a
    /// keeper of another build answers too, and a hello from another build
    /// would drain it (`metrics --serve` outlives upgrades).
    pub fn status_of(dir: &DataDir) -> Option<Status> {
        let mut k = Keeper::reach(dir, false, HELLO_WAIT)?;
        k.status().ok()
    }

    /// The keeper of `dir` (one is started when none answers), asked for a
    /// live process for a turn in the same breath as it is greeted: the
    /// keeper, woken once, reads both (on a busy machine each wake-up took
    /// up to tens of milliseconds). Another build drains on the hello, so
    /// it lends nothing: its answer to the turn is a miss.
    pub fn connect_for_turn(
        dir: &DataDir,
        req: &Request,
    ) -> Option<(Keeper, Result<Lent, NotLent>)> {
        let mut k = Keeper::greeted(dir, true, HELLO_WAIT, Some(req))?;
        k.wait(REPLY_WAIT);
        let lent = k.lent();
        Some((k, lent))
    }

    /// As [`connect`](Self::connect), the hello bounded by `wait` (and
    /// every call after it, until [`wait`](Self::wait) says otherwise).
    fn connect_within(dir: &DataDir, start: bool, wait: Duration) -> Option<Keeper> {
        Keeper::greeted(dir, start, wait, None)
    }

    /// A keeper of our build that said hello within `wait`; `then`: a
    /// request sent right behind the hello, its answer still to be read.
    fn greeted(
        dir: &DataDir,
        start: bool,
        wait: Duration,
        then: Option<&Request>,
    ) -> Option<Keeper> {
        let mut k = Keeper::reach(dir, start, wait)?;
        let said = k.greet(then);
        match said {
            Ok(Reply::Hello { build, .. }) if build == protocol::build_id() => Some(k),
            Ok(_) => {
                crate::debug!("warm: the keeper is another build (draining)");
                None
            }
            Err(e) => {
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                    // Stopped or wedged: the rest of this process does
                    // without it (its release, a warm turn), and so do the
                    // next processes while it stays so.
                    SILENT.store(true, Ordering::Relaxed);
                    if let Some(pid) = super::socket::peer_pid(&k.stream) {
                        silent::record(dir, pid);
                    }
                }
                crate::debug!("warm: keeper hello failed: {e}");
                None
            }
        }
    }

    /// A connection to the keeper, not greeted yet (with `start`, one is
    /// started when none listens); each call on it bounded by `wait`.
    fn reach(dir: &DataDir, start: bool, wait: Duration) -> Option<Keeper> {
        if SILENT.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(pid) = silent::still(dir) {
            crate::debug!("warm: the keeper (pid {pid}) did not answer lately and still cannot");
            return None;
        }
        let socket = super::socket::socket(dir);
        match ours(&socket) {
            Ok(s) => Some(Keeper::new(s, wait)),
            Err(_) if start => {
                let ready = spawn_keeper().ok()?;
                // It says when it listens (or exits: another keeper got
                // there first, whose socket is then there to connect to).
                if !said_ready(&ready, START_WAIT) {
                    crate::debug!("warm: the keeper did not start in time");
                    return None;
                }
                ours(&socket).ok().map(|s| Keeper::new(s, wait))
            }
            Err(_) => None,
        }
    }

    /// Say hello (and `then`, right behind it): the answer to the hello.
    fn greet(&mut self, then: Option<&Request>) -> std::io::Result<Reply> {
        let hello = Request::Hello {
            build: protocol::build_id(),
        };
        protocol::send(&self.stream, &hello, &[])?;
        if let Some(req) = then {
            protocol::send(&self.stream, req, &[])?;
        }
        let (reply, fds) = protocol::recv(&self.stream, &mut self.buf)?;
        self.ahead = fds;
        Ok(reply)
    }

    fn new(stream: UnixStream, wait: Duration) -> Keeper {
        let mut k = Keeper {
            stream,
            buf: Vec::new(),
            owed: 0,
            ahead: Vec::new(),
        };
        k.wait(wait);
        k
    }

    /// How long each call may wait for the keeper (to write, and to read
    /// its answer).
    fn wait(&mut self, wait: Duration) {
        let _ = self.stream.set_read_timeout(Some(wait));
        let _ = self.stream.set_write_timeout(Some(wait));
    }

    fn call(&mut self, req: &Request) -> std::io::Result<Reply> {
        Ok(self.call_fds(req)?.0)
    }

    fn call_fds(&mut self, req: &Request) -> std::io::Result<(Reply, Vec<std::os::fd::OwnedFd>)> {
        while self.owed > 0 {
            protocol::recv::<Reply>(&self.stream, &mut self.buf)?;
            self.owed -= 1;
        }
        protocol::send(&self.stream, req, &[])?;
        protocol::recv(&self.stream, &mut self.buf)
    }

    /// A live process for this turn, or why not.
    pub fn turn(&mut self, req: &Request) -> Result<Lent, NotLent> {
        let answer = self.call_fds(req);
        Self::lending(answer)
    }

    /// The answer to a turn sent behind the hello.
    fn lent(&mut self) -> Result<Lent, NotLent> {
        let mut ahead = std::mem::take(&mut self.ahead);
        let answer = protocol::recv(&self.stream, &mut self.buf).map(|(reply, fds)| {
            ahead.extend(fds);
            (reply, ahead)
        });
        Self::lending(answer)
    }

    fn lending(
        answer: std::io::Result<(Reply, Vec<std::os::fd::OwnedFd>)>,
    ) -> Result<Lent, NotLent> {
        match answer {
            Ok((
                Reply::Lent {
                    pid,
                    fresh,
                    turns,
                    began_fresh,
                },
                fds,
            )) if fds.len() == 3 => {
                let mut fds = fds.into_iter().map(File::from);
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (fds.next(), fds.next(), fds.next())
                else {
                    return Err(NotLent::NoPipes);
                };
                Ok(Lent {
                    pid,
                    fresh,
                    turns,
                    began_fresh,
                    stdin,
                    stdout,
                    stderr,
                })
            }
            Ok((Reply::Miss { why }, _)) => Err(NotLent::Miss(why)),
            Ok((other, _)) => Err(NotLent::Unexpected(Box::new(other))),
            Err(e) => Err(NotLent::Keeper(e)),
        }
    }

    /// The lent process finished its turn; `key`: what it has taken in now.
    /// Not waited for: waking a keeper on a busy machine took up to tens of
    /// milliseconds, and nothing of the turn depends on the answer. The
    /// keeper reads it before this connection's end, and before a later
    /// connection's turn (`keeper::server`); a later call here reads it first.
    /// `at_once`: the turn left work in the background; the process is
    /// killed rather than left to end with its input.
    pub fn done(
        &mut self,
        (healthy, at_once): (bool, bool),
        head: Option<String>,
        key: Option<String>,
        file_size: Option<u64>,
    ) {
        let done = Request::Done {
            healthy,
            head,
            file_size,
            key,
            at_once,
        };
        if protocol::send(&self.stream, &done, &[]).is_ok() {
            self.owed += 1;
        }
    }

    /// How the lent process ended (it ended mid-turn); `None`: unknown.
    pub fn ended(&mut self) -> Option<crate::runner::Exit> {
        match self.call(&Request::Ended).ok()? {
            Reply::Ended {
                signal: Some(sig), ..
            } => nix::sys::signal::Signal::try_from(sig)
                .ok()
                .map(crate::runner::Exit::Signal),
            Reply::Ended { code: Some(c), .. } => Some(crate::runner::Exit::Code(c)),
            _ => None,
        }
    }

    /// End `session`'s live process (if any) before writing to the session
    /// cold; returns once it is gone.
    pub fn release(&mut self, session: &str) -> bool {
        matches!(
            self.call(&Request::Release {
                session: session.to_owned()
            }),
            Ok(Reply::Ok)
        )
    }

    /// The session id of a CLI started ready for `key`, reserved for us.
    pub fn ready(&mut self, key: &str) -> Option<String> {
        match self.call(&Request::Ready {
            key: key.to_owned(),
        }) {
            Ok(Reply::Ready { session }) => Some(session),
            _ => None,
        }
    }

    pub fn status(&mut self) -> std::io::Result<Status> {
        match self.call(&Request::Status)? {
            Reply::Status(s) => Ok(s),
            other => Err(std::io::Error::other(format!("unexpected reply {other:?}"))),
        }
    }

    /// The store connection the keeper readied for `url`, if it has one.
    fn store(&mut self, url: &str) -> Result<Handed, String> {
        let asked = Request::Store {
            url: url.to_owned(),
            build: protocol::build_id(),
        };
        match self.call_fds(&asked) {
            Ok((Reply::Store { answer, unix }, mut fds)) if fds.len() == 1 => Ok(Handed {
                socket: fds.remove(0),
                answer: hex::decode(answer).map_err(|e| e.to_string())?,
                unix,
            }),
            Ok((Reply::Miss { why }, _)) => Err(why.to_string()),
            Ok((other, _)) => Err(format!("unexpected reply {other:?}")),
            Err(e) => Err(format!("keeper: {e}")),
        }
    }

    /// End live processes (one session's, or all and the keeper).
    pub fn stop(&mut self, session: Option<String>) -> std::io::Result<()> {
        let _ = self.stream.set_read_timeout(Some(Duration::from_secs(30)));
        match self.call(&Request::Stop { session })? {
            Reply::Ok => Ok(()),
            other => Err(std::io::Error::other(format!("unexpected reply {other:?}"))),
        }
    }
}

/// Before a cold run writes to `session` in place: end its live process,
/// if a keeper holds one (it would no longer know the session).
pub fn release(session: &str) {
    let Ok(Some(dir)) = DataDir::existing() else {
        return;
    };
    if !super::socket::socket(&dir).exists() {
        return;
    }
    if let Some(mut k) = Keeper::connect(&dir, false) {
        if !k.release(session) {
            crate::debug!("warm: the keeper could not release {session}");
        }
    }
}

/// The store connection the keeper readied for this turn (see
/// `store::postgres::handoff`). No keeper: one is started for the next
/// turn, without waiting for it; this one connects itself.
pub fn store_connection(dir: &DataDir, url: &str) -> Option<Handed> {
    if !crate::env::store_ready() {
        return None;
    }
    let start = Instant::now();
    // The request carries our build: no hello first.
    let Some(mut k) = Keeper::reach(dir, false, STORE_WAIT) else {
        // None listens: start one for the next turn, without waiting.
        let _ = spawn_keeper();
        return None;
    };
    let handed = k
        .store(url)
        .map_err(|why| crate::debug!("store: no readied connection ({why})"))
        .ok();
    crate::debug!(
        "store: asking the keeper for a readied connection ({} µs)",
        start.elapsed().as_micros()
    );
    handed
}

/// A connection to the keeper socket at `path`, if a keeper of our own
/// user listens there: the socket file must be ours, and so must the process
/// that listens (`SO_PEERCRED`), so a planted socket never gets a turn.
fn ours(path: &Path) -> std::io::Result<UnixStream> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::symlink_metadata(path)?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.file_type().is_socket() || meta.uid() != me {
        crate::error!(
            "warm: {} is not our keeper's socket; not using it",
            path.display()
        );
        return Err(std::io::ErrorKind::PermissionDenied.into());
    }
    let stream = UnixStream::connect(path)?;
    if !super::socket::same_user(&stream) {
        crate::error!(
            "warm: the process listening at {} is another user's",
            path.display()
        );
        return Err(std::io::ErrorKind::PermissionDenied.into());
    }
    Ok(stream)
}

/// A keeper that did not say hello in time (stopped by a debugger, a frozen
/// container, or wedged) costs one turn its wait, not every turn: its pid is
/// noted in the data dir (`keeper.silent`), and turns do without it, at once,
/// while it is stopped — or for [`silent::FOR`] when it cannot be told.
mod silent {
    use crate::data_dir::DataDir;
    use std::time::Duration;

    const FILE: &str = "keeper.silent";
    /// How long a keeper that did not answer is not asked again, unless it
    /// can be seen to run again (Linux: no longer stopped).
    pub const FOR: Duration = Duration::from_secs(30);

    pub fn record(dir: &DataDir, pid: i32) {
        // Written whole, never through a planted link.
        let _ = crate::whole_file::write(&dir.join(FILE), pid.to_string().as_bytes(), 0o600);
    }

    /// The pid of a keeper that did not answer and still cannot, if any.
    pub fn still(dir: &DataDir) -> Option<i32> {
        let path = dir.join(FILE);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let pid: i32 = std::str::from_utf8(&dir.read(FILE).ok()??)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let young = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age < FOR);
        let holds = match stopped(pid) {
            Some(true) => true,
            Some(false) => false,
            None => young && crate::platform::alive(pid),
        };
        if !holds {
            let _ = std::fs::remove_file(&path);
        }
        holds.then_some(pid)
    }

    /// Whether `pid` is stopped (Linux `/proc`; `None` elsewhere or when gone).
    fn stopped(pid: i32) -> Option<bool> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The state follows the command name in parentheses.
        let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
        Some(matches!(state, "T" | "t"))
    }
}

/// Start `claude-shim keeper` in its own session, detached from ours: the
/// read end of the pipe it says it is ready on.
fn spawn_keeper() -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd;
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("keeper")
        .env(
            crate::env::KEEPER_READY,
            crate::runner::detached::READY_FD.to_string(),
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // In a session of its own, with none of the caller's descriptors but the
    // pipe (its live CLIs get their settings per turn: `runner::detached`).
    crate::runner::detached::confine(
        &mut cmd,
        crate::runner::detached::Role::Keeper {
            ready: write.as_raw_fd(),
        },
    );
    cmd.spawn()?;
    drop(write);
    Ok(read)
}

/// Whether a keeper started with `ready` said it listens (a byte) or ended
/// (end of file) within `wait`.
fn said_ready(ready: &std::os::fd::OwnedFd, wait: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = PollTimeout::try_from(left.as_millis() as i32).unwrap_or(PollTimeout::ZERO);
        let mut fds = [PollFd::new(ready.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(n) if n > 0 => return true,
            Err(nix::errno::Errno::EINTR) if !left.is_zero() => continue,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// The keeper's two answers, hello's and the turn's with its pipes, read
    /// in one go: the pipes still go with the turn's.
    #[test]
    fn a_turn_sent_behind_the_hello_gets_its_pipes() {
        let (ours, keeper) = UnixStream::pair().unwrap();
        let mut k = Keeper::new(ours, Duration::from_secs(5));
        let hello = Reply::Hello {
            build: protocol::build_id(),
            pid: 1,
        };
        let lent = Reply::Lent {
            pid: 2,
            fresh: false,
            turns: 1,
            began_fresh: false,
        };
        let pipes: Vec<File> = (0..3).map(|_| File::open("/dev/null").unwrap()).collect();
        let fds: Vec<i32> = pipes.iter().map(|f| f.as_raw_fd()).collect();
        protocol::send(&keeper, &hello, &[]).unwrap();
        protocol::send(&keeper, &lent, &fds).unwrap();
        let turn = Request::Ended;
        assert!(matches!(k.greet(Some(&turn)).unwrap(), Reply::Hello { .. }));
        let got = k.lent().map(|l| (l.pid, l.turns));
        assert!(matches!(got, Ok((2, 1))), "{:?}", got.err());
    }
}
