//! Pass-through (the shim execs the real claude), locating the real binary,
//! the recursion guard, the bypass switch, a terminal, and the management face.
//! The real claude is the fake CLI (`tests/fixtures/fake-claude/`).

use crate::support::process::*;
use crate::support::sandbox::*;
use crate::support::shim_exe;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// No `-p` (from a program, with stdout a pipe, the CLI prints: a managed
/// call), --version and a subcommand: each as the direct call ends.
const PASS_THROUGH: &[&[&str]] = &[&["hello"], &["--version"], &["mcp", "list"], &[]];

#[test]
fn every_end_of_a_passed_through_call_is_the_callers() {
    for args in PASS_THROUGH {
        every_end_is_the_same(args, &[("FAKE_ON_VERSION", "1")]);
    }
}

/// Pass-through replaces the shim: same pid, argv exactly as given, stdin
/// untouched (still readable by the real CLI).
#[test]
fn pass_through_is_an_exec_with_argv_unchanged() {
    let w = Sandbox::scripted();
    let (argv, pid) = (w.file("argv"), w.file("pid"));
    let args = [
        "--model",
        "m",
        "--weird-unknown-flag",
        "hello world",
        "",
        "ünï",
    ];
    let mut cmd = w.shim();
    cmd.args(args)
        .env("FAKE_ARGV_OUT", &argv)
        .env("FAKE_PID_OUT", &pid)
        .env("FAKE_ECHO_STDIN", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let shim_pid = child.id();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"typed \xff input").unwrap();
    }
    let out = reader(child.stdout.take());
    let status = wait_timeout(&mut child, TIMEOUT).expect("exits");
    assert!(status.success());
    assert_eq!(out.join().unwrap(), b"typed \xff input");
    let seen = recorded_argv(&argv);
    assert_eq!(seen, args.map(std::ffi::OsString::from).to_vec());
    let fake_pid: u32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(fake_pid, shim_pid, "pass-through must exec, not spawn");
}

#[test]
fn sigterm_to_shim_in_pass_through_is_the_childs() {
    let w = Sandbox::scripted();
    let marker = w.file("marker");
    let mut cmd = w.shim();
    cmd.arg("hello")
        .env("FAKE_TRAP", "TERM")
        .env("FAKE_MARKER", &marker)
        .env("FAKE_READY", "1")
        .env("FAKE_SLEEP", "30")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let mut out = Tap::new(child.stdout.take().unwrap());
    out.expect(b"ready\n", Duration::from_secs(10));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("kill");
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("exits");
    assert_eq!((status.code(), status.signal()), (Some(143), None));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "TERM\n");
}

#[test]
fn bypass_execs_with_argv_unchanged() {
    let w = Sandbox::scripted();
    let (argv, pid) = (w.file("argv"), w.file("pid"));
    // A managed invocation, which the shim would otherwise run itself.
    let args = ["-p", "--output-format", "json", "hello"];
    let mut cmd = w.shim();
    cmd.args(args)
        .env("CLAUDE_SHIM_BYPASS", "1")
        .env("FAKE_ARGV_OUT", &argv)
        .env("FAKE_PID_OUT", &pid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    let shim_pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        recorded_argv(&argv),
        args.map(std::ffi::OsString::from).to_vec()
    );
    let fake_pid: u32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(fake_pid, shim_pid, "bypass must exec");
    assert!(
        std::fs::read_dir(&w.shim_home).unwrap().next().is_none(),
        "bypass must not touch the data dir"
    );
}

#[test]
fn interactive_on_a_terminal_inherits_the_tty() {
    let run_on_pty = |mut cmd: Command| {
        cmd.arg("hello").env("FAKE_TTY", "1").env("FAKE_EXIT", "7");
        let (mut child, master) = spawn_on_pty(cmd);
        let out = Tap::new(master);
        let status = wait_timeout(&mut child, TIMEOUT).expect("exits");
        (status.code(), out.finish(Duration::from_secs(10)))
    };
    let w = Sandbox::scripted();
    let shim = run_on_pty(w.shim());
    let direct = run_on_pty(w.direct(NO_ARGS));
    assert_eq!(
        String::from_utf8_lossy(&direct.1),
        "stdin=tty stdout=tty stderr=tty\r\n",
        "the fake itself"
    );
    assert_eq!(
        String::from_utf8_lossy(&shim.1),
        String::from_utf8_lossy(&direct.1)
    );
    assert_eq!(shim.0, Some(7));
    assert_eq!(shim.0, direct.0);
}

// ---------------------------------------------------------------------------
// Finding the real claude, and refusing to find ourselves.

/// Why `ran` is not a refusal with a clear message, if it is not. (A shim
/// that looped instead would never end: `run`'s hang guard fails it.)
fn refusal_problem(ran: &Ran, what: &str) -> Option<String> {
    let problem = if ran.status.code().is_none() || ran.status.success() {
        format!("must fail with an exit code, got {:?}", ran.status)
    } else if !ran.err().starts_with("claude-shim: ") {
        "want a clear `claude-shim:` message on stderr".to_owned()
    } else {
        return None;
    };
    Some(format!(
        "{what}: {problem}\n    status {:?}, stderr {:?}, stdout {:?}",
        ran.status,
        ran.err(),
        ran.out()
    ))
}

#[track_caller]
fn assert_all_refused(problems: Vec<Option<String>>) {
    let problems: Vec<String> = problems.into_iter().flatten().collect();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

const GUARD_CASES: &[&[&str]] = &[&["-p", "hello"], &["--version"], &["hello"]];

#[test]
fn recursion_guard_real_is_the_shim_link() {
    let mut problems = Vec::new();
    for args in GUARD_CASES {
        let w = Sandbox::scripted();
        let mut cmd = w.shim();
        cmd.args(*args).env("CLAUDE_SHIM_REAL", &w.claude);
        let ran = run(cmd, Input::Null);
        problems.push(refusal_problem(
            &ran,
            &format!("CLAUDE_SHIM_REAL=<shim link>, {args:?}"),
        ));
    }
    assert_all_refused(problems);
}

#[test]
fn recursion_guard_real_is_the_shim_binary() {
    let mut problems = Vec::new();
    for args in GUARD_CASES {
        let w = Sandbox::scripted();
        let mut cmd = w.shim();
        cmd.args(*args).env("CLAUDE_SHIM_REAL", shim_exe());
        let ran = run(cmd, Input::Null);
        problems.push(refusal_problem(
            &ran,
            &format!("CLAUDE_SHIM_REAL=<claude-shim binary>, {args:?}"),
        ));
    }
    assert_all_refused(problems);
}

#[test]
fn recursion_guard_copy_of_the_shim_on_path() {
    let w = Sandbox::scripted();
    let other = w.file("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(shim_exe(), other.join("claude")).unwrap();
    std::fs::set_permissions(other.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths([&w.bin, &other]).unwrap();
    let mut problems = Vec::new();
    for args in GUARD_CASES {
        let mut cmd = w.shim();
        cmd.args(*args).env("PATH", &path);
        let ran = run(cmd, Input::Null);
        problems.push(refusal_problem(
            &ran,
            &format!("a copy of the shim on PATH, {args:?}"),
        ));
    }
    assert_all_refused(problems);
}

#[test]
fn no_real_claude_on_path() {
    for args in GUARD_CASES {
        let w = Sandbox::scripted();
        let mut cmd = w.shim();
        cmd.args(*args).env("PATH", &w.bin);
        let ran = run(cmd, Input::Null);
        assert_eq!(ran.how(), (Some(127), None), "{args:?}: {}", ran.err());
        assert!(
            ran.err()
                .starts_with("claude-shim: cannot find the real claude"),
            "{args:?}: {:?}",
            ran.err()
        );
        assert!(ran.stdout.is_empty());
    }
}

#[test]
fn real_override_naming_nothing() {
    let w = Sandbox::scripted();
    let mut cmd = w.shim();
    cmd.args(["-p", "hello"])
        .env("CLAUDE_SHIM_REAL", w.file("missing"));
    let ran = run(cmd, Input::Null);
    assert_eq!(ran.how(), (Some(127), None), "{}", ran.err());
    assert!(
        ran.err()
            .starts_with("claude-shim: cannot find the real claude"),
        "{:?}",
        ran.err()
    );
}

#[test]
fn real_claude_found_on_path_after_the_shim() {
    let w = Sandbox::scripted();
    let real_dir = w.file("real");
    std::fs::create_dir(&real_dir).unwrap();
    std::os::unix::fs::symlink(FAKE, real_dir.join("claude")).unwrap();
    let mut dirs = vec![w.bin.clone(), real_dir];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(dirs).unwrap();
    for args in [&["-p", "hello"][..], &["hello"]] {
        let mut cmd = w.shim();
        cmd.args(args)
            .env("PATH", &path)
            .env("FAKE_STDOUT", "from the fake\n")
            .env("FAKE_EXIT", "3");
        let ran = run(cmd, Input::Null);
        assert_eq!(ran.how(), (Some(3), None), "{args:?}: {}", ran.err());
        assert_eq!(ran.out(), "from the fake\n");
    }
}

// ---------------------------------------------------------------------------
// The management face.

/// Every `CLAUDE_SHIM_*` name that appears in the sources.
fn env_vars_in_sources() -> Vec<String> {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, _) in text.match_indices("\"CLAUDE_SHIM_") {
                    let name: String = text[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    if !found.contains(&name) {
                        found.push(name);
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    found
}

#[test]
fn manager_help_lists_every_env_var() {
    let w = Sandbox::scripted();
    let mut cmd = w.manager();
    cmd.arg("--help");
    let ran = run(cmd, Input::Null);
    assert_eq!(ran.how(), (Some(0), None), "{}", ran.err());
    let help = ran.out();
    let vars = env_vars_in_sources();
    assert!(vars.len() >= 5, "found only {vars:?} in src/");
    assert!(
        !help.contains("CLAUDE_SHIM_TEST_"),
        "test hooks are no knob for people:\n{help}"
    );
    // The recursion guard is set by the shim for its children, and
    // CLAUDE_SHIM_TEST_* are hooks for this suite: neither is a knob.
    for var in vars
        .iter()
        .filter(|v| *v != "CLAUDE_SHIM_GUARD" && !v.starts_with("CLAUDE_SHIM_TEST_"))
    {
        assert!(
            help.contains(var.as_str()),
            "{var} missing from --help:\n{help}"
        );
    }
}

#[test]
fn manager_run_behaves_as_the_shim() {
    let w = Sandbox::scripted();
    let argv = w.file("argv");
    let env = [("FAKE_STDOUT", "hi there\n"), ("FAKE_EXIT", "5")];
    let mut cmd = w.manager();
    cmd.args(["run", "--", "-p", "hello"])
        .env("FAKE_ARGV_OUT", &argv);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let shim = run(cmd, Input::Null);
    let mut direct = w.direct(NO_ARGS);
    direct.args(["-p", "hello"]);
    for (k, v) in env {
        direct.env(k, v);
    }
    let direct = run(direct, Input::Null);
    assert_same(&shim, &direct);
    let seen = recorded_argv(&argv);
    assert_in_order(&seen, &["-p", "hello"]);
    assert_ne!(
        seen.first().map(|a| a.as_os_str()),
        Some("--".as_ref()),
        "{seen:?}"
    );

    // Pass-through through `run` too: exact argv (a subcommand).
    let mut cmd = w.manager();
    cmd.args(["run", "--", "mcp", "list", "--model", "m"])
        .env("FAKE_ARGV_OUT", &argv);
    let ran = run(cmd, Input::Null);
    assert!(ran.status.success(), "{}", ran.err());
    assert_eq!(
        recorded_argv(&argv),
        ["mcp", "list", "--model", "m"].map(std::ffi::OsString::from)
    );
    // A call without `-p` from a program prints (stdout is a pipe): managed,
    // as the shim manages it.
    cmd = w.manager();
    cmd.args(["run", "--", "hello", "--model", "m"])
        .env("FAKE_ARGV_OUT", &argv);
    let ran = run(cmd, Input::Null);
    assert!(ran.status.success(), "{}", ran.err());
    let seen = recorded_argv(&argv);
    assert_eq!(
        seen.first().map(|a| a.as_os_str()),
        Some("--session-id".as_ref()),
        "{seen:?}"
    );
    assert_in_order(&seen, &["hello", "--model", "m"]);
}
