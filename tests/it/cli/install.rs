//! `claude-shim install` / `uninstall`: the link is made, left alone when
//! right, updated when stale, and nothing that is not ours is ever replaced
//! or removed.

use crate::support::{ok, run, shim_exe, Input, Sandbox};
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;

fn target(link: &Path) -> std::path::PathBuf {
    link.canonicalize().expect("link resolves")
}

fn bin() -> std::path::PathBuf {
    shim_exe().canonicalize().expect("binary")
}

#[test]
fn install_links_claude_to_this_binary_and_prints_the_rc_line() {
    let s = Sandbox::first_use();
    let out = ok(s.cli(&["install"]));
    let link = s.shim_dir().join("claude");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(target(&link), bin());
    assert!(out.contains("~/.bashrc"), "{out}");
    assert!(out.contains("init bash)\""), "{out}");
    // The data dir it creates is private, as the store wants it.
    assert_eq!(
        std::fs::metadata(&s.shim_home).unwrap().mode() & 0o777,
        0o700
    );

    let mut fish = s.cli(&["install"]);
    fish.env("SHELL", "/usr/bin/fish");
    let out = ok(fish);
    assert!(out.contains("init fish | source"), "{out}");
    assert!(out.contains("config.fish"), "{out}");
}

#[test]
fn rc_line_names_claude_shim_when_path_finds_it() {
    let s = Sandbox::first_use();
    let mut cmd = s.cli(&["install"]);
    cmd.env("PATH", s.path_with(&[&s.tools]));
    let out = ok(cmd);
    assert!(out.contains(r#"eval "$(claude-shim init bash)""#), "{out}");
}

#[test]
fn a_correct_link_is_left_alone() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let link = s.shim_dir().join("claude");
    let before = std::fs::symlink_metadata(&link).unwrap().ino();
    let out = ok(s.cli(&["install"]));
    assert!(out.contains("already links"), "{out}");
    assert_eq!(std::fs::symlink_metadata(&link).unwrap().ino(), before);
}

#[test]
fn a_stale_link_of_ours_is_updated() {
    let s = Sandbox::first_use();
    std::fs::create_dir_all(s.shim_dir()).unwrap();
    let link = s.shim_dir().join("claude");
    symlink("/old/build/claude-shim", &link).unwrap();
    let out = ok(s.cli(&["install"]));
    assert!(out.contains("updated"), "{out}");
    assert_eq!(target(&link), bin());
}

#[test]
fn never_overwrites_what_is_not_ours() {
    let s = Sandbox::first_use();
    std::fs::create_dir_all(s.shim_dir()).unwrap();
    let link = s.shim_dir().join("claude");

    // A real claude (a file) in the directory.
    std::fs::write(&link, "#!/bin/sh\necho real\n").unwrap();
    let o = run(s.cli(&["install"]), Input::Null);
    assert_eq!(o.status.code(), Some(1), "{}", o.out());
    assert!(o.err().contains("not claude-shim's"), "{}", o.err());
    assert_eq!(
        std::fs::read_to_string(&link).unwrap(),
        "#!/bin/sh\necho real\n"
    );
    let o = run(s.cli(&["uninstall"]), Input::Null);
    assert_eq!(o.status.code(), Some(1));
    assert!(link.exists(), "uninstall must not remove it either");

    // A link to some other program.
    std::fs::remove_file(&link).unwrap();
    symlink(s.real_claude(), &link).unwrap();
    let o = run(s.cli(&["install"]), Input::Null);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_link(&link).unwrap(), s.real_claude());
}

#[test]
fn the_real_claude_is_never_touched_even_when_dir_is_its_home() {
    let s = Sandbox::first_use();
    let before = std::fs::read(s.real_claude()).unwrap();
    let dir = s.real_bin.to_string_lossy().into_owned();
    let o = run(s.cli(&["install", "--dir", &dir]), Input::Null);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(s.real_claude()).unwrap(), before);
    assert!(!std::fs::symlink_metadata(s.real_claude())
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn custom_dir_is_used_and_named_in_the_rc_line() {
    let s = Sandbox::first_use();
    let dir = s.root.join("my bin");
    let d = dir.to_string_lossy().into_owned();
    let out = ok(s.cli(&["install", "--dir", &d]));
    assert_eq!(target(&dir.join("claude")), bin());
    assert!(out.contains(&format!("--dir '{d}'")), "{out}");
    let out = ok(s.cli(&["uninstall", "--dir", &d]));
    assert!(out.contains("removed"), "{out}");
    assert!(!dir.join("claude").exists());
    assert!(dir.exists(), "a directory the user named is not removed");
}

#[test]
fn uninstall_removes_only_our_link() {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    let out = ok(s.cli(&["uninstall"]));
    assert!(out.contains("removed"), "{out}");
    assert!(std::fs::symlink_metadata(s.shim_dir().join("claude")).is_err());
    assert!(
        !s.shim_dir().exists(),
        "our empty default directory goes too"
    );
    assert!(s.shim_home.exists(), "the data directory stays");
    let out = ok(s.cli(&["uninstall"]));
    assert!(out.contains("nothing to remove"), "{out}");
    // Another file in our directory keeps it.
    ok(s.cli(&["install"]));
    std::fs::write(s.shim_dir().join("notes"), "mine").unwrap();
    ok(s.cli(&["uninstall"]));
    assert!(s.shim_dir().join("notes").exists());
}

#[test]
fn an_rc_that_already_sources_init_is_recognised() {
    let s = Sandbox::first_use();
    std::fs::write(
        s.home.join(".bashrc"),
        "export X=1\neval \"$(claude-shim init bash)\"\n",
    )
    .unwrap();
    let out = ok(s.cli(&["install"]));
    assert!(
        out.contains("~/.bashrc already runs `claude-shim init`"),
        "{out}"
    );
    assert!(!out.contains("Add this line"), "{out}");
}
