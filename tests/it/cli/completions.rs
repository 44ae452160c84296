//! `claude-shim completions <shell>` prints scripts each shell accepts, naming
//! every subcommand; `--help` lists every environment variable.

use crate::support::{ok, run, shell, Input, Sandbox};
use std::process::Command;

const SUBCOMMANDS: &[&str] = &[
    "run",
    "install",
    "uninstall",
    "init",
    "doctor",
    "stats",
    "pins",
    "forget",
    "gc",
    "completions",
];

#[test]
fn completion_scripts_load_in_their_shells() {
    let s = Sandbox::first_use();
    for (sh, check) in [("bash", "-n"), ("zsh", "-n"), ("fish", "--no-execute")] {
        let script = ok(s.cli(&["completions", sh]));
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{sh} completion lacks {sub}");
        }
        let file = s.root.join(format!("completion.{sh}"));
        std::fs::write(&file, &script).unwrap();
        let mut cmd = Command::new(shell(sh));
        s.env(&mut cmd);
        cmd.arg(check).arg(&file);
        let o = run(cmd, Input::Null);
        assert!(o.status.success(), "{sh}: {}{}", o.out(), o.err());
    }
    // bash: sourcing it registers the completion for claude-shim.
    let mut cmd = Command::new(shell("bash"));
    s.env(&mut cmd);
    cmd.args([
        "--norc",
        "-c",
        "source \"$1\" && complete -p claude-shim",
        "_",
    ])
    .arg(s.root.join("completion.bash"));
    assert!(ok(cmd).contains("claude-shim"));
}

#[test]
fn help_lists_every_subcommand_and_env_var() {
    let s = Sandbox::first_use();
    let help = ok(s.cli(&["--help"]));
    for (name, _) in claude_shim::env::ALL {
        assert!(help.contains(name), "--help lacks {name}");
    }
    for sub in SUBCOMMANDS {
        assert!(help.contains(&format!("  {sub} ")), "--help lacks {sub}");
    }
}
