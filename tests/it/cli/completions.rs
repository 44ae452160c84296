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
        // Test knobs stay out of the help people read.
        let test_knob = name.starts_with("CLAUDE_SHIM_TEST_");
        assert_eq!(help.contains(name), !test_knob, "--help and {name}");
    }
    // The commands people use come first; `run` (what alias mode calls)
    // and the hidden keeper do not lead.
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(commands.first(), Some(&"explain"), "{help}");
    assert!(!commands.contains(&"keeper"), "{help}");
    for sub in SUBCOMMANDS {
        assert!(help.contains(&format!("  {sub} ")), "--help lacks {sub}");
    }
}
