//! Security: the shim keeps its data private and trusts nothing it reads.
//!
//! * The data directory (0700) and database (0600) are checked on every open;
//!   a directory or database another user owns or can write is refused: the
//!   turn runs as without the shim, nothing reaches the caller's streams, and
//!   nothing is written there (no errors.log either: a file planted there may
//!   be a link to someone's file). Files the shim creates are private even
//!   under `umask 000`.
//! * Session ids and message uuids from the database are used in argv only
//!   when they are UUIDs (a tampered database cannot inject flags or paths).
//! * No shell anywhere in the shim's sources.
//! * A conversation never resumes a session of another cwd, config dir, HOME,
//!   permission mode, system prompt (flag or file contents), model or
//!   settings; and a caller who knows a conversation's opening but not its
//!   last reply never lands in its session. Checked on what the fake "model"
//!   saw: exactly the transcript the caller sent, turn for turn.

use crate::support::clients::*;
use crate::support::process::*;
use crate::support::sandbox::*;
use crate::support::store::*;
use crate::support::turns::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o777
}

fn primed(w: &Sandbox) -> Chat {
    let mut c = Chat::new(Client::Wrapper);
    say(w, &mut c, &format!("first {}", tag("a", 1)));
    say(w, &mut c, &format!("second {}", tag("a", 2)));
    c
}

fn third() -> String {
    format!("third {}", tag("a", 3))
}

fn runs_count(w: &Sandbox) -> usize {
    runs(w).len()
}

// ---- the data directory and the database -------------------------------------------

/// A data directory others can write to is refused: the turn runs as without
/// the shim, the database in it is not touched, and the shim writes nothing
/// there — not even errors.log, which another user may have planted as a
/// link to one of the caller's files.
#[test]
fn data_dir_writable_by_others_is_refused_and_left_alone() {
    for shared in [0o777, 0o770, 0o1777] {
        let w = Sandbox::new();
        let c = primed(&w);
        let before = runs_count(&w);
        let victim = w.file("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, w.shim_home.join("errors.log")).unwrap();
        chmod(&w.shim_home, shared);
        let db_before = std::fs::read(db_path(&w)).unwrap();
        let (s, d) = both_chat(&w, &c, &third(), |_| {});
        assert_same_masked(&s, &d);
        assert!(s.stderr.is_empty());
        chmod(&w.shim_home, 0o700);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{shared:o}: the shim wrote through a planted errors.log link"
        );
        assert_eq!(std::fs::read(db_path(&w)).unwrap(), db_before, "{shared:o}");
        assert_eq!(
            runs_count(&w),
            before,
            "{shared:o}: a refused store was used"
        );
    }
}

/// The keeper the priming turns started is the owner's own process: it
/// ends, and writes its last lease changes, before the directory opens up
/// (what a test measures is what the turns after it do there).
fn end_the_owners_keeper(w: &Sandbox) {
    let keeper = run(w.cli(&["warm", "status", "--json"]), Input::Null);
    let keeper: serde_json::Value = serde_json::from_slice(&keeper.stdout).unwrap();
    assert!(run(w.cli(&["warm", "stop"]), Input::Null).status.success());
    if let Some(pid) = keeper["keeper"]["pid"].as_i64() {
        eventually(
            std::time::Duration::from_secs(15),
            "the keeper to end",
            || (!alive(pid as i32)).then_some(()),
        );
    }
}

/// Another local user who can write the data directory plants what would
/// steer the shim: a `config.toml` naming their store (it would receive
/// whole transcripts), a `keeper.sock` of their own (it would receive every
/// turn, API keys included, and could answer with a forged reply), and an
/// `initialize/` that links to the victim's files. Nothing of it is read,
/// written or connected to — warm turns on, `-p` and Agent-SDK-style calls —
/// and each turn runs as without the shim.
#[test]
fn a_data_dir_open_to_others_is_never_read_written_or_connected_to() {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let mut w = Sandbox::new();
    // Text-input calls in live CLIs (as shipped they run cold).
    w.set_env("CLAUDE_SHIM_WARM", "1")
        .set_env("CLAUDE_SHIM_WARM_TEXT", "1");
    let c = primed(&w);
    end_the_owners_keeper(&w);
    // Their store: a loopback listener that counts who connects.
    let store = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = store.local_addr().unwrap().port();
    store.set_nonblocking(true).unwrap();
    std::fs::write(
        w.shim_home.join("config.toml"),
        format!("store = \"postgres://thief@127.0.0.1:{port}/loot\"\n"),
    )
    .unwrap();
    // Their keeper.
    let sock = w.shim_home.join("keeper.sock");
    let _ = std::fs::remove_file(&sock);
    let keeper = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    keeper.set_nonblocking(true).unwrap();
    // Their links to the victim's files.
    let victim = w.file("victim-dir");
    std::fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, w.shim_home.join("initialize")).unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = std::thread::spawn({
        let (connections, stop) = (connections.clone(), stop.clone());
        move || {
            while !stop.load(Ordering::SeqCst) {
                if let Ok((mut s, _)) = store.accept() {
                    connections.fetch_add(1, Ordering::SeqCst);
                    let _ = s.read(&mut [0u8; 64]);
                }
                if keeper.accept().is_ok() {
                    connections.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    });
    let listing = |d: &Path| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                (e.file_name().to_string_lossy().into_owned(), m.len())
            })
            .collect();
        v.sort();
        v
    };
    for shared in [0o777, 0o770] {
        chmod(&w.shim_home, shared);
        let before = listing(&w.shim_home);
        // A `-p` turn (it would start or reach a keeper) …
        let (s, d) = both_chat(&w, &c, &third(), |_| {});
        assert_same_masked(&s, &d);
        // … and an Agent SDK's: `initialize`, then its message.
        let sdk = [
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        let input = concat!(
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}"#,
            "\n",
            r#"{"type":"user","session_id":"","message":{"role":"user","content":"Human: first\n\nAssistant: one\n\nHuman: next"},"parent_tool_use_id":null}"#,
            "\n"
        );
        let mut sc = w.shimmed(sdk);
        sc.env("FAKE_ECHO_STDIN", "1").env("FAKE_TURN", "0");
        let mut dc = w.direct(sdk);
        dc.env("FAKE_ECHO_STDIN", "1").env("FAKE_TURN", "0");
        let (s, d) = (
            run(sc, Input::Bytes(input.as_bytes().to_vec())),
            run(dc, Input::Bytes(input.as_bytes().to_vec())),
        );
        assert_eq!(s.stdout, d.stdout, "{shared:o}");
        assert_eq!(s.how(), d.how(), "{shared:o}");
        chmod(&w.shim_home, 0o700);
        assert_eq!(listing(&w.shim_home), before, "{shared:o}: written there");
        assert!(
            std::fs::read_dir(&victim).unwrap().next().is_none(),
            "{shared:o}: written through a planted link"
        );
    }
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a planted store or keeper was connected to"
    );
}

/// A keeper socket that is not our own user's (as root: one chowned to
/// `nobody`, as a socket another user bound would be) is never connected to:
/// the turn runs cold, as without the shim.
#[test]
fn a_keeper_socket_of_another_user_gets_no_turn() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let mut w = Sandbox::new();
    // Text-input calls in live CLIs (as shipped they run cold).
    w.set_env("CLAUDE_SHIM_WARM", "1")
        .set_env("CLAUDE_SHIM_WARM_TEXT", "1");
    let c = primed(&w);
    end_the_owners_keeper(&w);
    let sock = w.shim_home.join("keeper.sock");
    let _ = std::fs::remove_file(&sock);
    let impostor = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    impostor.set_nonblocking(true).unwrap();
    let root = nix::unistd::geteuid().is_root();
    if root {
        std::os::unix::fs::chown(&sock, Some(65534), Some(65534)).unwrap();
    } else {
        // Not root: the socket file is ours, so only the kernel's word on
        // the listener (SO_PEERCRED) could tell; covered by the unit test
        // `warm::keeper` same_user. Here: a regular file in its place.
        std::fs::remove_file(&sock).unwrap();
        std::fs::write(&sock, "").unwrap();
    }
    let connections = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = std::thread::spawn({
        let (connections, stop) = (connections.clone(), stop.clone());
        move || {
            while !stop.load(Ordering::SeqCst) {
                if impostor.accept().is_ok() {
                    connections.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    });
    let (s, d) = both_chat(&w, &c, &third(), |_| {});
    assert_same_masked(&s, &d);
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the impostor got a turn"
    );
    assert!(errors_log(&w).contains("not our keeper's socket"));
}

/// A database file others can read or write is refused (it may hold what
/// conversations said); the warning goes to errors.log (the directory is
/// private), never to the caller's stderr.
#[test]
fn shared_database_is_refused_with_a_note_in_errors_log() {
    for shared in [0o644, 0o660, 0o606] {
        let w = Sandbox::new();
        let c = primed(&w);
        let before = runs_count(&w);
        chmod(&db_path(&w), shared);
        let (s, d) = both_chat(&w, &c, &third(), |_| {});
        assert_same_masked(&s, &d);
        assert!(s.stderr.is_empty());
        chmod(&db_path(&w), 0o600);
        assert_eq!(
            runs_count(&w),
            before,
            "{shared:o}: a refused store was used"
        );
        let log = errors_log(&w);
        assert!(log.contains("want 0600"), "{shared:o}: {log:?}");
    }
}

/// Owned by another user (as root: `nobody`; otherwise a root-owned
/// directory): refused, untouched, nothing created in it.
#[test]
fn data_dir_or_database_of_another_user_is_refused() {
    let w = Sandbox::new();
    let c = primed(&w);
    let root = nix::unistd::geteuid().is_root();
    // The data directory.
    let theirs = if root {
        let d = w.file("theirs");
        std::fs::create_dir(&d).unwrap();
        chmod(&d, 0o700);
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        // A directory the caller does not own and cannot write.
        std::path::PathBuf::from("/")
    };
    let listing = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = listing(&theirs);
    let (s, d) = both_chat(&w, &c, &third(), |cmd| {
        cmd.env("CLAUDE_SHIM_HOME", &theirs);
    });
    assert_same_masked(&s, &d);
    assert_eq!(listing(&theirs), before, "the shim created files there");
    // The database file.
    if root {
        let runs_before = runs_count(&w);
        std::os::unix::fs::chown(db_path(&w), Some(65534), Some(65534)).unwrap();
        let (s, d) = both_chat(&w, &c, &third(), |_| {});
        assert_same_masked(&s, &d);
        std::os::unix::fs::chown(db_path(&w), Some(0), Some(0)).unwrap();
        assert_eq!(runs_count(&w), runs_before);
        assert!(errors_log(&w).contains("owned by another user"));
    }
}

/// Under `umask 000` everything the shim creates is still private: the data
/// directory 0700; the database, its WAL files and errors.log 0600.
#[test]
fn created_files_are_private_under_any_umask() {
    let w = Sandbox::new();
    let home = w.file("data");
    let mut c = Chat::new(Client::LangChain);
    for k in 1..=2 {
        let mut cmd = shim(&w);
        cmd.env("CLAUDE_SHIM_HOME", &home);
        // SAFETY: umask is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::libc::umask(0);
                Ok(())
            });
        }
        let current = format!("turn {}", tag("u", k));
        let input = c.prepare(&mut cmd, &current);
        let ran = run(cmd, input);
        assert!(ran.status.success(), "{}", ran.err());
        c.keep(&current, &ran);
    }
    // Make the shim log an error (a database it refuses), same umask.
    chmod(&home.join("shim.db"), 0o640);
    let mut cmd = shim(&w);
    cmd.env("CLAUDE_SHIM_HOME", &home);
    // SAFETY: umask is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::libc::umask(0);
            Ok(())
        });
    }
    let input = c.prepare(&mut cmd, "refused");
    let ran = run(cmd, input);
    assert!(ran.status.success(), "{}", ran.err());
    chmod(&home.join("shim.db"), 0o600);
    assert_eq!(mode(&home), 0o700);
    let mut problems = Vec::new();
    for f in std::fs::read_dir(&home).unwrap().flatten() {
        let m = mode(&f.path());
        let name = f.file_name().to_string_lossy().into_owned();
        if m & 0o077 != 0 {
            problems.push(format!("{name} is {m:o}"));
        }
    }
    assert!(home.join("errors.log").exists(), "an error was logged");
    assert!(problems.is_empty(), "{problems:?}");
}

// ---- what is read back from the database -------------------------------------------

/// A tampered database (a session id or message uuid that is not a UUID) must
/// never put its value in the CLI's argv: such a pin is not used.
#[test]
fn tampered_ids_never_reach_argv() {
    let evil = [
        "--dangerously-skip-permissions",
        "../../../etc/passwd",
        "6e8e0435-8e12-4245-aa25-f674ed4e97a7 --x",
        "",
    ];
    for column in ["session", "assistant_uuid"] {
        for bad in evil {
            let w = Sandbox::new();
            let c = primed(&w);
            {
                let db = rusqlite::Connection::open(db_path(&w)).unwrap();
                db.execute(&format!("UPDATE pins SET {column} = ?1"), [bad])
                    .unwrap();
                db.execute(
                    &format!(
                        "UPDATE sessions SET {} = ?1",
                        if column == "session" {
                            "session"
                        } else {
                            "head_uuid"
                        }
                    ),
                    [bad],
                )
                .unwrap();
            }
            let log = w.file("argv.log");
            let p = probe_turn(&w, &c, &third(), |cmd| {
                cmd.env("FAKE_ARGV_LOG", &log);
            });
            assert_eq!(p.saw, sent(&c, &third()), "{column} = {bad:?}");
            // Every attempt the shim made, a refused one included.
            for line in std::fs::read_to_string(&log).unwrap().lines() {
                let argv: Vec<String> = serde_json::from_str(line).unwrap();
                assert!(
                    bad.is_empty() || !argv.iter().any(|a| a == bad),
                    "{column} = {bad:?} reached argv: {argv:?}"
                );
                assert!(
                    !argv
                        .iter()
                        .any(|a| a == "--resume" || a == "--resume-session-at"),
                    "{column} = {bad:?}: a tampered pin was used: {argv:?}"
                );
            }
        }
    }
}

/// No shell: the shim runs the real binary and nothing else.
#[test]
fn no_shell_in_the_sources() {
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                ));
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut problems = Vec::new();
    let mut spawns = 0;
    for (path, text) in &files {
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for shell in [
            "sh",
            "bash",
            "zsh",
            "fish",
            "dash",
            "/bin/sh",
            "/usr/bin/env",
            "env",
        ] {
            for form in [
                format!("Command::new(\"{shell}\")"),
                format!("Command::new(r\"{shell}\")"),
            ] {
                if flat.contains(&form) {
                    problems.push(format!("{path}: {form}"));
                }
            }
        }
        for needle in [".arg(\"-c\")", ".args([\"-c\"", "libc::system(", "popen("] {
            if flat.contains(needle) {
                problems.push(format!("{path}: {needle}"));
            }
        }
        spawns += flat.matches("Command::new(").count();
        for m in flat.match_indices("Command::new(") {
            let arg: String = flat[m.0 + 13..].chars().take_while(|c| *c != ')').collect();
            if arg.starts_with('"') {
                problems.push(format!("{path}: runs a fixed program {arg}"));
            }
        }
    }
    assert!(spawns >= 2, "the scan found the spawns ({spawns})");
    assert!(problems.is_empty(), "{problems:#?}");
}

// ---- isolation: which sessions a caller can land in ---------------------------------

/// What the model saw (the fake's FAKE_CONTEXT_OUT), as turns: a user message
/// that is a whole transcript counts as its turns.
fn logical_context(file: &Path) -> Vec<(String, String)> {
    let seen: Vec<(String, String)> =
        serde_json::from_str(&std::fs::read_to_string(file).expect("context file")).unwrap();
    let mut turns = Vec::new();
    for (role, text) in seen {
        let Some(transcript) = text.strip_prefix("Human: ").filter(|_| role == "user") else {
            turns.push((role, text.trim().to_string()));
            continue;
        };
        for turn in transcript.split("\n\nHuman: ") {
            match turn.split_once("\n\nAssistant: ") {
                Some((u, a)) => {
                    turns.push(("user".to_string(), u.trim().to_string()));
                    turns.push(("assistant".to_string(), a.trim().to_string()));
                }
                None => turns.push(("user".to_string(), turn.trim().to_string())),
            }
        }
    }
    turns
}

/// The turns a caller sends.
fn sent(chat: &Chat, current: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (u, a) in &chat.history {
        v.push(("user".to_string(), u.trim().to_string()));
        v.push(("assistant".to_string(), a.trim().to_string()));
    }
    v.push(("user".to_string(), current.trim().to_string()));
    v
}

/// What one turn through the shim did.
struct Probe {
    argv: Vec<String>,
    /// What the model saw, as turns.
    saw: Vec<(String, String)>,
    /// The shim's plan (debug log line).
    plan: String,
    reply: String,
}

/// One turn through the shim.
fn probe_turn(w: &Sandbox, chat: &Chat, current: &str, tweak: impl Fn(&mut Command)) -> Probe {
    let (argv, ctx) = (w.file("argv"), w.file("context"));
    let _ = std::fs::remove_file(&ctx);
    let log = w.file("shim.log");
    let log_before = std::fs::read_to_string(&log).unwrap_or_default().len();
    let mut cmd = shim(w);
    tweak(&mut cmd);
    cmd.env("FAKE_ARGV_OUT", &argv)
        .env("FAKE_CONTEXT_OUT", &ctx);
    let input = chat.prepare(&mut cmd, current);
    let ran = run(cmd, input);
    assert!(
        ran.status.success() && ran.stderr.is_empty(),
        "{}",
        ran.err()
    );
    let plan = std::fs::read_to_string(&log).unwrap_or_default()[log_before..]
        .lines()
        .find(|l| l.contains("plan: "))
        .unwrap_or("")
        .to_string();
    let argv: Vec<String> = recorded_argv(&argv)
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Probe {
        argv,
        saw: logical_context(&ctx),
        plan,
        reply: chat.read(&ran.stdout).expect("a reply"),
    }
}

fn resumes(argv: &[String]) -> bool {
    argv.iter().any(|a| a == "--resume")
}

/// Each change of setting between turn 2 and turn 3 makes turn 3 a different
/// conversation: it runs fresh (no pin of that scope: `NoPin`), the model sees
/// exactly the transcript, and the next turn in the new setting resumes the
/// new session, never the old one.
#[test]
fn a_conversation_never_resumes_across_settings() {
    type Tweak = Box<dyn Fn(&Sandbox, &mut Command)>;
    let settings: Vec<(&str, Tweak, Tweak)> = vec![
        (
            "cwd",
            Box::new(|_, _| {}),
            Box::new(|w, cmd| {
                let d = w.file("elsewhere");
                let _ = std::fs::create_dir(&d);
                cmd.current_dir(d);
            }),
        ),
        (
            "CLAUDE_CONFIG_DIR",
            Box::new(|_, _| {}),
            Box::new(|w, cmd| {
                cmd.env("CLAUDE_CONFIG_DIR", w.file("other-config"));
            }),
        ),
        (
            "CLAUDE_CONFIG_DIR pointing at the same files",
            Box::new(|_, _| {}),
            Box::new(|w, cmd| {
                let link = w.file("same-config");
                let _ = std::os::unix::fs::symlink(w.home.join(".claude"), &link);
                cmd.env("CLAUDE_CONFIG_DIR", link);
            }),
        ),
        (
            "HOME",
            Box::new(|_, _| {}),
            Box::new(|w, cmd| {
                let d = w.file("other-home");
                let _ = std::fs::create_dir(&d);
                cmd.env("HOME", d);
            }),
        ),
        (
            "--permission-mode",
            Box::new(|_, cmd| {
                cmd.args(["--permission-mode", "default"]);
            }),
            Box::new(|_, cmd| {
                cmd.args(["--permission-mode", "acceptEdits"]);
            }),
        ),
        (
            "--system-prompt",
            Box::new(|_, cmd| {
                cmd.args(["--system-prompt", "You are A."]);
            }),
            Box::new(|_, cmd| {
                cmd.args(["--system-prompt", "You are B."]);
            }),
        ),
        (
            "--append-system-prompt added",
            Box::new(|_, _| {}),
            Box::new(|_, cmd| {
                cmd.args(["--append-system-prompt", "Be terse."]);
            }),
        ),
        (
            "--system-prompt-file contents",
            Box::new(|w, cmd| {
                let f = w.file("system.txt");
                if !f.exists() {
                    std::fs::write(&f, "You are A.").unwrap();
                }
                cmd.arg("--system-prompt-file").arg(f);
            }),
            Box::new(|w, cmd| {
                let f = w.file("system.txt");
                std::fs::write(&f, "You are B.").unwrap();
                cmd.arg("--system-prompt-file").arg(f);
            }),
        ),
        (
            "--model",
            Box::new(|_, cmd| {
                cmd.args(["--model", "model-a"]);
            }),
            Box::new(|_, cmd| {
                cmd.args(["--model", "model-b"]);
            }),
        ),
        (
            "--settings",
            Box::new(|_, _| {}),
            Box::new(|_, cmd| {
                cmd.args(["--settings", "{\"model\":\"x\"}"]);
            }),
        ),
        (
            "--dangerously-skip-permissions",
            Box::new(|_, _| {}),
            Box::new(|_, cmd| {
                cmd.arg("--dangerously-skip-permissions");
            }),
        ),
    ];
    let mut problems = Vec::new();
    for (name, a, b) in &settings {
        let w = Sandbox::new();
        let mut c = Chat::new(Client::Wrapper);
        for k in 1..=2 {
            let current = format!("turn {}", tag("a", k));
            let p = probe_turn(&w, &c, &current, |cmd| a(&w, cmd));
            assert_eq!(p.saw, sent(&c, &current), "{name}, setting A, turn {k}");
            if k == 2 {
                assert!(
                    resumes(&p.argv),
                    "{name}: setting A resumes itself: {:?}",
                    p.argv
                );
            }
            c.history.push((current, p.reply));
        }
        let a_session = pins(&w).pop().unwrap().0;
        let current = format!("turn {}", tag("a", 3));
        let p = probe_turn(&w, &c, &current, |cmd| b(&w, cmd));
        if resumes(&p.argv) || p.saw != sent(&c, &current) || !p.plan.contains("NoPin") {
            problems.push(format!(
                "{name}: turn 3 in setting B: argv {:?}\n  plan {}\n  saw {:?}",
                p.argv, p.plan, p.saw
            ));
            continue;
        }
        c.history.push((current, p.reply));
        let current = format!("turn {}", tag("a", 4));
        let p = probe_turn(&w, &c, &current, |cmd| b(&w, cmd));
        let at = p
            .argv
            .iter()
            .position(|a| a == "--resume")
            .map(|i| p.argv[i + 1].clone());
        if at.is_none() || at.as_deref() == Some(a_session.as_str()) || p.saw != sent(&c, &current)
        {
            problems.push(format!(
                "{name}: turn 4 in setting B: argv {:?}, A was {a_session}\n  saw {:?}",
                p.argv, p.saw
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A caller who knows how a conversation opened but not its last reply (it
/// guesses, leaves it empty, or drops it) never lands in that session: the
/// model sees exactly what the caller sent.
#[test]
fn knowing_the_opening_without_the_last_reply_never_lands_in_the_session() {
    let w = Sandbox::new();
    let mut owner = Chat::new(Client::Wrapper);
    for k in 1..=3 {
        let current = format!("owner turn {}", tag("o", k));
        let p = probe_turn(&w, &owner, &current, |_| {});
        assert_eq!(p.saw, sent(&owner, &current));
        owner.history.push((current, p.reply));
    }
    let owner_sessions: Vec<String> = pins(&w).into_iter().map(|p| p.0).collect();
    let last_reply = owner.history[2].1.clone();
    let guesses = [
        owner.history[1].1.clone(),
        String::new(),
        " ".to_string(),
        format!("{last_reply} and more"),
        last_reply.to_uppercase(),
        format!(
            "<thinking>x</thinking>{}",
            &last_reply[..last_reply.len() - 1]
        ),
    ];
    let mut problems = Vec::new();
    for guess in &guesses {
        let mut intruder = owner.clone();
        intruder.history[2].1 = guess.clone();
        let current = "what did you say? <<x.1>>";
        let p = probe_turn(&w, &intruder, current, |_| {});
        let landed = p
            .argv
            .iter()
            .position(|a| a == "--resume")
            .map(|i| p.argv[i + 1].clone())
            .filter(|s| owner_sessions.contains(s));
        if p.saw != sent(&intruder, current) || landed.is_some() {
            problems.push(format!(
                "guess {guess:?}: argv {:?}\n  plan {}\n  saw {:?}",
                p.argv, p.plan, p.saw
            ));
        }
    }
    // Knowing only the first exchange lands at most in a branch at that
    // exchange: the model sees what the caller sent, nothing later.
    let mut opener = owner.clone();
    opener.history.truncate(1);
    let p = probe_turn(&w, &opener, "and then? <<x.2>>", |_| {});
    if p.saw != sent(&opener, "and then? <<x.2>>") {
        problems.push(format!(
            "opening only: argv {:?}\n  saw {:?}",
            p.argv, p.saw
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Random walks over a few conversations — replays, regenerations, edited
/// and guessed replies, dropped turns, two cwds — through one shim database:
/// every turn the model sees exactly the transcript the caller sent.
#[test]
fn random_walks_never_show_the_model_anything_else() {
    let w = Sandbox::new();
    let other = w.file("other-cwd");
    std::fs::create_dir(&other).unwrap();
    let mut seed: u64 = 0x5eed_1234_abcd_0001;
    let mut rand = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut convs: Vec<Chat> = (0..3)
        .map(|i| {
            let mut c = Chat::new(Client::Wrapper);
            if i == 2 {
                c.cwd = Some(other.clone());
            }
            c
        })
        .collect();
    let mut problems = Vec::new();
    let steps = std::env::var("SECURITY_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    for step in 0..steps {
        let i = rand(convs.len());
        let mut c = convs[i].clone();
        match rand(6) {
            // Regenerate: drop the last exchange.
            0 if !c.history.is_empty() => {
                c.history.pop();
            }
            // Edit a reply or a question somewhere.
            1 if !c.history.is_empty() => {
                let k = rand(c.history.len());
                if rand(2) == 0 {
                    c.history[k].1.push_str(" (edited)");
                } else {
                    c.history[k].0.push_str(" (edited)");
                }
            }
            // Borrow another conversation's history (same texts, maybe another cwd).
            2 => {
                let j = rand(convs.len());
                c.history = convs[j].history.clone();
            }
            _ => {}
        }
        let current = format!("step {step} {}", tag(&format!("s{step}"), i));
        let p = probe_turn(&w, &c, &current, |_| {});
        if p.saw != sent(&c, &current) {
            problems.push(format!(
                "step {step}: argv {:?}\n  plan {}\n  sent {:?}\n  saw  {:?}",
                p.argv,
                p.plan,
                sent(&c, &current),
                p.saw
            ));
        }
        let reply = p.reply;
        c.history.push((current, reply));
        convs[i] = c;
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        context(&w)
    );
    let kinds = kinds(&w);
    eprintln!(
        "random walk: {} turns: {} resumed, {} forked, {} fresh",
        kinds.len(),
        kinds.iter().filter(|k| *k == "resumed").count(),
        kinds.iter().filter(|k| *k == "forked").count(),
        kinds.iter().filter(|k| *k == "fresh").count()
    );
}

/// A reply edited earlier in the transcript (chat UIs let users edit the
/// assistant's messages) is a different conversation: the session holds the
/// original reply, so resuming it would show the model something else.
#[test]
fn an_edited_earlier_reply_is_a_different_conversation() {
    let w = Sandbox::new();
    let mut c = Chat::new(Client::Wrapper);
    for k in 1..=3 {
        let current = format!("turn {}", tag("e", k));
        let p = probe_turn(&w, &c, &current, |_| {});
        c.history.push((current, p.reply));
    }
    let mut edited = c.clone();
    edited.history[0].1 = "a reply the user rewrote".into();
    let current = format!("turn {}", tag("e", 4));
    let p = probe_turn(&w, &edited, &current, |_| {});
    assert_eq!(p.saw, sent(&edited, &current), "{}", p.plan);
    assert!(!resumes(&p.argv), "{:?}\n{}", p.argv, p.plan);
    // The unedited conversation still resumes.
    let p = probe_turn(&w, &c, &current, |_| {});
    assert_eq!(p.saw, sent(&c, &current));
    assert!(resumes(&p.argv), "{:?}", p.argv);
}
