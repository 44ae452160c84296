//! A fake [`Spawn`] for the pool's tests: no process is started. Each fake
//! CLI has real pipes (so a lent one's travel over a socket, and the pool's
//! watch sees them), and a pid, memory, and an end that the test sets. Like
//! a CLI, one exits once its stdin is closed (unless `stubborn`), and on a
//! signal.

use super::spawn::{Child, Spawn, Spawned};
use crate::warm::protocol::{Request, Start};
use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::rc::Rc;

/// The fake machine: the CLIs it started, its free memory.
#[derive(Clone, Default)]
pub struct Fake(Rc<RefCell<Machine>>);

#[derive(Default)]
struct Machine {
    kids: Vec<Kid>,
    free: Option<u64>,
    fail: bool,
}

/// One fake CLI, shared by the pool (as its `Child`) and the test.
#[derive(Clone)]
pub struct Kid(Rc<RefCell<Proc>>);

struct Proc {
    pid: u32,
    args: Vec<String>,
    rss: Option<u64>,
    status: Option<ExitStatus>,
    killed: bool,
    terminated: bool,
    stubborn: bool,
    /// The read end of its stdin.
    stdin: OwnedFd,
    /// The write ends of its stdout and stderr, while it runs.
    out: Option<(OwnedFd, OwnedFd)>,
}

/// What a fake CLI holds unless told otherwise.
pub const RSS: u64 = 100 << 20;

impl Fake {
    /// Every CLI started, first first.
    pub fn kids(&self) -> Vec<Kid> {
        self.0.borrow().kids.clone()
    }

    /// The CLI started with `session` among its arguments (the last one).
    pub fn kid(&self, session: &str) -> Kid {
        self.0
            .borrow()
            .kids
            .iter()
            .rev()
            .find(|k| k.0.borrow().args.iter().any(|a| a == session))
            .cloned()
            .unwrap_or_else(|| panic!("no CLI of {session} started"))
    }

    /// What the machine has free (`None`: unknown).
    pub fn set_free(&self, free: Option<u64>) {
        self.0.borrow_mut().free = free;
    }

    /// The next start fails.
    pub fn fail_next(&self) {
        self.0.borrow_mut().fail = true;
    }
}

impl Spawn for Fake {
    fn spawn(&self, start: &Start) -> std::io::Result<Spawned> {
        let mut machine = self.0.borrow_mut();
        if std::mem::take(&mut machine.fail) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        let (stdin_r, stdin_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (stdout_r, stdout_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (stderr_r, stderr_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let kid = Kid(Rc::new(RefCell::new(Proc {
            pid: 1000 + machine.kids.len() as u32,
            args: start.args.clone(),
            rss: Some(RSS),
            status: None,
            killed: false,
            terminated: false,
            stubborn: false,
            stdin: stdin_r,
            out: Some((stdout_w, stderr_w)),
        })));
        machine.kids.push(kid.clone());
        Ok(Spawned {
            child: Box::new(kid),
            stdin: stdin_w,
            stdout: stdout_r,
            stderr: stderr_r,
        })
    }

    fn available_memory(&self) -> Option<u64> {
        self.0.borrow().free
    }
}

impl Kid {
    pub fn pid(&self) -> u32 {
        self.0.borrow().pid
    }

    pub fn set_rss(&self, bytes: u64) {
        self.0.borrow_mut().rss = Some(bytes);
    }

    /// It ignores its stdin's end and SIGTERM (SIGKILL still ends it).
    pub fn stubborn(&self) {
        self.0.borrow_mut().stubborn = true;
    }

    /// It exits with `code`, closing its pipes.
    pub fn exit(&self, code: i32) {
        self.end(ExitStatus::from_raw(code << 8));
    }

    fn end(&self, status: ExitStatus) {
        let mut p = self.0.borrow_mut();
        p.status.get_or_insert(status);
        p.out = None;
    }

    /// It writes `bytes` on its stdout.
    pub fn say(&self, bytes: &[u8]) {
        let p = self.0.borrow();
        let (stdout, _) = p.out.as_ref().expect("it runs");
        nix::unistd::write(stdout, bytes).unwrap();
    }

    pub fn killed(&self) -> bool {
        self.0.borrow().killed
    }

    pub fn terminated(&self) -> bool {
        self.0.borrow().terminated
    }

    pub fn exited(&self) -> bool {
        self.0.borrow().status.is_some()
    }

    /// Nobody holds its stdin any more.
    pub fn stdin_closed(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let p = self.0.borrow();
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&p.stdin),
            PollFlags::POLLIN,
        )];
        poll(&mut fds, PollTimeout::ZERO).unwrap();
        fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP))
    }
}

impl Child for Kid {
    fn pid(&self) -> u32 {
        Kid::pid(self)
    }

    fn kill(&mut self) {
        self.0.borrow_mut().killed = true;
        self.end(ExitStatus::from_raw(nix::libc::SIGKILL));
    }

    fn terminate(&mut self) {
        self.0.borrow_mut().terminated = true;
        if !self.0.borrow().stubborn {
            self.end(ExitStatus::from_raw(nix::libc::SIGTERM));
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        // A CLI whose stdin closed finishes and exits.
        if !self.0.borrow().stubborn && self.stdin_closed() {
            self.end(ExitStatus::from_raw(0));
        }
        Ok(self.0.borrow().status)
    }

    fn rss(&self) -> Option<u64> {
        self.0.borrow().rss
    }
}

/// What a keeper is told to start for `session`: a CLI with its id.
pub fn start(session: &str) -> Start {
    Start {
        program: "claude".into(),
        args: vec!["--session-id".into(), session.into()],
        env: vec![],
        cwd: "/project".into(),
        settings: Default::default(),
    }
}

/// A turn of `session`, starting its CLI when there is none.
pub fn turn(session: &str) -> Request {
    Request::Turn {
        session: session.into(),
        head: None,
        key: "k".into(),
        file_size: None,
        start: Some(Box::new(start(session))),
        ready: None,
    }
}
