//! The caller's working directory deleted under it (a CI workspace wiped, a
//! daemon sitting in a directory someone removed): the real CLI says so and
//! exits 1 for a turn, and still prints its version. Through the shim the
//! caller sees the same bytes and exit status (issue 38): finding the real
//! binary, pass-through and bypass need only PATH, and a managed turn with no
//! cwd runs as asked — warm conversations of that directory included.
//!
//! Each call runs from a directory of its own that is removed after the
//! child entered it and before it execs `claude` (so `getcwd` fails in it).

use crate::support::clients::text_reply;
use crate::support::{assert_seen_same, describe, run, ApiServer, Ran, Sandbox, World};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the real CLI (2.1.330) prints for a turn from a deleted directory.
const GONE: &str = "The current directory no longer exists (it was deleted or moved)";

/// `cmd` run from `dir` (created now), which is removed once the child is
/// in it, just before it execs.
fn from_deleted(mut cmd: Command, dir: &Path) -> Command {
    std::fs::create_dir_all(dir).expect("mkdir the doomed cwd");
    let c = CString::new(dir.as_os_str().as_bytes()).expect("no NUL in the path");
    cmd.current_dir(dir);
    // SAFETY: unlinkat(2) is async-signal-safe, and the path was made
    // before the fork (nothing is allocated in the child).
    unsafe {
        cmd.pre_exec(move || {
            use nix::unistd::{unlinkat, UnlinkatFlags};
            unlinkat(None, c.as_c_str(), UnlinkatFlags::RemoveDir).map_err(std::io::Error::from)
        });
    }
    cmd
}

/// A directory name under the sandbox root no earlier call used.
fn doomed(sb: &Sandbox) -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    sb.root
        .join(format!("gone-{}", N.fetch_add(1, Ordering::Relaxed)))
}

/// `claude ARGS` with `env`, directly and through the shim, each from a
/// deleted directory: the same exit status, stdout and stderr (sandbox
/// paths masked). Returns the direct run.
fn same_from_deleted(sb: &Sandbox, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Ran {
    let direct = run(
        from_deleted(with_env(sb.direct(args), env), &doomed(sb)),
        stdin.as_bytes(),
    );
    let shimmed = run(
        from_deleted(with_env(sb.shimmed(args), env), &doomed(sb)),
        stdin.as_bytes(),
    );
    assert_same(sb, args, &direct, &shimmed);
    direct
}

fn with_env(mut cmd: Command, env: &[(&str, &str)]) -> Command {
    cmd.envs(env.iter().copied());
    cmd
}

fn assert_same(sb: &Sandbox, args: &[&str], direct: &Ran, shimmed: &Ran) {
    let mask = |b: &[u8]| sb.mask(&String::from_utf8_lossy(b)).into_bytes();
    assert_seen_same(shimmed, direct, &mask, &|| {
        format!(
            "claude {args:?} from a deleted cwd\n=== direct ===\n{}\n=== shimmed ===\n{}",
            describe(direct),
            describe(shimmed)
        )
    });
}

/// The CLI's own refusal: its message, exit 1, nothing on stdout.
#[track_caller]
fn assert_refused(r: &Ran) {
    assert_eq!(r.status.code(), Some(1), "{}", describe(r));
    assert!(r.err().contains(GONE), "{}", describe(r));
    assert!(r.stdout.is_empty(), "{}", describe(r));
}

/// Nothing the shim did counts as a fault of its own: no errors.log.
#[track_caller]
fn assert_no_errors_log(sb: &Sandbox) {
    let log = sb.shim_home.join("errors.log");
    assert!(
        !log.exists(),
        "errors.log: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

#[test]
fn deleted_cwd_print_text_is_the_clis_own_refusal() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    // A positional prompt, and a replayed transcript on stdin.
    let r = same_from_deleted(&sb, &["-p", "Human: hello there."], &[], "");
    assert_refused(&r);
    let r = same_from_deleted(
        &sb,
        &["-p"],
        &[],
        "Human: one\n\nAssistant: two\n\nHuman: three",
    );
    assert_refused(&r);
    assert!(server.main_requests().is_empty(), "no turn reached the API");
    assert_no_errors_log(&sb);
}

#[test]
fn deleted_cwd_print_json_is_the_clis_own_refusal() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let r = same_from_deleted(&sb, &["-p", "--output-format", "json"], &[], "hello");
    assert_refused(&r);
    let args = ["-p", "--output-format", "stream-json", "--verbose"];
    let r = same_from_deleted(&sb, &args, &[], "hello");
    assert_refused(&r);
    assert_no_errors_log(&sb);
}

#[test]
fn deleted_cwd_version_still_prints_it() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let r = same_from_deleted(&sb, &["--version"], &[], "");
    assert!(r.status.success(), "{}", describe(&r));
    assert!(r.out().contains("(Claude Code)"), "{}", describe(&r));
}

#[test]
fn deleted_cwd_bypass_runs_the_real_claude() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let bypass = [("CLAUDE_SHIM_BYPASS", "1")];
    let r = same_from_deleted(&sb, &["-p", "hello"], &bypass, "");
    assert_refused(&r);
    let r = same_from_deleted(&sb, &["--version"], &bypass, "");
    assert!(r.status.success(), "{}", describe(&r));
}

/// A conversation held warm in a directory, then that directory deleted
/// under the caller: the next turn is the CLI's refusal, as directly; the
/// keeper's live CLI does not answer it, and nothing is recorded for it.
#[test]
fn deleted_cwd_warm_conversation_is_the_clis_own_refusal() {
    let mut w = World::new();
    let conv = w.sb.root.join("conv");
    std::fs::create_dir(&conv).expect("mkdir conv");
    for msg in ["first question", "second question"] {
        let mut cmd = w.sb.shimmed(["-p"]);
        cmd.current_dir(&conv);
        let out = w.send(cmd, msg, |o| text_reply(&o.stdout));
        assert!(out.status.success(), "{}\n{}", describe(&out), w.context());
    }
    assert_eq!(w.engines(), ["live", "warm"], "{}", w.context());
    let requests = w.server.main_requests().len();
    let prompt = w.prompt("third question");
    let shimmed = run(from_deleted(w.sb.shimmed(["-p"]), &conv), prompt.as_bytes());
    let direct = run(
        from_deleted(w.sb.direct(["-p"]), &doomed(&w.sb)),
        prompt.as_bytes(),
    );
    assert_same(&w.sb, &["-p"], &direct, &shimmed);
    assert_refused(&shimmed);
    assert_eq!(w.server.main_requests().len(), requests, "{}", w.context());
    assert_eq!(w.engines(), ["live", "warm"], "{}", w.context());
    assert_no_errors_log(&w.sb);
    // The directory back: the conversation goes on.
    std::fs::create_dir(&conv).expect("mkdir conv again");
    let mut cmd = w.sb.shimmed(["-p"]);
    cmd.current_dir(&conv);
    let out = w.send(cmd, "third question", |o| text_reply(&o.stdout));
    assert!(out.status.success(), "{}\n{}", describe(&out), w.context());
    w.assert_session_files_intact();
}
