//! `claude-shim status`, and what `doctor` and `status` know about the
//! shell that runs them: run from inside bash, zsh and fish after the real
//! init scripts (PATH mode and alias mode, each marking itself in
//! CLAUDE_SHIM_MODE), with an rc file that already holds the init line, and
//! after `init` without `install` (where the shell may remember the real
//! claude).

use crate::support::{ok, run, shell, Input, Sandbox};
use serde_json::Value;
use std::process::Command;

/// `script` in `sh`, without the user's rc files, with the sandbox's
/// environment and `claude-shim` and the real claude on PATH.
fn in_shell(s: &Sandbox, sh: &str, script: &str) -> Command {
    let mut cmd = Command::new(shell(sh));
    s.env(&mut cmd);
    cmd.env("PATH", s.path_with(&[&s.tools, &s.real_bin]))
        .env("SHELL", shell(sh));
    match sh {
        "fish" => cmd.args(["--no-config", "-c", script]),
        "zsh" => cmd.args(["-f", "-c", script]),
        _ => cmd.args(["--norc", "--noprofile", "-c", script]),
    };
    cmd
}

fn source(sh: &str, mode: &str) -> String {
    match sh {
        "fish" => format!("claude-shim init fish --mode {mode} | source"),
        _ => format!("eval \"$(claude-shim init {sh} --mode {mode})\""),
    }
}

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn each_shell_after_its_init_script_is_active_in_that_mode() {
    for sh in ["bash", "zsh", "fish"] {
        for mode in ["path", "alias"] {
            let s = Sandbox::first_use();
            if mode == "path" {
                ok(s.cli(&["install"]));
            }
            let script = format!(
                "{}; claude-shim status --json; claude-shim doctor",
                source(sh, mode)
            );
            let out = ok(in_shell(&s, sh, &script));
            let (status, doctor) = out.split_at(out.find("\n}\n").map_or(0, |i| i + 3));
            let v = json(status);
            assert_eq!(v["active"], true, "{sh} {mode}: {out}");
            assert_eq!(v["mode"], mode, "{sh} {mode}: {out}");
            assert_eq!(
                v["real"],
                s.real_claude().to_string_lossy().as_ref(),
                "{sh} {mode}"
            );
            assert_eq!(v["real_version"], "2.1.330", "{sh} {mode}");
            assert!(
                doctor.contains("no problems found"),
                "{sh} {mode}: {doctor}"
            );
        }
    }
}

#[test]
fn not_set_up_is_said_plainly_with_the_fix() {
    let s = Sandbox::first_use();
    let mut cmd = s.cli(&["status"]);
    cmd.env("PATH", s.path_with(&[&s.real_bin]));
    let out = ok(cmd);
    assert!(out.contains("active       no:"), "{out}");
    assert!(out.contains("fix: run `claude-shim install`"), "{out}");
    assert!(out.contains("claude-shim doctor"), "{out}");
    assert!(out.contains("last turn    none recorded"), "{out}");
    assert!(
        !s.shim_home.join("shim.db").exists(),
        "status creates nothing"
    );
}

#[test]
fn an_rc_that_already_runs_init_is_not_told_to_add_it_again() {
    let rcs = [
        ("bash", ".bashrc", "eval \"$(claude-shim init bash)\"\n"),
        ("zsh", ".zshrc", "eval \"$(claude-shim init zsh)\"\n"),
        (
            "fish",
            ".config/fish/config.fish",
            "claude-shim init fish | source\n",
        ),
    ];
    for (sh, rc, line) in rcs {
        let s = Sandbox::first_use();
        ok(s.cli(&["install"]));
        let file = s.home.join(rc);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("# mine\n{line}")).unwrap();
        // A shell started before the line was added: the real claude first.
        let mut cmd = s.cli(&["doctor"]);
        cmd.env("PATH", s.path_with(&[&s.real_bin]))
            .env("SHELL", format!("/usr/bin/{sh}"));
        let o = run(cmd, Input::Null);
        let out = o.out();
        assert_eq!(o.status.code(), Some(1), "{sh}: {out}");
        assert!(out.contains(&file.display().to_string()), "{sh}: {out}");
        assert!(out.contains("open a new shell"), "{sh}: {out}");
        assert!(
            !out.contains("add `"),
            "{sh}: told to add the line again: {out}"
        );
    }
}

#[test]
fn init_without_install_says_install_then_forget_the_remembered_claude() {
    for (sh, rehash) in [("bash", "`hash -r`"), ("zsh", "`rehash`")] {
        let s = Sandbox::first_use();
        let script = format!("{}; claude-shim doctor", source(sh, "path"));
        let o = run(in_shell(&s, sh, &script), Input::Null);
        let out = o.out();
        assert_eq!(o.status.code(), Some(1), "{sh}: {out}");
        assert!(out.contains("does not exist"), "{sh}: {out}");
        assert!(
            out.contains(&format!("run `claude-shim install`, then {rehash}")),
            "{sh}: {out}"
        );
    }
}

#[test]
fn counts_pins_resumed_turns_and_names_the_last_turn() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let mut turn = Command::new(s.shim_dir().join("claude"));
    s.env(&mut turn);
    turn.env("CLAUDE_SHIM_REAL", s.real_claude()).args([
        "-p",
        "hello there",
        "--output-format",
        "json",
    ]);
    ok(turn);
    let mut cmd = s.cli(&["status", "--json"]);
    cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.real_bin]));
    let v = json(&ok(cmd));
    assert_eq!(v["mode"], "path", "{v}");
    assert_eq!(v["pinned"], 1, "{v}");
    assert_eq!(v["week"]["turns"], 1, "{v}");
    assert_eq!(v["last_turn"]["kind"], "fresh", "{v}");
    assert!(
        v["last_turn"]["why"]
            .as_str()
            .is_some_and(|w| !w.is_empty()),
        "{v}"
    );

    let mut cmd = s.cli(&["status"]);
    cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.real_bin]));
    let out = ok(cmd);
    assert!(out.contains("active       yes, PATH mode"), "{out}");
    assert!(out.contains("pinned       1 conversation\n"), "{out}");
    assert!(
        out.contains("this week    0 of 1 managed turn resumed"),
        "{out}"
    );
    assert!(out.contains("last turn    "), "{out}");
    assert!(!out.contains('\x1b'), "plain when piped: {out:?}");
}

#[test]
fn a_damaged_database_still_shows_the_rest_and_points_to_doctor() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let db = s.store().path.clone();
    std::fs::write(&db, vec![0x42u8; 8192]).unwrap();
    // SQLite would still find the schema in the write-ahead log.
    for side in ["shim.db-wal", "shim.db-shm"] {
        let _ = std::fs::remove_file(s.shim_home.join(side));
    }
    let mut cmd = s.cli(&["status"]);
    cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.real_bin]));
    let out = ok(cmd);
    assert!(out.contains("active       yes, PATH mode"), "{out}");
    assert!(out.contains("database     unreadable"), "{out}");
    assert!(out.contains("claude-shim doctor"), "{out}");
}
