//! What happens before the CLI runs, held against the direct call (issue 50,
//! findings 2 and 3): the prompt still coming on stdin when a signal comes,
//! a signal the caller ignores, and piped text that comes late or never.
//!
//! The real CLI (2.1.302 to 2.1.332) waits 3 s for piped text's first byte,
//! then goes on without it ("no stdin data received in 3s", and with no
//! prompt "Input must be provided…", exit 1); while it waits, SIGHUP exits
//! 129, SIGINT 0 and SIGTERM 143, once its handlers are set; a signal it
//! was started ignoring stays ignored.

use crate::support::process::describe;
use crate::support::{Ran, World};
use nix::sys::signal::Signal;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the caller does to the call, at a time after its start.
#[derive(Clone, Copy, Debug)]
enum Act {
    Write(&'static [u8]),
    Close,
    Signal(Signal),
}

/// Run `cmd` with a stdin pipe the script drives; `ignore`: the signal the
/// call starts with ignored (as under `nohup`, or a background job's SIGINT).
fn scripted(mut cmd: Command, script: &[(u64, Act)], ignore: Option<Signal>) -> Ran {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(sig) = ignore {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigIgn)
                    .map(|_| ())
                    .map_err(std::io::Error::from)
            });
        }
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut stdin = child.stdin.take();
    let readers: Vec<_> = [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ]
    .into_iter()
    .map(|mut pipe| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = pipe.read_to_end(&mut b);
            b
        })
    })
    .collect();
    // When it ended, if it did before the script's end.
    let mut ended = None;
    for &(at, act) in script {
        let at = Duration::from_millis(at);
        while ended.is_none() && start.elapsed() < at {
            std::thread::sleep(Duration::from_millis(10));
            if let Ok(Some(_)) = child.try_wait() {
                ended = Some(start.elapsed());
            }
        }
        if let Some(left) = at.checked_sub(start.elapsed()) {
            std::thread::sleep(left);
        }
        match act {
            Act::Write(b) => {
                if let Some(s) = stdin.as_mut() {
                    let _ = s.write_all(b);
                }
            }
            Act::Close => drop(stdin.take()),
            Act::Signal(sig) => {
                let _ = nix::sys::signal::kill(pid, sig);
            }
        }
    }
    let status = crate::support::process::wait_timeout(&mut child, Duration::from_secs(60))
        .unwrap_or_else(|| {
            let _ = nix::sys::signal::killpg(pid, Signal::SIGKILL);
            panic!("still running after 60 s")
        });
    let elapsed = ended.unwrap_or_else(|| start.elapsed());
    drop(stdin);
    let mut out = readers.into_iter().map(|r| r.join().expect("reader"));
    Ran {
        status,
        stdout: out.next().unwrap_or_default(),
        stderr: out.next().unwrap_or_default(),
        elapsed,
    }
}

/// The same script directly and through the shim: the same end (code or
/// signal), the same bytes, the same number of requests to the model.
fn held(args: &[&str], script: &[(u64, Act)], ignore: Option<Signal>) -> (Ran, Ran) {
    let w = World::warm(false);
    w.server.set_reply(|_| "an answer".to_owned());
    let direct = scripted(w.sb.direct(args), script, ignore);
    let asked_directly = w.server.main_requests().len();
    w.server.clear_log();
    let through = scripted(w.sb.shimmed(args), script, ignore);
    let asked_through = w.server.main_requests().len();
    let what = format!("{args:?} {script:?} ignoring {ignore:?}");
    assert_eq!(
        through.how(),
        direct.how(),
        "{what}\nthrough: {}\ndirect: {}\n{}",
        describe(&through),
        describe(&direct),
        w.log()
    );
    assert_eq!(through.out(), direct.out(), "{what}");
    assert_eq!(through.err(), direct.err(), "{what}");
    assert_eq!(asked_through, asked_directly, "{what}: requests");
    (direct, through)
}

const PROMPT: &[u8] = b"Human: one\n\nAssistant: two\n\nHuman: three";

/// A signal while the prompt is still coming: the CLI's handled exit, not a
/// death by the signal (before: the shim died by it: -1, -2, -15).
#[test]
fn a_signal_while_the_prompt_comes_ends_as_the_cli_would() {
    for sig in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGTERM] {
        // Inside both windows on a loaded machine: the CLI's handlers are set
        // and its 3 s wait not over.
        let script = [
            (2_400, Act::Signal(sig)),
            (2_600, Act::Write(PROMPT)),
            (2_700, Act::Close),
        ];
        let (direct, _) = held(&["-p"], &script, None);
        assert!(
            direct.status.code().is_some(),
            "{sig}: {}",
            describe(&direct)
        );
    }
}

/// A signal that comes while the CLI is still starting (before its handlers
/// are set) has the disposition the call started with: one the caller
/// ignores stays ignored, and the prompt that comes after it is answered
/// (before: the shim died by it); otherwise it kills. Later, the CLI's
/// handlers end it either way (above).
#[test]
fn a_signal_while_the_cli_would_start_keeps_the_callers_disposition() {
    for sig in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGTERM] {
        let script = [
            (60, Act::Signal(sig)),
            (1_000, Act::Write(PROMPT)),
            (1_100, Act::Close),
        ];
        let (direct, _) = held(&["-p"], &script, Some(sig));
        assert_eq!(
            direct.status.code(),
            Some(0),
            "{sig}: {}",
            describe(&direct)
        );
        assert_eq!(direct.out().trim(), "an answer", "{sig}");
        let (direct, _) = held(&["-p"], &script, None);
        assert_eq!(
            direct.status.signal(),
            Some(sig as i32),
            "{sig}: {}",
            describe(&direct)
        );
    }
}

/// Piped text that begins after the CLI's 3 s: refused as the CLI refuses
/// it, exit 1 and nothing sent (before: the shim read it, and the model
/// answered, exit 0); a pipe that stays open and empty likewise (before:
/// the shim waited for its end). Text that begins in time is answered.
#[test]
fn piped_text_that_comes_late_is_refused_as_the_cli_refuses_it() {
    // Past the CLI's wait even when its start takes 2 s (a loaded machine).
    for late in [5_500, 7_000] {
        let script = [(late, Act::Write(PROMPT)), (late + 100, Act::Close)];
        let (direct, _) = held(&["-p"], &script, None);
        assert_eq!(
            direct.status.code(),
            Some(1),
            "{late}: {}",
            describe(&direct)
        );
        assert!(
            direct.err().contains("no stdin data received"),
            "{}",
            describe(&direct)
        );
    }
    let (direct, through) = held(&["-p"], &[(9_000, Act::Close)], None);
    assert_eq!(direct.status.code(), Some(1), "{}", describe(&direct));
    assert!(
        through.elapsed < Duration::from_secs(9),
        "ended before the pipe did: {:?} (direct {:?})",
        through.elapsed,
        direct.elapsed
    );
    let (direct, _) = held(
        &["-p"],
        &[(1_000, Act::Write(PROMPT)), (1_100, Act::Close)],
        None,
    );
    assert_eq!(direct.status.code(), Some(0), "{}", describe(&direct));
}
