//! `claude-shim init <shell>`: the printed scripts run under bash, zsh and
//! fish (each must be installed: a missing shell fails), pass shellcheck or
//! the shell's own syntax check, put the shim directory first on PATH exactly
//! once however often they are sourced, and keep claude's exit status.

use crate::support::{ok, run, shell, Input, Sandbox};
use std::process::Command;

/// A script that sources `init` twice, then prints PATH and where `claude` is.
fn twice(sh: &str, extra: &str) -> String {
    match sh {
        "fish" => format!(
            "claude-shim init fish {extra} | source; claude-shim init fish {extra} | source; \
             printf '%s\\n' \"$PATH\"; command -v claude"
        ),
        _ => format!(
            "eval \"$(claude-shim init {sh} {extra})\"; eval \"$(claude-shim init {sh} {extra})\"; \
             printf '%s\\n' \"$PATH\"; command -v claude"
        ),
    }
}

/// Run `script` in `sh` with the sandbox's environment and PATH.
fn in_shell(s: &Sandbox, sh: &str, path: &str, script: &str) -> Command {
    let mut cmd = Command::new(shell(sh));
    s.env(&mut cmd);
    cmd.env("PATH", path);
    match sh {
        "fish" => cmd.args(["--no-config", "-c", script]),
        "zsh" => cmd.args(["-f", "-c", script]),
        _ => cmd.args(["--norc", "--noprofile", "-c", script]),
    };
    cmd
}

#[track_caller]
fn check_path_mode(s: &Sandbox, sh: &str) {
    ok(s.cli(&["install"]));
    let dir = s.shim_dir().to_string_lossy().into_owned();
    // The shim dir already sits on PATH, behind the real claude: sourcing
    // moves it to the front instead of adding a second copy.
    let path = format!("{}:{}:{dir}", s.tools.display(), s.real_bin.display());
    let out = ok(in_shell(s, sh, &path, &twice(sh, "")));
    let mut lines = out.lines();
    let new_path = lines.next().unwrap_or_default();
    let entries: Vec<&str> = new_path.split(':').collect();
    assert_eq!(
        entries,
        [
            dir.as_str(),
            &s.tools.to_string_lossy(),
            &s.real_bin.to_string_lossy()
        ],
        "{sh}: PATH after sourcing twice"
    );
    assert_eq!(
        lines.next(),
        Some(format!("{dir}/claude").as_str()),
        "{sh}: claude resolves to the shim"
    );
}

#[test]
fn path_mode_bash() {
    check_path_mode(&Sandbox::first_use(), "bash");
}

#[test]
fn path_mode_zsh() {
    check_path_mode(&Sandbox::first_use(), "zsh");
}

#[test]
fn path_mode_fish() {
    check_path_mode(&Sandbox::first_use(), "fish");
}

#[test]
fn path_mode_survives_an_awkward_directory_name_in_every_shell() {
    for sh in ["bash", "zsh", "fish"] {
        let s = Sandbox::with_data_name("it's a $dir \\ *");
        check_path_mode(&s, sh);
    }
}

/// `claude mcp list` is a pass-through: the fake (as the real claude) prints
/// its args and exits with FAKE_EXIT; the shell reports the status it saw.
fn status_script(sh: &str, mode: &str) -> String {
    let status = if sh == "fish" { "$status" } else { "$?" };
    let load = match sh {
        "fish" => format!("claude-shim init fish --mode {mode} | source"),
        _ => format!("eval \"$(claude-shim init {sh} --mode {mode})\""),
    };
    format!(
        "{load}; claude mcp list; echo \"status=${status_name}\"; true",
        status_name = &status[1..]
    )
}

#[track_caller]
fn check_status(sh: &str, mode: &str) {
    let s = Sandbox::first_use();
    if mode == "path" {
        ok(s.cli(&["install"]));
    }
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        s.tools.display(),
        s.real_bin.display()
    );
    for code in ["0", "3"] {
        let mut cmd = in_shell(&s, sh, &path, &status_script(sh, mode));
        cmd.env("FAKE_EXIT", code);
        if mode == "alias" {
            cmd.env("CLAUDE_SHIM_REAL", s.real_claude());
        }
        let o = run(cmd, Input::Null);
        let out = o.out();
        assert!(
            out.contains("args: mcp list"),
            "{sh} {mode}: {out}\n{}",
            o.err()
        );
        assert!(
            out.contains(&format!("status={code}")),
            "{sh} {mode}: exit status {code} lost: {out}\n{}",
            o.err()
        );
    }
}

#[test]
fn exit_status_is_kept_through_the_alias_bash() {
    check_status("bash", "alias");
}

#[test]
fn exit_status_is_kept_through_the_alias_zsh() {
    check_status("zsh", "alias");
}

#[test]
fn exit_status_is_kept_through_the_alias_fish() {
    check_status("fish", "alias");
}

#[test]
fn exit_status_is_kept_on_path() {
    for sh in ["bash", "zsh", "fish"] {
        check_status(sh, "path");
    }
}

#[test]
fn alias_mode_replaces_an_old_alias_and_leaves_path_alone() {
    let s = Sandbox::first_use();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        s.tools.display(),
        s.real_bin.display()
    );
    let script = "shopt -s expand_aliases\nalias claude='echo OLD-ALIAS'\n\
                  eval \"$(claude-shim init bash --mode alias)\"\n\
                  claude mcp list\nprintf '%s\\n' \"$PATH\"";
    let mut cmd = in_shell(&s, "bash", &path, script);
    cmd.env("CLAUDE_SHIM_REAL", s.real_claude());
    let out = ok(cmd);
    assert!(!out.contains("OLD-ALIAS"), "{out}");
    assert!(out.contains("args: mcp list"), "{out}");
    assert!(out.ends_with(&format!("{path}\n")), "PATH unchanged: {out}");
}

#[test]
fn printed_scripts_pass_shellcheck_and_syntax_checks() {
    let s = Sandbox::with_data_name("it's a $dir");
    let shellcheck = shell("shellcheck");
    for mode in ["path", "alias"] {
        for sh in ["bash", "zsh", "fish"] {
            let script = ok(s.cli(&["init", sh, "--mode", mode]));
            let file = s.root.join(format!("init.{mode}.{sh}"));
            std::fs::write(&file, &script).unwrap();
            let mut check = match sh {
                "bash" => {
                    let mut c = Command::new(&shellcheck);
                    c.arg(&file);
                    c
                }
                "zsh" => {
                    let mut c = Command::new(shell("zsh"));
                    c.args(["-n"]).arg(&file);
                    c
                }
                _ => {
                    let mut c = Command::new(shell("fish"));
                    c.arg("--no-execute").arg(&file);
                    c
                }
            };
            let o = run(
                {
                    s.env(&mut check);
                    check
                },
                Input::Null,
            );
            assert!(
                o.status.success(),
                "{sh} {mode} script fails its check:\n{}{}\n{script}",
                o.out(),
                o.err()
            );
        }
    }
    // The templates themselves, as CI checks them.
    let shell_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shell");
    let o = run(
        {
            let mut c = Command::new(&shellcheck);
            c.arg(format!("{shell_dir}/path.bash"))
                .arg(format!("{shell_dir}/alias.bash"));
            c
        },
        Input::Null,
    );
    assert!(o.status.success(), "{}", o.out());
}

#[test]
fn unknown_shell_is_refused() {
    let s = Sandbox::first_use();
    let o = run(s.cli(&["init", "tcsh"]), Input::Null);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.err().contains("bash"), "{}", o.err());
}
