//! Managed runs (`-p` and Agent SDK stream-json): the shim spawns the real
//! claude with pipes. Every test runs the same invocation through the shim and
//! directly against the fake CLI and compares what the caller sees: stdout and
//! stderr bytes and the exit status, a death by signal included.
//!
//! The shim may add arguments of its own (`--session-id …`) to managed runs, so
//! argv is only checked to contain the caller's arguments in order.

use crate::support::process::*;
use crate::support::sandbox::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const PRINT: &[&str] = &["-p", "hello"];

/// How long a child may outlive a SIGKILLed shim: a hang guard (the kernel's
/// PR_SET_PDEATHSIG ends it at once, the portable fallback at its next write),
/// not a measure.
const GONE: Duration = Duration::from_secs(30);

#[test]
fn every_end_of_a_managed_call_is_the_callers() {
    every_end_is_the_same(PRINT, &[]);
}

#[test]
fn caller_arguments_reach_the_child_in_order() {
    let w = Sandbox::scripted();
    let argv = w.file("argv");
    let args = [
        "--model",
        "some-model",
        "-p",
        "--output-format",
        "text",
        "--append-system-prompt",
        "be brief",
        "hello there",
    ];
    let mut cmd = w.shim();
    cmd.args(args).env("FAKE_ARGV_OUT", &argv);
    let ran = run(cmd, Input::Null);
    assert!(ran.status.success(), "{}", ran.err());
    assert_in_order(&recorded_argv(&argv), &args);
}

// ---------------------------------------------------------------------------
// Signals sent to the shim reach the child.

/// How a run that was signalled mid-way ended.
struct Signalled {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    marker: String,
}

/// Start `cmd` (the fake traps every forwarded signal and sleeps), wait for
/// "ready", send `sig` to the process we started, collect the outcome.
fn signal_midway(mut cmd: Command, marker: &std::path::Path, sig: Signal, mode: &str) -> Signalled {
    cmd.env("FAKE_TRAP", "TERM HUP QUIT USR1 USR2 WINCH INT")
        .env("FAKE_TRAP_MODE", mode)
        .env("FAKE_MARKER", marker)
        .env("FAKE_READY", "1")
        .env("FAKE_SLEEP", "30")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut out = Tap::new(child.stdout.take().unwrap());
    let err = reader(child.stderr.take());
    out.expect(b"ready\n", Duration::from_secs(10));
    kill(Pid::from_raw(child.id() as i32), sig).expect("kill");
    let status = wait_timeout(&mut child, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("{sig} did not end the run within 10 s"));
    Signalled {
        status,
        stdout: out.finish(Duration::from_secs(10)),
        stderr: err.join().unwrap(),
        marker: std::fs::read_to_string(marker).unwrap_or_default(),
    }
}

fn check_forwarded(args: &[&str], sig: Signal, mode: &str) {
    let w = Sandbox::scripted();
    let (ms, md) = (w.file("marker-shim"), w.file("marker-direct"));
    let mut shim_cmd = w.shim();
    shim_cmd.args(args);
    let mut direct_cmd = w.direct(NO_ARGS);
    direct_cmd.args(args);
    let shim = signal_midway(shim_cmd, &ms, sig, mode);
    let direct = signal_midway(direct_cmd, &md, sig, mode);
    let name = sig.as_str().trim_start_matches("SIG");
    assert_eq!(
        direct.marker,
        format!("{name}\n"),
        "the fake itself trapped {sig}"
    );
    assert_eq!(
        shim.marker, direct.marker,
        "{sig} sent to the shim must reach the child once"
    );
    let how = |s: &ExitStatus| (s.code(), s.signal());
    assert_eq!(
        how(&shim.status),
        how(&direct.status),
        "{sig} ({mode}): exit status; shim stderr: {}",
        String::from_utf8_lossy(&shim.stderr)
    );
    assert_eq!(shim.stdout, direct.stdout, "{sig}: stdout");
    assert_eq!(shim.stderr, direct.stderr, "{sig}: stderr");
}

#[test]
fn sigterm_to_shim_reaches_child_which_exits_143() {
    check_forwarded(PRINT, Signal::SIGTERM, "exit");
}

#[test]
fn sigterm_to_shim_reaches_child_which_dies_by_it() {
    check_forwarded(PRINT, Signal::SIGTERM, "rekill");
}

#[test]
fn sighup_to_shim_reaches_child() {
    check_forwarded(PRINT, Signal::SIGHUP, "exit");
    check_forwarded(PRINT, Signal::SIGHUP, "rekill");
}

#[test]
fn sigusr1_and_sigusr2_to_shim_reach_child() {
    check_forwarded(PRINT, Signal::SIGUSR1, "exit");
    check_forwarded(PRINT, Signal::SIGUSR2, "rekill");
}

#[test]
fn sigquit_and_sigwinch_to_shim_reach_child() {
    check_forwarded(PRINT, Signal::SIGQUIT, "exit");
    check_forwarded(PRINT, Signal::SIGWINCH, "exit");
}

#[test]
fn sigint_by_kill_without_terminal_is_forwarded_once() {
    check_forwarded(PRINT, Signal::SIGINT, "exit");
    check_forwarded(PRINT, Signal::SIGINT, "rekill");
    // linger: the fake keeps listening 0.5 s, so a duplicate would show.
    check_forwarded(PRINT, Signal::SIGINT, "linger");
    check_forwarded(PRINT, Signal::SIGTERM, "linger");
}

/// Ctrl-C on the terminal: the tty sends SIGINT to the whole foreground
/// process group, the child included; the shim must not add a second one.
#[test]
fn ctrl_c_on_the_terminal_reaches_the_child_once() {
    let on_pty = |mut cmd: Command, marker: &std::path::Path| {
        cmd.args(PRINT)
            .env("FAKE_TRAP", "INT")
            .env("FAKE_TRAP_MODE", "linger")
            .env("FAKE_MARKER", marker)
            .env("FAKE_READY", "1")
            .env("FAKE_SLEEP", "30");
        let (mut child, master) = spawn_on_pty(cmd);
        let mut keyboard = master.try_clone().unwrap();
        let mut screen = Tap::new(master);
        screen.expect(b"ready", Duration::from_secs(10));
        keyboard.write_all(b"\x03").unwrap();
        let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("Ctrl-C ends it");
        screen.finish(Duration::from_secs(5));
        let marker = std::fs::read_to_string(marker).unwrap_or_default();
        ((status.code(), status.signal()), marker)
    };
    let w = Sandbox::scripted();
    let direct = on_pty(w.direct(NO_ARGS), &w.file("marker-direct"));
    let shim = on_pty(w.shim(), &w.file("marker-shim"));
    assert_eq!(
        direct,
        ((Some(130), None), "INT\n".to_owned()),
        "the fake itself"
    );
    assert_eq!(shim, direct, "(status, signals the child saw)");
}

#[test]
fn signals_are_forwarded_in_sdk_mode_too() {
    let sdk = [
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ];
    // The SDK keeps stdin open; here stdin is /dev/null, so the shim sees EOF
    // before any user message and must still run the child and relay.
    check_forwarded(&sdk, Signal::SIGTERM, "rekill");
}

#[test]
fn sigkill_of_shim_leaves_no_orphan() {
    let w = Sandbox::scripted();
    let pidfile = w.file("fake.pid");
    let mut cmd = w.shim();
    // A child that writes every 0.2 s for a minute: on Linux the parent-death
    // signal ends it at once; the portable fallback ends it at its next write
    // to the dead shim's pipe. Either way well before it would finish.
    cmd.args(PRINT)
        .env("FAKE_PID_OUT", &pidfile)
        .env("FAKE_TRICKLE", "300")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut shim = cmd.spawn().expect("spawn");
    let pid: i32 = eventually(Duration::from_secs(10), "the fake's pid file", || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    });
    assert!(alive(pid), "the fake is running");
    shim.kill().expect("SIGKILL the shim");
    let status = shim.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    let gone = Instant::now() + GONE;
    while alive(pid) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(10));
    }
    let orphan = alive(pid);
    if orphan {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert!(
        !orphan,
        "child {pid} outlived the SIGKILLed shim ({GONE:?})"
    );
}

/// A caller's SIGTERM (a timeout wrapper, a supervisor stopping a job) that
/// lands while the shim is still getting ready — here while it probes a slow
/// real binary with `--version` — must not be lost: without the shim the CLI
/// would have ended. Either the shim dies by it, delivers it to the child, or
/// (0.4 s in, when the CLI in its place would have set its handlers) exits
/// 143 as the CLI's handler does.
#[test]
fn sigterm_during_shim_startup_is_not_lost() {
    let w = Sandbox::scripted();
    let marker = w.file("marker");
    let mut cmd = w.shim();
    cmd.args(PRINT)
        .env("FAKE_PROBE_SLEEP", "1")
        .env("FAKE_TRAP", "TERM")
        .env("FAKE_MARKER", &marker)
        .env("FAKE_SLEEP", "8")
        .env("FAKE_STDOUT", "turn ran\n")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let out = Tap::new(child.stdout.take().unwrap());
    std::thread::sleep(Duration::from_millis(400));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("kill");
    let status = wait_timeout(&mut child, Duration::from_secs(20)).expect("ends");
    let stdout = out.finish(Duration::from_secs(5));
    let how = (status.code(), status.signal());
    let delivered = std::fs::read_to_string(&marker).unwrap_or_default() == "TERM\n";
    assert!(
        how == (None, Some(15)) || how == (Some(143), None),
        "SIGTERM sent 0.4 s after start was lost: the shim ended with {status:?}, \
         child saw the signal: {delivered}, stdout {:?}",
        String::from_utf8_lossy(&stdout)
    );
}

/// `producer | claude -p` where the producer stalls: the shim is reading the
/// prompt from stdin and no child exists yet. Without the shim the CLI, still
/// starting 0.1 s in (its handlers come at 0.3–0.45 s), would die by
/// SIGTERM/SIGINT/SIGHUP; through it the signal must not be swallowed.
/// (Later, the CLI's handlers exit 143, 0, 129: `tests/e2e/before_the_cli.rs`.)
#[test]
fn signal_while_shim_reads_the_prompt_from_stdin_is_not_lost() {
    let mut problems = Vec::new();
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        let w = Sandbox::scripted();
        let mut cmd = w.shim();
        cmd.arg("-p")
            .env("FAKE_STDIN_SHA", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn");
        let stdin = child.stdin.take().unwrap(); // held open, never written
        std::thread::sleep(Duration::from_millis(100));
        kill(Pid::from_raw(child.id() as i32), sig).expect("kill");
        let ended = wait_timeout(&mut child, Duration::from_secs(3));
        drop(stdin);
        match ended {
            Some(status) if status.signal() == Some(sig as i32) => {}
            Some(status) => problems.push(format!("{sig}: ended with {status:?}")),
            None => problems.push(format!("{sig}: ignored, still running after 3 s")),
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// SIGKILL while the shim probes the real binary leaves no process behind.
#[test]
fn sigkill_of_shim_during_startup_leaves_no_orphan() {
    let w = Sandbox::scripted();
    let pidfile = w.file("probe.pid");
    let mut cmd = w.shim();
    cmd.args(PRINT)
        .env("FAKE_PROBE_SLEEP", "10")
        .env("FAKE_PROBE_PID_OUT", &pidfile)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut shim = cmd.spawn().expect("spawn");
    // A shim that does not probe (or caches elsewhere) passes trivially.
    let start = Instant::now();
    let pid: Option<i32> = loop {
        if let Some(status) = shim.try_wait().unwrap() {
            panic!("the shim ended on its own: {status:?}");
        }
        let pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        if pid.is_some() || start.elapsed() > Duration::from_secs(60) {
            break pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    shim.kill().expect("SIGKILL the shim");
    shim.wait().unwrap();
    let Some(pid) = pid else { return };
    let gone = Instant::now() + GONE;
    while alive(pid) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(10));
    }
    let orphan = alive(pid);
    if orphan {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert!(
        !orphan,
        "probe child {pid} outlived the SIGKILLed shim ({GONE:?})"
    );
}

// ---------------------------------------------------------------------------
// Output.

/// Fill `buf` from `r` until full or EOF; the number of bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    n
}

#[test]
fn one_gib_of_stdout_is_byte_exact() {
    const SIZE: u64 = 1 << 30;
    let w = Sandbox::scripted();
    let start = Instant::now();
    let spawn = |mut cmd: Command| {
        cmd.args(PRINT)
            .env("FAKE_BYTES", SIZE.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().expect("spawn")
    };
    let mut shim = spawn(w.shim());
    let mut direct = spawn(w.direct(NO_ARGS));
    let shim_err = reader(shim.stderr.take());
    let direct_err = reader(direct.stderr.take());
    let (mut a, mut b) = (shim.stdout.take().unwrap(), direct.stdout.take().unwrap());
    // Both streams in lockstep, 1 MiB at a time: nothing big is held in memory.
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut total: u64 = 0;
    loop {
        let (na, nb) = (fill(&mut a, &mut ba), fill(&mut b, &mut bb));
        if na != nb || ba[..na] != bb[..nb] {
            let at = ba[..na].iter().zip(&bb[..nb]).position(|(x, y)| x != y);
            panic!(
                "stdout differs in the MiB at offset {total}: {na} vs {nb} bytes, first difference at {at:?}"
            );
        }
        total += na as u64;
        if na == 0 {
            break;
        }
    }
    let s = wait_timeout(&mut shim, TIMEOUT).expect("shim exits");
    let d = wait_timeout(&mut direct, TIMEOUT).expect("fake exits");
    let (se, de) = (shim_err.join().unwrap(), direct_err.join().unwrap());
    assert_eq!(
        total,
        SIZE,
        "direct stderr: {}",
        String::from_utf8_lossy(&de)
    );
    assert_eq!((s.code(), s.signal()), (d.code(), d.signal()));
    assert_eq!(se, de);
    eprintln!(
        "1 GiB through the shim and directly, compared: {:?}",
        start.elapsed()
    );
}

#[test]
fn binary_output_on_both_streams_is_byte_exact() {
    let w = Sandbox::scripted();
    let env = [
        ("FAKE_ALL_BYTES", "1"),
        ("FAKE_STDERR", r"\xff\xfe\x00 caf\xc3 not utf-8 \x80"),
    ];
    let (shim, direct) = both(&w, PRINT, &env, || Input::Null);
    let all: Vec<u8> = (0..=255u8).chain(0..=255u8).collect();
    assert_eq!(direct.stdout, all, "the fake itself");
    assert_eq!(
        direct.stderr, b"\xff\xfe\x00 caf\xc3 not utf-8 \x80",
        "the fake itself"
    );
    assert_same(&shim, &direct);
}

#[test]
fn output_without_trailing_newline() {
    let w = Sandbox::scripted();
    let env = [("FAKE_STDOUT", "no newline"), ("FAKE_STDERR", "none here")];
    let (shim, direct) = both(&w, PRINT, &env, || Input::Null);
    assert_eq!(direct.stdout, b"no newline");
    assert_same(&shim, &direct);
}

#[test]
fn empty_output() {
    let w = Sandbox::scripted();
    let (shim, direct) = both(&w, PRINT, &[], || Input::Null);
    assert!(direct.stdout.is_empty() && direct.stderr.is_empty());
    assert_same(&shim, &direct);
}

/// The fake prints one byte, then waits for its stdin to close: the byte can
/// only reach the caller while the child still runs if the shim passes it on
/// at once.
#[test]
fn first_byte_arrives_while_the_child_still_runs() {
    let w = Sandbox::scripted();
    let mut cmd = w.shim();
    cmd.args(PRINT)
        .env("FAKE_FIRST_BYTE", "0")
        .env("FAKE_PACE", "stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let stdin = child.stdin.take().unwrap();
    let mut out = Tap::new(child.stdout.take().unwrap());
    out.expect(b"x", Duration::from_secs(60));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the shim ended before the byte was read; it must not wait for the child"
    );
    assert_eq!(out.seen, b"x", "one byte, no newline, passed on at once");
    drop(stdin);
    let status = wait_timeout(&mut child, Duration::from_secs(60)).expect("exits");
    assert!(status.success());
    assert_eq!(out.finish(Duration::from_secs(5)), b"x");
}

/// Each digit is printed only after the test read the previous one (the
/// fake waits for a line on stdin before each): output is passed on as it
/// comes, not when the child ends or a buffer fills.
#[test]
fn trickling_output_is_passed_on_as_it_comes() {
    let w = Sandbox::scripted();
    let mut cmd = w.shim();
    cmd.args(PRINT)
        .env("FAKE_TRICKLE", "5")
        .env("FAKE_PACE", "stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = Tap::new(child.stdout.take().unwrap());
    // The child waits for the next line after each digit but the last.
    for digit in [b"0", b"1", b"2", b"3"] {
        writeln!(stdin).unwrap();
        stdin.flush().unwrap();
        out.expect(digit, Duration::from_secs(60));
        assert!(
            child.try_wait().unwrap().is_none(),
            "digit {:?} arrived only after the child ended",
            digit
        );
    }
    writeln!(stdin).unwrap();
    drop(stdin);
    wait_timeout(&mut child, Duration::from_secs(60)).expect("exits");
    assert_eq!(out.finish(Duration::from_secs(5)), b"01234");

    let w = Sandbox::scripted();
    let (shim, direct) = both(&w, PRINT, &[("FAKE_TRICKLE", "3")], || Input::Null);
    assert_same(&shim, &direct);
}

// ---------------------------------------------------------------------------
// Stdin.

#[test]
fn stdin_dev_null_with_no_prompt() {
    let w = Sandbox::scripted();
    let (shim, direct) = both(&w, &["-p"], &[("FAKE_STDIN_SHA", "1")], || Input::Null);
    assert_eq!(
        direct.out(),
        "stdin e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0\n"
    );
    assert_same(&shim, &direct);
}

/// Deterministic, varied, not UTF-8 (so no transcript parser takes it as a prompt).
fn pseudo_random(len: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(len);
    v[0] = 0xff;
    v
}

#[test]
fn huge_stdin_prompt_is_byte_exact() {
    const SIZE: usize = 50_000_000;
    let w = Sandbox::scripted();
    let data = pseudo_random(SIZE, 0x9e37_79b9_7f4a_7c15);
    let (shim, direct) = both(&w, &["-p"], &[("FAKE_STDIN_SHA", "1")], || {
        Input::Bytes(data.clone())
    });
    assert!(
        direct.out().ends_with(&format!(" {SIZE}\n")),
        "{}",
        direct.out()
    );
    assert_same(&shim, &direct);
}

#[test]
fn binary_stdin_prompt_is_byte_exact() {
    let w = Sandbox::scripted();
    let data = b"\xff\xfe\x00\x80 caf\xc3 \x1b[31m\r\n\xc0\xafend".to_vec();
    let (shim, direct) = both(&w, &["-p"], &[("FAKE_ECHO_STDIN", "1")], || {
        Input::Bytes(data.clone())
    });
    assert_eq!(direct.stdout, data, "the fake itself");
    assert_same(&shim, &direct);
}

#[test]
fn stdin_next_to_a_positional_prompt_is_left_to_the_child() {
    let w = Sandbox::scripted();
    let data = b"context on stdin\n\xff\x00".to_vec();
    let (shim, direct) = both(&w, PRINT, &[("FAKE_ECHO_STDIN", "1")], || {
        Input::Bytes(data.clone())
    });
    assert_eq!(direct.stdout, data);
    assert_same(&shim, &direct);
}

const CONTROL: &str = r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}"#;
const USER1: &str = r#"{"type":"user","session_id":"","message":{"role":"user","content":"first question"},"parent_tool_use_id":null}"#;
const USER2: &str = r#"{"type":"user","session_id":"","message":{"role":"user","content":"second question"},"parent_tool_use_id":null}"#;

/// Drive a stream-json conversation: the second line is written only after
/// the first user line was echoed, so it must be forwarded live.
fn stream_json_session(mut cmd: Command, args: &[&str]) -> (ExitStatus, Vec<u8>, Vec<u8>) {
    cmd.args(args)
        .env("FAKE_ECHO_LINES", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = Tap::new(child.stdout.take().unwrap());
    let err = reader(child.stderr.take());
    writeln!(stdin, "{CONTROL}\n{USER1}").unwrap();
    stdin.flush().unwrap();
    out.expect(
        format!("echo: {USER1}\n").as_bytes(),
        Duration::from_secs(10),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the child must wait for more input"
    );
    writeln!(stdin, "{USER2}").unwrap();
    stdin.flush().unwrap();
    out.expect(
        format!("echo: {USER2}\n").as_bytes(),
        Duration::from_secs(10),
    );
    drop(stdin);
    let status = wait_timeout(&mut child, Duration::from_secs(10))
        .expect("the child ends once stdin is closed");
    (
        status,
        out.finish(Duration::from_secs(5)),
        err.join().unwrap(),
    )
}

fn check_stream_json(args: &[&str]) {
    let w = Sandbox::scripted();
    let shim = stream_json_session(w.shim(), args);
    let direct = stream_json_session(w.direct(NO_ARGS), args);
    let want = format!("echo: {CONTROL}\necho: {USER1}\necho: {USER2}\n");
    assert_eq!(String::from_utf8_lossy(&direct.1), want, "the fake itself");
    assert_eq!(
        String::from_utf8_lossy(&shim.1),
        want,
        "stdin lines forwarded in order, each once"
    );
    assert_eq!(shim.0.code(), direct.0.code());
    assert_eq!(shim.2, direct.2);
}

#[test]
fn stream_json_print_mode_forwards_stdin_live() {
    check_stream_json(&[
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ]);
}

#[test]
fn stream_json_sdk_mode_forwards_stdin_live() {
    check_stream_json(&[
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]);
}

#[test]
fn stream_json_input_ending_before_a_user_message() {
    let w = Sandbox::scripted();
    let args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ];
    let input = format!("{CONTROL}\n{{\"type\":\"control_response\"}}");
    let (shim, direct) = both(&w, &args, &[("FAKE_ECHO_STDIN", "1")], || {
        Input::Bytes(input.clone().into_bytes())
    });
    assert_eq!(direct.stdout, input.as_bytes());
    assert_same(&shim, &direct);
}

// ---- processes that outlive a call (`runner::detached`) ----------------------------

mod detached {
    use claude_shim::runner::detached::{confine, Role, Settings};
    use std::os::fd::AsRawFd;
    use std::process::Command;

    /// The descriptors a child holds, as `ls /proc/self/fd` sees them (the
    /// listing's own directory fd aside).
    fn child_fds(cmd: &mut Command) -> Vec<String> {
        let out = cmd.output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn only_stdio_reaches_a_confined_child() {
        // An inheritable pipe, as bash's process substitution hands down; at
        // fds above 3, which sh's own listing may take once they are closed
        // (a test process with only fds 0-2 open gets 3 and 4 from pipe()).
        let (r, w) = nix::unistd::pipe().unwrap();
        let high = |fd: std::os::fd::OwnedFd| {
            let n = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD(20)).unwrap();
            // SAFETY: F_DUPFD returned a new descriptor that nothing else owns.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(n) }
        };
        let (r, w) = (high(r), high(w));
        for fd in [&r, &w] {
            nix::fcntl::fcntl(
                fd.as_raw_fd(),
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
            )
            .unwrap();
        }
        let script = "for f in /proc/$$/fd/*; do echo ${f##*/}; done";
        let mut plain = Command::new("sh");
        plain.args(["-c", script]);
        let leaked = child_fds(&mut plain);
        assert!(leaked.contains(&r.as_raw_fd().to_string()), "{leaked:?}");
        let mut confined = Command::new("sh");
        confined.args(["-c", script]);
        confine(&mut confined, Role::Cli(Settings::of_this_process()));
        let fds = child_fds(&mut confined);
        // 0-2, and the directory sh lists from (its own, not inherited).
        assert!(
            !fds.contains(&r.as_raw_fd().to_string()) && !fds.contains(&w.as_raw_fd().to_string()),
            "{fds:?}"
        );
        assert!(
            fds.iter().all(|f| f.parse::<i32>().unwrap() <= 3),
            "{fds:?}"
        );
    }

    #[test]
    fn a_confined_child_gets_the_callers_umask_and_limits() {
        let mut s = Settings::of_this_process();
        s.umask = 0o027;
        for l in &mut s.limits {
            if l.0 == nix::libc::RLIMIT_FSIZE as i32 {
                l.1 = 4096.min(l.2);
            }
        }
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "umask; ulimit -f"]);
        confine(&mut cmd, Role::Cli(s));
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "0027");
        // ulimit -f counts 512-byte blocks.
        assert_eq!(lines[1], "8");
    }
}
