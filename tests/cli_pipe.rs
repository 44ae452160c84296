//! No panic on a closed pipe, anywhere: every subcommand runs with its
//! stdout a pipe whose reader is already gone (`claude-shim … | true` at
//! its most deterministic) and must end quietly with status 0, as ripgrep
//! and zoxide do: nothing on stderr, no panic. `run` is the shim: there the
//! status is the real claude's own, exactly as without the shim.

mod cli_support;

use clap::CommandFactory;
use cli_support::{ok, stderr, Sandbox};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

/// Run with stdout a pipe nobody reads.
fn closed_stdout(mut cmd: Command) -> Output {
    let (read, write) = nix::unistd::pipe().expect("pipe");
    drop(read);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped());
    cmd.output().expect("spawn")
}

/// A sandbox with something to show: installed, one turn through the shim
/// (a run and a pin), a transcript for `explain`.
fn prepared() -> Sandbox {
    let s = Sandbox::new();
    ok(s.cli(&["install"]));
    let mut turn = Command::new(s.shim_dir().join("claude"));
    s.env(&mut turn);
    turn.env("CLAUDE_SHIM_REAL", s.fake())
        .args(["-p", "hello there", "--output-format", "json"]);
    ok(turn);
    std::fs::write(
        s.root.join("transcript.txt"),
        "Human: hi\n\nAssistant: Hello from the fake.\n\nHuman: and now?\n",
    )
    .unwrap();
    s
}

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
        ("pins", vec!["pins"]),
        ("forget", vec!["forget", "--all"]),
        ("gc", vec!["gc", "--dry-run"]),
        ("completions", vec!["completions", "bash"]),
        ("warm", vec!["warm"]),
        ("sessions", vec!["sessions", "--all"]),
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
        cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.tools, &s.real_dir]));
        let o = closed_stdout(cmd);
        assert_eq!(
            (o.status.code(), stderr(&o)),
            (Some(0), String::new()),
            "`claude-shim {name}` with stdout closed"
        );
    }
}

#[test]
fn run_leaves_a_closed_pipe_to_the_real_claude() {
    let s = prepared();
    let mut direct = Command::new(s.fake());
    s.env(&mut direct);
    direct.arg("--version");
    let direct = closed_stdout(direct);
    let mut shim = s.cli(&["run", "--", "--version"]);
    shim.env("CLAUDE_SHIM_REAL", s.fake());
    let through = closed_stdout(shim);
    assert_eq!(
        (through.status.code(), through.status.signal()),
        (direct.status.code(), direct.status.signal()),
        "as without the shim: {}",
        stderr(&through)
    );
    assert!(
        !stderr(&through).contains("panicked"),
        "{}",
        stderr(&through)
    );
}
