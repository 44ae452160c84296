//! No panic on a closed pipe, anywhere: every subcommand runs with its
//! stdout a pipe whose reader is already gone (`claude-shim … | true` at
//! its most deterministic) and must end quietly with status 0, as ripgrep
//! and zoxide do: nothing on stderr, no panic. `run` is the shim: there the
//! status is the real claude's own, exactly as without the shim.

use crate::support::process::{reader, wait_timeout, TIMEOUT};
use crate::support::{ok, Ran, Sandbox};
use clap::CommandFactory;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Run with stdout a pipe nobody reads (under the harness's hang guard),
/// stdin from `stdin` or `/dev/null`.
fn closed_stdout(mut cmd: Command, stdin: Option<&Path>) -> Ran {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe");
    drop(read);
    cmd.stdin(match stdin {
        Some(file) => Stdio::from(std::fs::File::open(file).expect("stdin file")),
        None => Stdio::null(),
    })
    .stdout(Stdio::from(write))
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    // Only the child holds the write end now.
    drop(cmd);
    let stderr = reader(child.stderr.take());
    let status = wait_timeout(&mut child, TIMEOUT)
        .unwrap_or_else(|| panic!("hung for {TIMEOUT:?} with its stdout closed"));
    Ran {
        status,
        stdout: Vec::new(),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: Duration::ZERO,
    }
}

/// A sandbox with something to show: installed, one turn through the shim
/// (a run and a pin), a transcript for `explain`, a messages JSON for
/// `route-key` (its stdin).
fn prepared() -> Sandbox {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let mut turn = Command::new(s.shim_dir().join("claude"));
    s.env(&mut turn);
    turn.env("CLAUDE_SHIM_REAL", s.real_claude())
        .env("FAKE_REPLY", "Hello from the fake.")
        .args(["-p", "hello there", "--output-format", "json"]);
    ok(turn);
    std::fs::write(
        s.work.join("transcript.txt"),
        "Human: hi\n\nAssistant: Hello from the fake.\n\nHuman: and now?\n",
    )
    .unwrap();
    std::fs::write(
        s.work.join(MESSAGES),
        r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello"}]}"#,
    )
    .unwrap();
    s
}

/// What `route-key` reads on stdin, in the work directory.
const MESSAGES: &str = "messages.json";

/// Arguments that make each subcommand print something.
fn cases() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("explain", vec!["explain", "transcript.txt"]),
        ("install", vec!["install"]),
        ("uninstall", vec!["uninstall"]),
        ("init", vec!["init", "bash"]),
        ("doctor", vec!["doctor"]),
        ("status", vec!["status"]),
        ("stats", vec!["stats"]),
        ("log", vec!["log"]),
        ("metrics", vec!["metrics"]),
        ("pins", vec!["pins"]),
        ("forget", vec!["forget", "--all"]),
        ("gc", vec!["gc", "--dry-run"]),
        ("completions", vec!["completions", "bash"]),
        ("warm", vec!["warm"]),
        ("sessions", vec!["sessions", "--all"]),
        ("route-key", vec!["route-key"]),
        ("help", vec!["help"]),
    ]
}

#[test]
fn every_subcommand_ends_quietly_when_the_reader_is_gone() {
    let cases = cases();
    let covered: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
    // Hidden ones (the warm keeper) are not for people and print nothing.
    let visible = claude_shim::cli::Cli::command();
    for sub in visible.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        assert!(
            name == "run" || covered.contains(&name),
            "add `{name}` to this table"
        );
    }
    let mut extra = vec![
        ("--help", vec!["--help"]),
        ("--version", vec!["--version"]),
        ("log --json", vec!["log", "--json"]),
        ("status --json", vec!["status", "--json"]),
        ("stats --json", vec!["stats", "--json"]),
        ("sessions --json", vec!["sessions", "--json"]),
        ("route-key --json", vec!["route-key", "--json"]),
        ("gc --dry-run --json", vec!["gc", "--dry-run", "--json"]),
        (
            "forget --json",
            vec!["forget", "--cwd", "/nowhere", "--json"],
        ),
        (
            "explain --json",
            vec!["explain", "--json", "transcript.txt"],
        ),
        ("completions zsh", vec!["completions", "zsh"]),
        ("completions fish", vec!["completions", "fish"]),
    ];
    let mut all = cases;
    all.append(&mut extra);
    for (name, args) in all {
        let s = prepared();
        let mut cmd = s.cli(&args);
        cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.tools, &s.real_bin]));
        let stdin = name.starts_with("route-key").then(|| s.work.join(MESSAGES));
        let o = closed_stdout(cmd, stdin.as_deref());
        assert_eq!(
            (o.status.code(), o.err()),
            (Some(0), String::new()),
            "`claude-shim {name}` with stdout closed"
        );
    }
}

#[test]
fn run_leaves_a_closed_pipe_to_the_real_claude() {
    let s = prepared();
    let mut direct = Command::new(s.real_claude());
    s.env(&mut direct);
    direct.arg("--version");
    let direct = closed_stdout(direct, None);
    let mut shim = s.cli(&["run", "--", "--version"]);
    shim.env("CLAUDE_SHIM_REAL", s.real_claude());
    let through = closed_stdout(shim, None);
    assert_eq!(
        (through.status.code(), through.status.signal()),
        (direct.status.code(), direct.status.signal()),
        "as without the shim: {}",
        through.err()
    );
    assert!(!through.err().contains("panicked"), "{}", through.err());
}

/// The status is doctor's verdict: a reader that stops early (`doctor |
/// head -1`) must not make a broken set-up look fine.
#[test]
fn doctor_fails_on_a_broken_set_up_even_when_the_reader_is_gone() {
    let s = prepared();
    // No real claude anywhere on PATH.
    let broken = |args: &[&str]| {
        let mut cmd = s.cli(&[&["doctor"], args].concat());
        cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.tools]));
        cmd
    };
    let o = closed_stdout(broken(&[]), None);
    assert_eq!(o.status.code(), Some(1), "{}", o.err());
    assert!(o.err().contains("problem(s) found"), "{}", o.err());
    assert!(!o.err().contains("above"), "nothing was shown: {}", o.err());
    let o = closed_stdout(broken(&["--json"]), None);
    assert_eq!(o.status.code(), Some(1), "{}", o.err());
}
