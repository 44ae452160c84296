//! `claude-shim doctor`: passes on a good set-up, and fails (non-zero, with
//! a fix) for each kind of breakage: no real claude, the shim not first on
//! PATH once installed, a damaged database, loose permissions.

use crate::support::{ok, run, Input, Sandbox};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Installed, the shim first on PATH and the fake real claude behind it.
fn installed() -> Sandbox {
    let s = Sandbox::first_use();
    ok(s.cli(&["install"]));
    s
}

fn doctor(s: &Sandbox, first: &[&std::path::Path], args: &[&str]) -> Command {
    let mut cmd = s.cli(&[&["doctor"], args].concat());
    cmd.env("PATH", s.path_with(first));
    cmd
}

fn good(s: &Sandbox) -> Command {
    doctor(s, &[&s.shim_dir(), &s.real_bin], &[])
}

fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(6..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{out}"))
}

#[test]
fn a_good_setup_passes_and_names_what_it_found() {
    let s = installed();
    drop(s.store());
    let out = ok(good(&s));
    let path = line(&out, "claude on PATH");
    assert!(path.starts_with("ok"), "{out}");
    assert!(path.contains("is the shim"), "{out}");
    let real = line(&out, "real claude");
    assert!(
        real.contains(&s.real_claude().display().to_string()),
        "{out}"
    );
    assert!(real.contains("2.1.330"), "{out}");
    assert!(
        line(&out, "capabilities").contains("resume, fork-session, session-id"),
        "{out}"
    );
    assert!(line(&out, "database").contains("ok"), "{out}");
    assert!(line(&out, "database").contains("schema"), "{out}");
    assert!(line(&out, "permissions").contains("0700"), "{out}");
    assert!(line(&out, "recursion guard").contains("not set"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("no problems found"), "{out}");
}

/// The JSON is the report: stderr points at no "fixes above".
#[test]
fn json_of_a_broken_set_up_says_no_more_on_stderr() {
    let s = installed();
    let o = run(doctor(&s, &[&s.shim_dir()], &["--json"]), Input::Null);
    assert_eq!(o.status.code(), Some(1), "{}", o.err());
    let v: Value = serde_json::from_str(&o.out()).expect("json");
    assert_eq!(v["ok"], false);
    assert!(!o.err().contains("fix"), "{}", o.err());
}

#[test]
fn json_is_a_full_report() {
    let s = installed();
    drop(s.store());
    let out = ok(doctor(&s, &[&s.shim_dir(), &s.real_bin], &["--json"]));
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["ok"], true);
    assert_eq!(v["facts"]["path_claude_is_shim"], true);
    assert_eq!(v["facts"]["capabilities"]["version"], "2.1.330");
    assert_eq!(v["facts"]["db_health"]["quick_check"], "ok");
    assert_eq!(v["facts"]["data_dir_mode"], 0o700);
    assert!(
        v["checks"].as_array().is_some_and(|c| c.len() >= 7),
        "{out}"
    );
}

#[test]
fn no_real_claude_fails_with_a_fix() {
    let s = installed();
    let o = run(doctor(&s, &[&s.shim_dir()], &[]), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(line(&out, "real claude").starts_with("FAIL"), "{out}");
    assert!(out.contains("fix: install Claude Code"), "{out}");
}

#[test]
fn shim_behind_the_real_claude_fails_once_installed() {
    let s = installed();
    let o = run(doctor(&s, &[&s.real_bin, &s.shim_dir()], &[]), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    let path = line(&out, "claude on PATH");
    assert!(path.starts_with("FAIL"), "{out}");
    assert!(path.contains("not the shim"), "{out}");
    assert!(out.contains("init bash"), "{out}");

    // Not installed and no alias: nothing is set up, which fails.
    let s = Sandbox::first_use();
    let o = run(doctor(&s, &[&s.real_bin], &[]), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(line(&out, "claude on PATH").starts_with("FAIL"), "{out}");
    assert!(out.contains("claude-shim install"), "{out}");
    // Alias mode (the init script marks it) with claude-shim on PATH passes.
    let mut alias = doctor(&s, &[&s.tools, &s.real_bin], &[]);
    alias.env("CLAUDE_SHIM_MODE", "alias");
    let out = ok(alias);
    assert!(line(&out, "claude on PATH").contains("alias mode"), "{out}");
}

#[test]
fn a_damaged_database_fails() {
    let s = installed();
    let store = s.store();
    // Everything into the main file first (the store does not checkpoint on
    // close, so the pages might otherwise still sit in the WAL).
    store
        .sqlite()
        .expect("a SQLite store")
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let db = store.path.clone();
    drop(store);
    let mut bytes = std::fs::read(&db).unwrap();
    let len = bytes.len();
    bytes[len / 2..].fill(0xA5);
    bytes[..16].copy_from_slice(b"not a database!!");
    std::fs::write(&db, bytes).unwrap();
    let o = run(good(&s), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(line(&out, "database").starts_with("FAIL"), "{out}");
    assert!(out.contains("shim.db.broken"), "{out}");
}

#[test]
fn loose_permissions_fail() {
    let s = installed();
    let db = s.store().path.clone();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run(good(&s), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("chmod 600 {}", db.display())),
        "{out}"
    );

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&s.shim_home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = run(good(&s), Input::Null);
    let out = o.out();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("chmod 700 {}", s.shim_home.display())),
        "{out}"
    );
}

#[test]
fn shows_guard_and_recent_errors_without_failing() {
    let s = installed();
    let lines: String = (1..=8)
        .map(|i| format!("1700000000 failure number {i}\n"))
        .collect();
    std::fs::write(s.shim_home.join("errors.log"), lines).unwrap();
    let mut cmd = good(&s);
    cmd.env("CLAUDE_SHIM_GUARD", "2:4242");
    let out = ok(cmd);
    assert!(line(&out, "recursion guard").contains("depth 2"), "{out}");
    assert!(out.contains("failure number 8"), "{out}");
    assert!(out.contains("failure number 4"), "{out}");
    assert!(
        !out.contains("failure number 3"),
        "only the last five: {out}"
    );
    assert!(out.contains(" ago: "), "{out}");
}

#[test]
fn doctor_never_creates_the_database() {
    let s = installed();
    let out = ok(good(&s));
    assert!(line(&out, "database").contains("not created yet"), "{out}");
    assert!(!s.shim_home.join("shim.db").exists());
}

/// The command in the code span of the `fix:` that starts with `cmd`, as
/// printed at 50 columns.
fn fix_command(out: &str, cmd: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.contains(&format!("`{cmd} ")))
        .unwrap_or_else(|| panic!("no `{cmd} …` on one line in:\n{out}"));
    let from = line.find(&format!("`{cmd} ")).unwrap_or(0) + 1;
    let to = line.rfind('`').unwrap_or(line.len());
    line[from..to].to_owned()
}

/// Pasted into a shell from anywhere, each fix does what it says, whatever
/// the data directory is called.
#[test]
fn fixes_paste_into_a_shell_whatever_the_path() {
    let s = Sandbox::with_data_name("it's a `dir` $x");
    ok(s.cli(&["install"]));
    let db = s.store().path.clone();
    let sh = |cmd: &str| {
        let o = run(
            {
                let mut c = Command::new("sh");
                c.args(["-c", cmd]).current_dir(&s.work);
                c
            },
            Input::Null,
        );
        assert!(o.status.success(), "{cmd}: {}", o.err());
    };
    let narrow = || {
        let mut cmd = good(&s);
        cmd.env("COLUMNS", "50");
        let o = run(cmd, Input::Null);
        assert_eq!(o.status.code(), Some(1), "{}", o.out());
        o.out()
    };
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    sh(&fix_command(&narrow(), "chmod 600"));
    assert_eq!(mode(&db), 0o600);

    std::fs::set_permissions(&s.shim_home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = narrow();
    // The database is not opened then; the reason is the directory, not HOME.
    assert!(!line(&out, "database").contains("HOME"), "{out}");
    assert!(line(&out, "database").contains("not opened"), "{out}");
    sh(&fix_command(&out, "chmod 700"));
    assert_eq!(mode(&s.shim_home), 0o700);

    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{side}", db.display()));
    }
    std::fs::write(&db, b"not a database!!".repeat(512)).unwrap();
    sh(&fix_command(&narrow(), "mv"));
    assert!(!db.exists());
    assert!(s.shim_home.join("shim.db.broken").exists());
}
