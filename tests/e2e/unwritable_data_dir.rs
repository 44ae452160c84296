//! A data directory a turn cannot write (issue 38): a read-only bind mount,
//! or a full tmpfs. Turns still run as the caller asked (the real CLI
//! answers), but nothing is recorded, resumed or kept warm, and errors.log
//! cannot say why; so `doctor` tries what a turn writes, and fails with the
//! cause and a fix, and `status` says it too. A healthy data directory stays
//! `ok`, and unchanged by the trial.
//!
//! Needs root (CI runs as root) for `mount`; the mounts are undone when a
//! test ends, failing or not ([`Mounted`]).

use crate::support::clients::text_reply;
use crate::support::mount::{fill, Mounted};
use crate::support::{describe, run, ApiServer, Input, Ran, Sandbox, World};
use serde_json::Value;
use std::path::Path;

/// `claude-shim ARGS` with the shim ahead of the real CLI on PATH.
fn shim_cli(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.manager();
    cmd.args(args);
    run(cmd, Input::Null)
}

/// The line of check `name` in doctor's output.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(6..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{out}"))
}

fn json(r: &Ran) -> Value {
    serde_json::from_slice(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", describe(r)))
}

/// Doctor's check `name` in its `--json` report.
fn json_check(v: &Value, name: &str) -> Value {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {v:#}"))
        .clone()
}

/// Every file under `dir` with its bytes (a shared-memory index by name
/// only: readers change it too), sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read the data dir").flatten() {
            let p = e.path();
            let name = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(p);
            } else if t.is_file() && !name.ends_with("-shm") {
                out.push((name, std::fs::read(&p).unwrap()));
            } else {
                out.push((name, Vec::new()));
            }
        }
    }
    out.sort();
    out
}

/// Doctor fails on `check` (and exits 1), its line saying `why` and its
/// fix `fix`; `--json` says the same; status shows it under `data dir`.
#[track_caller]
fn doctor_and_status_say(sb: &Sandbox, check: &str, why: &str, fix: &str) {
    let d = shim_cli(sb, &["doctor"]);
    let out = d.out();
    assert_eq!(d.status.code(), Some(1), "{}", describe(&d));
    let l = line(&out, check);
    assert!(l.starts_with("FAIL"), "{out}");
    assert!(l.contains(why), "{out}");
    assert!(out.contains(&format!("fix: {fix}")), "{out}");
    assert!(
        line(&out, "recent errors").contains("cannot be written"),
        "{out}"
    );
    assert!(d.err().contains("problem(s) found"), "{}", describe(&d));
    let j = shim_cli(sb, &["doctor", "--json"]);
    assert_eq!(j.status.code(), Some(1), "{}", describe(&j));
    let v = json(&j);
    assert_eq!(v["ok"], false, "{v:#}");
    let c = json_check(&v, check);
    assert_eq!(c["level"], "fail", "{v:#}");
    assert!(c["fix"].as_str().unwrap().starts_with(fix), "{v:#}");
    assert_eq!(v["facts"]["write_trial"], "store", "{v:#}");
    assert!(v["facts"]["write_error"].is_string(), "{v:#}");

    let s = shim_cli(sb, &["status"]);
    assert!(s.status.success(), "{}", describe(&s));
    let out = s.out();
    let l = out
        .lines()
        .find(|l| l.starts_with("data dir") && l.contains(why))
        .unwrap_or_else(|| panic!("status does not say {why:?}:\n{out}"));
    assert!(!l.contains("unreadable"), "{out}");
    assert!(out.contains(&format!("fix: {fix}")), "{out}");
    let v = json(&shim_cli(sb, &["status", "--json"]));
    let problems = v["data_dir_problems"]
        .as_array()
        .expect("data_dir_problems");
    assert!(
        problems
            .iter()
            .any(|p| p["name"] == check && p["level"] == "fail"),
        "{v:#}"
    );
}

#[test]
fn unwritable_data_dir_read_only_mount_fails_doctor_and_status() {
    let mut w = World::warm(false);
    w.turn("first question");
    w.turn("second question");
    assert_eq!(w.kinds(), ["fresh", "resumed"], "{}", w.context());
    {
        let _ro = Mounted::read_only(&w.sb.shim_home);
        // The turn runs as the caller asked: the whole transcript, answered.
        let out = w.turn("third question");
        assert!(!out.stdout.is_empty(), "{}", describe(&out));
        let sent = w.server.last_user_text().unwrap_or_default();
        assert!(sent.contains("first question"), "{sent}");
        doctor_and_status_say(
            &w.sb,
            "writes",
            "read-only file system",
            "remount that file system read-write",
        );
        // What status can read still shows.
        let out = shim_cli(&w.sb, &["status"]).out();
        assert!(out.contains("pinned       1 conversation"), "{out}");
    }
    assert_eq!(w.kinds(), ["fresh", "resumed"], "nothing was recorded");
    // Writable again: doctor is content, and turns are recorded.
    let d = shim_cli(&w.sb, &["doctor"]);
    assert!(d.status.success(), "{}", describe(&d));
    w.turn("fourth question");
    assert_eq!(w.kinds().len(), 3, "{}", w.context());
}

#[test]
fn unwritable_data_dir_full_tmpfs_fails_doctor_and_status() {
    let server = ApiServer::start();
    let mut sb = Sandbox::real(&server);
    let full = Mounted::tmpfs(&sb.root.join("full"), "256k");
    let home = full.path().join("shim-home");
    std::fs::create_dir(&home).expect("mkdir the data dir");
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod the data dir");
    sb.set_env("CLAUDE_SHIM_HOME", &home)
        .set_env("CLAUDE_SHIM_WARM", "0");
    fill(full.path());
    // The turn runs as without the shim, byte for byte.
    let prompt = b"Human: hello there.";
    let direct = run(sb.direct(["-p"]), prompt);
    let shimmed = run(sb.shimmed(["-p"]), prompt);
    assert!(direct.status.success(), "{}", describe(&direct));
    assert_eq!(
        direct.status.code(),
        shimmed.status.code(),
        "{}",
        describe(&shimmed)
    );
    // The loopback server numbers its replies: `reply <n>: <what it was sent>`.
    let sent = |r: &Ran| {
        text_reply(&r.stdout)
            .split_once(": ")
            .map(|(_, t)| t.to_owned())
    };
    assert_eq!(sent(&direct), sent(&shimmed), "{}", describe(&shimmed));
    assert!(sent(&shimmed).is_some(), "{}", describe(&shimmed));
    assert_eq!(direct.err(), shimmed.err());
    doctor_and_status_say(
        &sb,
        "disk space",
        "0 B free",
        "make room on that file system",
    );
    doctor_and_status_say(&sb, "writes", "its file system is full", "make room");
    let out = shim_cli(&sb, &["doctor"]).out();
    assert!(
        out.contains(&format!("`df -h {}`", home.display())),
        "{out}"
    );
    drop(full);
}

#[test]
fn unwritable_data_dir_healthy_stays_ok_and_unchanged() {
    let mut w = World::warm(false);
    w.turn("first question");
    w.turn("second question");
    let before = snapshot(&w.sb.shim_home);
    assert!(before.iter().any(|(n, _)| n == "shim.db"), "{before:?}");
    let d = shim_cli(&w.sb, &["doctor"]);
    assert!(d.status.success(), "{}", describe(&d));
    let out = d.out();
    assert!(line(&out, "disk space").starts_with("ok"), "{out}");
    let writes = line(&out, "writes");
    assert!(writes.starts_with("ok"), "{out}");
    assert!(writes.contains("rolled back"), "{out}");
    assert!(line(&out, "recent errors").contains("none"), "{out}");
    let v = json(&shim_cli(&w.sb, &["doctor", "--json"]));
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["facts"]["write_error"], Value::Null, "{v:#}");
    assert_eq!(v["facts"]["data_dir_space"]["read_only"], false, "{v:#}");
    let s = shim_cli(&w.sb, &["status"]);
    assert!(!s.out().contains("data dir"), "{}", s.out());
    let v = json(&shim_cli(&w.sb, &["status", "--json"]));
    assert_eq!(v["data_dir_problems"], Value::Array(vec![]), "{v:#}");
    let after = snapshot(&w.sb.shim_home);
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&after), names(&before));
    assert!(after == before, "doctor and status changed the data dir");
    w.turn("third question");
    assert_eq!(
        w.kinds(),
        ["fresh", "resumed", "resumed"],
        "{}",
        w.context()
    );
}
