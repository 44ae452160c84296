//! A person at a terminal (issue 38): `claude -p 'Human: …'` with a terminal
//! on stdout, on stderr, or on both. The real CLI decides things by `isatty`
//! (it ends its output with the terminal's "show the cursor", `ESC[?25h`),
//! so the bytes the terminal receives through the shim must be the bytes it
//! receives directly; and the conversation still resumes at the next turn,
//! though the shim never sees the reply in a pipe. Each call gets a fresh
//! pseudo-terminal (80×24) whose master the test reads to the end, as a
//! terminal emulator would.

use crate::support::clients::labels;
use crate::support::process::{reader, wait_timeout};
use crate::support::World;
use nix::pty::{openpty, Winsize};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Which of the call's streams are the terminal (the others are pipes).
#[derive(Clone, Copy, Debug)]
enum At {
    Both,
    Stdout,
    Stderr,
}

/// What a call at a terminal gave: the bytes the terminal received, the
/// piped stream's bytes (if one was piped), and how it ended.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    terminal: Vec<u8>,
    piped: Vec<u8>,
    status: (Option<i32>, Option<i32>),
}

fn cloexec(fd: &OwnedFd) {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("FD_CLOEXEC");
}

/// Run `cmd` with `at` on a new terminal, stdin on the terminal too (as a
/// person's shell gives it). Reads the terminal until every process that
/// holds it has closed it: a process the call left behind holding the
/// terminal would hang the read, so it is bounded.
fn at_terminal(mut cmd: Command, at: At) -> Seen {
    let size = Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(Some(&size), None).expect("openpty");
    cloexec(&pty.master);
    cloexec(&pty.slave);
    let tty = || Stdio::from(pty.slave.try_clone().expect("dup the terminal"));
    cmd.stdin(tty());
    match at {
        At::Both => cmd.stdout(tty()).stderr(tty()),
        At::Stdout => cmd.stdout(tty()).stderr(Stdio::piped()),
        At::Stderr => cmd.stdout(Stdio::piped()).stderr(tty()),
    };
    let mut child = cmd.spawn().expect("spawn");
    drop(cmd);
    drop(pty.slave);
    let piped = match at {
        At::Stderr => reader(child.stdout.take()),
        _ => reader(child.stderr.take()),
    };
    let master = std::fs::File::from(pty.master);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut master = master;
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO: no process holds the terminal any more.
        while let Ok(n @ 1..) = master.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(got);
    });
    let status = wait_timeout(&mut child, Duration::from_secs(120)).expect("the call ends");
    let terminal = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the terminal closed by every process of the call");
    Seen {
        terminal,
        piped: piped.join().unwrap(),
        status: (status.code(), status.signal()),
    }
}

/// The terminal's bytes, readable in a failure message.
fn shown(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

/// `claude -p PROMPT` at a terminal directly, then through the shim: the
/// two must be the same. Both are returned, shimmed first.
fn both_at_terminal(w: &World, prompt: &str, at: At) -> (Seen, Seen) {
    let direct = at_terminal(w.sb.direct(["-p", prompt]), at);
    let through = at_terminal(w.sb.shimmed(["-p", prompt]), at);
    assert_eq!(
        through,
        direct,
        "{at:?}: through the shim {} directly {}\n{}",
        shown(&through.terminal),
        shown(&direct.terminal),
        w.log()
    );
    (through, direct)
}

fn same_at_terminal_then_resumed(at: At) {
    let mut w = World::warm(false);
    // The same reply to the same message, whoever asks.
    w.server
        .set_reply(|req| format!("the answer to {}", req.last_user_text().unwrap_or_default()));
    let first = labels(&[], "hello there.", "Human", "\n\n");
    let (through, direct) = both_at_terminal(&w, &first, at);
    assert_eq!(direct.status, (Some(0), None));
    // The terminal got the CLI's own ending (the cursor shown): the CLI
    // knew it wrote to a terminal, through the shim as well.
    let reply = w.server.last_main().expect("turn 1's request").reply;
    let on_terminal = match at {
        At::Stderr => &through.piped,
        _ => &through.terminal,
    };
    assert!(
        String::from_utf8_lossy(on_terminal).contains(&reply),
        "{}",
        shown(on_terminal)
    );
    // The next turn, at the terminal too, resumes the session the first
    // made: the shim learned the session and the reply without a pipe.
    w.history.push(("hello there.".to_owned(), reply));
    w.server.clear_log();
    let second = w.prompt("and again.");
    let again = at_terminal(w.sb.shimmed(["-p", &second]), at);
    assert_eq!(again.status, (Some(0), None), "{}", w.log());
    w.assert_runs(&[("fresh", "first-turn"), ("resumed", "resumed")], &w.log());
    let users = w.server.last_main().expect("turn 2's request").user_texts();
    assert_eq!(
        users.iter().filter(|t| t.contains("hello there.")).count(),
        1,
        "{users:?}"
    );
    w.assert_no_shim_errors();
}

#[test]
fn a_terminal_on_stdout_and_stderr_sees_what_it_sees_directly() {
    same_at_terminal_then_resumed(At::Both);
}

#[test]
fn a_terminal_on_stdout_alone_sees_what_it_sees_directly() {
    same_at_terminal_then_resumed(At::Stdout);
}

#[test]
fn a_terminal_on_stderr_alone_sees_what_it_sees_directly() {
    same_at_terminal_then_resumed(At::Stderr);
}

/// The turn after a first one fails at the API (a 400): the CLI prints its
/// error for a terminal, and the shim's resume attempt, refused or not,
/// shows the terminal what the direct call shows.
#[test]
fn an_api_error_at_a_terminal_shows_what_it_shows_directly() {
    let mut w = World::warm(false);
    w.server
        .set_reply(|req| format!("the answer to {}", req.last_user_text().unwrap_or_default()));
    let first = labels(&[], "hello there.", "Human", "\n\n");
    let turn = at_terminal(w.sb.shimmed(["-p", &first]), At::Both);
    assert_eq!(turn.status, (Some(0), None), "{}", w.log());
    let reply = w.server.last_main().expect("turn 1's request").reply;
    w.history.push(("hello there.".to_owned(), reply));
    w.server.set_error(|req| {
        req.is_main()
            .then(|| (400, "the request was refused for the test".to_owned()))
    });
    let second = w.prompt("and again.");
    let (_, direct) = both_at_terminal(&w, &second, At::Both);
    assert_ne!(direct.status, (Some(0), None));
    assert!(
        String::from_utf8_lossy(&direct.terminal).contains("refused for the test"),
        "{}",
        shown(&direct.terminal)
    );
}
