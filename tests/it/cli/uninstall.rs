//! `install` prints an rc line that works as printed (with `--dir`, quoted
//! for the shell), knows an rc line for another directory, and mentions
//! `hash -r` when the shim directory is on PATH already; `uninstall` says
//! what it left (the data directory, the rc line, the binary) and how to
//! remove each.

use crate::support::{ok, shell, Sandbox};
use std::process::Command;

/// The indented line `install` printed after "Add this line…" / "Change it to this…".
fn printed_line(out: &str) -> String {
    let mut lines = out.lines();
    lines
        .find(|l| l.starts_with("Add this line") || l.starts_with("Change it to this"))
        .unwrap_or_else(|| panic!("no rc line in:\n{out}"));
    lines.next().unwrap_or_default().trim().to_owned()
}

#[test]
fn the_printed_rc_line_with_dir_works_as_printed_in_each_shell() {
    let s = Sandbox::first_use();
    let dir = s.root.join("it's my bin");
    let d = dir.to_string_lossy().into_owned();
    for sh in ["bash", "zsh", "fish"] {
        let mut install = s.cli(&["install", "--dir", &d]);
        install
            .env("SHELL", format!("/usr/bin/{sh}"))
            .env("PATH", s.path_with(&[&s.tools]));
        let line = printed_line(&ok(install));
        assert!(line.contains("--dir"), "{sh}: {line}");
        let mut cmd = Command::new(shell(sh));
        s.env(&mut cmd);
        cmd.env("PATH", s.path_with(&[&s.tools, &s.real_bin]));
        let script = format!("{line}\ncommand -v claude");
        match sh {
            "fish" => cmd.args(["--no-config", "-c", &script]),
            "zsh" => cmd.args(["-f", "-c", &script]),
            _ => cmd.args(["--norc", "--noprofile", "-c", &script]),
        };
        let out = ok(cmd);
        assert_eq!(
            out.trim(),
            dir.join("claude").to_string_lossy(),
            "{sh}: `{line}` puts the shim first"
        );
    }
}

#[test]
fn an_rc_line_for_another_directory_is_shown_with_the_right_one() {
    let s = Sandbox::first_use();
    std::fs::write(
        s.home.join(".bashrc"),
        "eval \"$(claude-shim init bash)\"\n",
    )
    .unwrap();
    let d = s.root.join("custom").to_string_lossy().into_owned();
    let out = ok(s.cli(&["install", "--dir", &d]));
    assert!(out.contains("for another directory"), "{out}");
    assert!(printed_line(&out).contains(&format!("--dir {d}")), "{out}");
}

#[test]
fn install_mentions_hash_r_when_the_directory_is_on_path_already() {
    let s = Sandbox::first_use();
    let mut cmd = s.cli(&["install"]);
    cmd.env("PATH", s.path_with(&[&s.shim_dir(), &s.real_bin]));
    let out = ok(cmd);
    assert!(out.contains("hash -r"), "{out}");
    assert!(out.contains("rehash"), "{out}");
    let out = ok(s.cli(&["install"]));
    assert!(
        !out.contains("hash -r"),
        "not on PATH, nothing remembered: {out}"
    );
}

#[test]
fn uninstall_says_what_it_left_and_how_to_remove_it() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    drop(s.store());
    std::fs::write(s.shim_home.join("errors.log"), "1700000000 oops\n").unwrap();
    std::fs::write(
        s.home.join(".bashrc"),
        "export X=1\neval \"$(claude-shim init bash)\"\n",
    )
    .unwrap();
    let out = ok(s.cli(&["uninstall"]));
    assert!(out.contains("removed"), "{out}");
    assert!(out.contains("Left in place"), "{out}");
    let data = s.shim_home.to_string_lossy();
    assert!(out.contains(&format!("{data} (shim.db")), "{out}");
    assert!(out.contains("errors.log"), "{out}");
    assert!(out.contains(&format!("rm -r {data}")), "{out}");
    assert!(
        out.contains("the line in ~/.bashrc: eval \"$(claude-shim init bash)\""),
        "{out}"
    );
    // A binary no package manager installed (cargo's target directory) is
    // removed by hand; tests/e2e/packages.rs checks npm's and pip's commands.
    let exe = crate::support::shim_exe().canonicalize().unwrap();
    assert!(out.contains(&format!("rm {}", exe.display())), "{out}");
    assert!(
        s.shim_home.join("shim.db").exists(),
        "uninstall keeps the data"
    );

    // Without an rc line or data there is less to say.
    let bare = Sandbox::first_use();
    ok(bare.cli(&["install"]));
    std::fs::remove_dir_all(&bare.shim_home).unwrap();
    let out = ok(bare.cli(&["uninstall"]));
    assert!(!out.contains("the line in"), "{out}");
    assert!(!out.contains("rm -r"), "{out}");
}
