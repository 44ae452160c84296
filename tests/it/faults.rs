//! The fault matrix: whatever breaks around the shim — its database, its data
//! directory, the session files, the real binary, the CLI mid-stream, the
//! caller's end of the pipe — the caller sees what it would have seen without
//! the shim: the same stdout, stderr and exit status (or death by the same
//! signal). Each test runs the same turn through the shim and directly
//! against the same fake CLI and compares (session ids masked where the shim
//! legitimately picks its own).
//!
//! Not repeated here: the shim SIGKILLed mid-turn leaves no orphan child
//! (`runner`: `sigkill_of_shim_leaves_no_orphan`,
//! `sigkill_of_shim_during_startup_leaves_no_orphan`); a session file deleted
//! between turns and a resume the real CLI refuses (`tests/e2e/resume.rs`).

use crate::support::clients::*;
use crate::support::process::*;
use crate::support::sandbox::*;
use crate::support::store::*;
use crate::support::turns::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Two turns of conversation `a` through the shim: pinned, resumable.
fn primed(w: &Sandbox, client: Client) -> Chat {
    let mut c = Chat::new(client);
    say(w, &mut c, &format!("first {}", tag("a", 1)));
    say(w, &mut c, &format!("second {}", tag("a", 2)));
    assert_eq!(kinds(w), ["fresh", "resumed"], "{}", context(w));
    c
}

fn third() -> String {
    format!("third {}", tag("a", 3))
}

/// The third turn through the shim and directly; both see the whole conversation.
#[track_caller]
fn third_turn_is_unharmed(w: &Sandbox, c: &Chat, tweak: impl Fn(&mut Command)) -> (Ran, Ran) {
    let (s, d) = both_chat(w, c, &third(), tweak);
    assert!(d.status.success(), "direct run failed: {}", d.err());
    assert_eq!(
        c.read(&d.stdout).as_deref(),
        Some(ack(&[tag("a", 1), tag("a", 2), tag("a", 3)]).as_str()),
        "the fake saw the whole transcript"
    );
    assert_same_masked(&s, &d);
    (s, d)
}

fn remove_db(w: &Sandbox) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(w.shim_home.join(format!("shim.db{suffix}")));
    }
}

// ---- the database ------------------------------------------------------------------

/// Garbage where the database should be: the turn runs as the caller asked,
/// the shim notes why in errors.log and leaves the file alone.
#[test]
fn corrupt_db_garbage() {
    for client in [Client::Wrapper, Client::LangChain] {
        let w = Sandbox::new();
        let c = primed(&w, client);
        remove_db(&w);
        let garbage: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(db_path(&w), &garbage).unwrap();
        std::fs::set_permissions(db_path(&w), std::fs::Permissions::from_mode(0o600)).unwrap();
        third_turn_is_unharmed(&w, &c, |_| {});
        assert_eq!(
            std::fs::read(db_path(&w)).unwrap(),
            garbage,
            "the shim rewrote the file"
        );
        assert!(
            !errors_log(&w).is_empty(),
            "the bypass is noted in errors.log"
        );
    }
}

/// A real database with damaged pages: opening works, reads or writes fail
/// part-way through the turn. Still the caller's turn, unharmed.
#[test]
fn corrupt_db_damaged_pages() {
    for client in [Client::Wrapper, Client::LangChain] {
        let w = Sandbox::new();
        let c = primed(&w, client);
        // Fold the WAL into the file, then damage everything past page 1.
        {
            let db = rusqlite::Connection::open(db_path(&w)).unwrap();
            db.pragma_update(None, "wal_checkpoint", "TRUNCATE")
                .unwrap();
        }
        let mut bytes = std::fs::read(db_path(&w)).unwrap();
        for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
            *b = (i % 253) as u8;
        }
        std::fs::write(db_path(&w), &bytes).unwrap();
        third_turn_is_unharmed(&w, &c, |_| {});
    }
}

/// Another process holds the database until the turn is over. The shim waits
/// at most a short while, then runs the turn as without it: the turn must end
/// while the database is still locked (a shim that waited for the lock would
/// never end: the run's hang guard fails it), and its store was left out.
fn locked_db(mode: &str) {
    let w = Sandbox::new();
    let c = primed(&w, Client::LangChain);
    let path = db_path(&w);
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mode_owned = mode.to_string();
    let locker = std::thread::spawn(move || {
        let db = rusqlite::Connection::open(&path).unwrap();
        if mode_owned == "exclusive-mode" {
            // Readers are shut out too (the WAL index goes private).
            db.pragma_update(None, "locking_mode", "EXCLUSIVE").unwrap();
        }
        db.execute_batch("BEGIN EXCLUSIVE; INSERT INTO runs (at, cwd, kind, bytes_in, bytes_sent) VALUES (0, 'locker', 'fresh', 0, 0);")
            .unwrap();
        locked_tx.send(()).unwrap();
        // Held until the turn is over (or the test panicked: Err).
        let _ = done_rx.recv();
        db.execute_batch("ROLLBACK").unwrap();
    });
    locked_rx.recv().unwrap();
    let (s, d) = third_turn_is_unharmed(&w, &c, |_| {});
    let _ = done_tx.send(());
    locker.join().unwrap();
    eprintln!(
        "locked ({mode}): shim {:?}, direct {:?}",
        s.elapsed, d.elapsed
    );
    assert!(
        !errors_log(&w).is_empty(),
        "the turn ran without the store, noted in errors.log\n{}",
        context(&w)
    );
}

#[test]
fn db_locked_by_an_exclusive_transaction() {
    locked_db("exclusive-transaction");
}

#[test]
fn db_locked_in_exclusive_locking_mode() {
    locked_db("exclusive-mode");
}

/// Run a command as another user (when the tests run as root, where file
/// modes restrain nothing): `nobody`, with the whole world owned by it.
fn as_nobody(w: &Sandbox) -> impl Fn(&mut Command) + '_ {
    let root = nix::unistd::geteuid().is_root();
    if root {
        chown_tree(&w.root, 65534);
    }
    move |cmd: &mut Command| {
        if root {
            cmd.uid(65534).gid(65534);
        }
    }
}

fn chown_tree(path: &Path, id: u32) {
    std::os::unix::fs::lchown(path, Some(id), Some(id)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&e.path(), id);
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The data directory is read-only: with no database yet, with one whose WAL
/// files are gone (they cannot be created), and with a complete one.
#[test]
fn data_dir_read_only() {
    for case in ["no-db", "no-wal", "complete"] {
        let w = Sandbox::new();
        let c = primed(&w, Client::Wrapper);
        match case {
            "no-db" => remove_db(&w),
            "no-wal" => {
                let db = rusqlite::Connection::open(db_path(&w)).unwrap();
                db.pragma_update(None, "journal_mode", "DELETE").unwrap();
                drop(db);
                let db = rusqlite::Connection::open(db_path(&w)).unwrap();
                db.pragma_update(None, "journal_mode", "WAL").unwrap();
                drop(db);
                for suffix in ["-wal", "-shm"] {
                    let _ = std::fs::remove_file(w.shim_home.join(format!("shim.db{suffix}")));
                }
            }
            _ => {}
        }
        let who = as_nobody(&w);
        chmod(&w.shim_home, 0o500);
        third_turn_is_unharmed(&w, &c, &who);
        chmod(&w.shim_home, 0o700);
    }
}

/// The database file is read-only (0400, still private).
#[test]
fn db_file_read_only() {
    let w = Sandbox::new();
    let c = primed(&w, Client::LangChain);
    let who = as_nobody(&w);
    chmod(&db_path(&w), 0o400);
    third_turn_is_unharmed(&w, &c, &who);
}

/// Writes fail as on a full disk: `ulimit -f` (RLIMIT_FSIZE) below the size
/// the database needs, for the shim and the direct run alike. A process
/// writing past the limit gets SIGXFSZ, whose default is to die (with a core):
/// the shim must not die of its own database writes.
#[test]
fn disk_full() {
    fn limit(bytes: u64) -> impl Fn(&mut Command) {
        move |cmd: &mut Command| {
            // SAFETY: setrlimit is async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = nix::libc::rlimit {
                        rlim_cur: bytes,
                        rlim_max: bytes,
                    };
                    if nix::libc::setrlimit(nix::libc::RLIMIT_FSIZE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
    }
    for case in ["new-db", "existing-db"] {
        for client in [Client::Wrapper, Client::LangChain] {
            let w = Sandbox::new();
            let c = primed(&w, client);
            if case == "new-db" {
                remove_db(&w);
            }
            // 16 KiB: the session files of the fake fit, a database does not
            // (its WAL index alone is 32 KiB).
            let (s, _) = third_turn_is_unharmed(&w, &c, limit(16 << 10));
            assert_ne!(s.status.signal(), Some(Signal::SIGXFSZ as i32));
        }
    }
}

/// The data directory is missing (created), cannot be created, or is unset.
#[test]
fn data_dir_missing_or_uncreatable() {
    let w = Sandbox::new();
    let fresh_home = w.file("not/yet/there");
    let mut c = Chat::new(Client::Wrapper);
    let mut cmd = shim(&w);
    cmd.env("CLAUDE_SHIM_HOME", &fresh_home);
    let input = c.prepare(&mut cmd, &format!("one {}", tag("m", 1)));
    let ran = run(cmd, input);
    assert!(ran.status.success(), "{}", ran.err());
    assert_eq!(
        std::fs::metadata(&fresh_home).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert!(fresh_home.join("shim.db").exists());
    c.keep(&format!("one {}", tag("m", 1)), &ran);

    std::fs::write(w.file("a-file"), "x").unwrap();
    let c2 = primed(&w, Client::LangChain);
    for (name, home) in [
        ("under a file", w.file("a-file/shim")),
        ("in /proc", "/proc/claude-shim-test".into()),
    ] {
        let (s, d) = both_chat(&w, &c2, &third(), |cmd| {
            cmd.env("CLAUDE_SHIM_HOME", &home);
        });
        assert_same_masked(&s, &d);
        assert!(s.status.success(), "{name}");
    }
    // No HOME at all (the fake finds its config through CLAUDE_CONFIG_DIR).
    let (s, d) = both_chat(&w, &c2, &third(), |cmd| {
        cmd.env_remove("HOME")
            .env_remove("CLAUDE_SHIM_HOME")
            .env("CLAUDE_CONFIG_DIR", w.home.join(".claude"));
    });
    assert_same_masked(&s, &d);
}

// ---- the real binary ----------------------------------------------------------------

/// A CLI that never answers a message on stream-json input while the input
/// stays open (`FAKE_STREAM_TO_EOF`) is given a warm turn: the new live process
/// says nothing, goes after the shim's patience (20 s), and the turn runs cold,
/// answered as without the shim.
#[test]
fn a_cli_that_never_answers_a_live_turn_gets_a_cold_one() {
    let w = Sandbox::new();
    let c = primed(&w, Client::Wrapper);
    third_turn_is_unharmed(&w, &c, |cmd| {
        cmd.env("CLAUDE_SHIM_WARM", "1")
            .env("CLAUDE_SHIM_WARM_TEXT", "1")
            .env("FAKE_STREAM_TO_EOF", "1");
    });
    let last = runs(&w).pop().expect("a run");
    assert_eq!(last.engine, "cold", "{}", context(&w));
    assert_eq!(last.kind, "resumed", "{}", context(&w));
}

// ---- session files -----------------------------------------------------------------

/// The session file vanishes after the shim decided to resume it and before
/// the CLI reads it: the CLI refuses, the shim reruns fresh once, the caller
/// sees one clean answer; the next turn resumes the fallback's session.
#[test]
fn session_file_deleted_between_lookup_and_run() {
    for client in [Client::Wrapper, Client::LangChain] {
        let w = Sandbox::new();
        let mut c = primed(&w, client);
        let (s, _) = third_turn_is_unharmed(&w, &c, |cmd| {
            cmd.env("FAKE_RACE_DELETE", "1");
        });
        assert_eq!(
            kinds(&w).last().map(String::as_str),
            Some("fallback"),
            "{}",
            context(&w)
        );
        c.keep(&third(), &s);
        let next = format!("fourth {}", tag("a", 4));
        let ran = say(&w, &mut c, &next);
        assert_eq!(
            c.read(&ran.stdout).unwrap(),
            ack(&[tag("a", 1), tag("a", 2), tag("a", 3), tag("a", 4)])
        );
        assert_eq!(
            kinds(&w).last().map(String::as_str),
            Some("resumed"),
            "{}",
            context(&w)
        );
    }
}

/// The session file's last line is torn (a crash mid-write).
#[test]
fn session_file_truncated_mid_line() {
    for client in [Client::Wrapper, Client::LangChain] {
        let w = Sandbox::new();
        let c = primed(&w, client);
        let (session, _, _) = pins(&w).pop().unwrap();
        let file = w.session_file(&session).unwrap();
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 40]).unwrap();
        third_turn_is_unharmed(&w, &c, |_| {});
    }
}

// ---- the real binary ---------------------------------------------------------------

/// What `sh` says about running `path`: (exit code, stdout empty).
fn shell_exit(path: &Path) -> i32 {
    let out = Command::new("sh")
        .arg("-c")
        .arg("\"$0\" -p hello")
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    out.status.code().unwrap()
}

/// The real binary is missing, not executable, or unstartable: the caller gets
/// the exit status a shell gives for the same (127 not found, 126 cannot
/// execute), a message on stderr, nothing on stdout.
#[test]
fn real_binary_missing_or_not_executable() {
    let w = Sandbox::new();
    let missing = w.file("no-such-claude");
    let not_exec = w.file("not-executable");
    std::fs::write(&not_exec, "#!/bin/sh\necho hi\n").unwrap();
    chmod(&not_exec, 0o644);
    let bad_interp = w.file("bad-interpreter");
    std::fs::write(&bad_interp, "#!/nonexistent/interpreter\n").unwrap();
    chmod(&bad_interp, 0o755);
    let mut problems = Vec::new();
    for (name, real) in [
        ("missing", &missing),
        ("not executable", &not_exec),
        ("bad interpreter", &bad_interp),
    ] {
        let want = shell_exit(real);
        for args in [&["-p", "hello"][..], &["--version"][..]] {
            let mut cmd = w.shim();
            cmd.env("CLAUDE_SHIM_REAL", real).args(args);
            let ran = run(cmd, Input::Null);
            if ran.how() != (Some(want), None) || !ran.stdout.is_empty() || ran.stderr.is_empty() {
                problems.push(format!(
                    "{name} {args:?}: shim {:?} stderr {:?}; sh exits {want}",
                    ran.status,
                    ran.err()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The binary vanishes after the shim cached its capabilities (an upgrade in
/// progress): 127 like a shell, and the store stays usable.
#[test]
fn real_binary_removed_after_probe() {
    let w = Sandbox::new();
    let real = w.file("claude-real");
    std::fs::copy(FAKE, &real).unwrap();
    chmod(&real, 0o755);
    let mut c = Chat::new(Client::Wrapper);
    let mut cmd = w.shim();
    cmd.env("CLAUDE_SHIM_REAL", &real);
    let first = format!("one {}", tag("r", 1));
    let input = c.prepare(&mut cmd, &first);
    let ran = run(cmd, input);
    assert!(ran.status.success(), "{}", ran.err());
    c.keep(&first, &ran);
    std::fs::remove_file(&real).unwrap();
    let mut cmd = w.shim();
    cmd.env("CLAUDE_SHIM_REAL", &real);
    let input = c.prepare(&mut cmd, &format!("two {}", tag("r", 2)));
    let ran = run(cmd, input);
    assert_eq!(ran.how(), (Some(127), None), "{}", ran.err());
    assert!(ran.stdout.is_empty());
    std::fs::copy(FAKE, &real).unwrap();
    chmod(&real, 0o755);
    let mut cmd = w.shim();
    cmd.env("CLAUDE_SHIM_REAL", &real);
    let input = c.prepare(&mut cmd, &format!("two {}", tag("r", 2)));
    let ran = run(cmd, input);
    assert!(ran.status.success(), "{}", ran.err());
    assert_eq!(
        c.read(&ran.stdout).unwrap(),
        ack(&[tag("r", 1), tag("r", 2)])
    );
}

// ---- the CLI dies ------------------------------------------------------------------

/// The CLI is killed mid-stream (after its init event, after its reply): the
/// shim ends as the child did, with the same partial output, and pins nothing.
#[test]
fn cli_killed_mid_stream_pins_nothing() {
    for (stage, sig) in [("init", "KILL"), ("reply", "TERM"), ("start", "HUP")] {
        for third_is_resume in [false, true] {
            let w = Sandbox::new();
            let c = if third_is_resume {
                primed(&w, Client::LangChain)
            } else {
                let mut c = Chat::new(Client::LangChain);
                c.history = vec![
                    (format!("first {}", tag("a", 1)), "ack a.1".into()),
                    (format!("second {}", tag("a", 2)), "ack a.1,a.2".into()),
                ];
                c
            };
            let pins_before = pins(&w);
            let die = format!("{stage}:{sig}");
            let (s, d) = both_chat(&w, &c, &third(), |cmd| {
                cmd.env("FAKE_DIE", &die);
            });
            assert!(d.status.signal().is_some(), "the fake died: {:?}", d.status);
            assert_same_masked(&s, &d);
            assert_eq!(pins(&w), pins_before, "{die}: a killed run was pinned");
            let last = runs(&w).pop().unwrap();
            assert!(
                last.exit < 0,
                "{die}: the run is logged as a signal death: {last:?}"
            );
        }
    }
}

/// A caller's SIGTERM while a resume attempt has printed nothing yet (the
/// shim holds output until the CLI accepts the session): the shim must end by
/// it like the CLI would, not take the CLI's death for a refused resume and
/// start the turn over.
#[test]
fn caller_signal_during_a_resume_attempt_is_not_a_refusal() {
    // The CLI dies by the signal, or handles it and exits 143.
    for (client, term_exit) in [
        (Client::Wrapper, None),
        (Client::LangChain, None),
        (Client::Wrapper, Some(143)),
        (Client::LangChain, Some(143)),
    ] {
        let w = Sandbox::new();
        let c = primed(&w, client);
        let starts = w.file("starts");
        let mut cmd = shim(&w);
        cmd.env("FAKE_STARTS", &starts).env("FAKE_START_DELAY", "5");
        if let Some(code) = term_exit {
            cmd.env("FAKE_TERM_EXIT", code.to_string());
        }
        let input = c.prepare(&mut cmd, &third());
        let stdin = match input {
            Input::Bytes(b) => {
                cmd.stdin(Stdio::piped());
                Some(b)
            }
            Input::Null => {
                cmd.stdin(Stdio::null());
                None
            }
        };
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(b) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(&b).unwrap();
        }
        let out = reader(child.stdout.take());
        let err = reader(child.stderr.take());
        eventually(Duration::from_secs(10), "the CLI started", || {
            std::fs::read_to_string(&starts)
                .ok()
                .filter(|s| !s.is_empty())
        });
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
        let status = wait_timeout(&mut child, Duration::from_secs(20)).expect("the shim ended");
        let (out, err) = (out.join().unwrap(), err.join().unwrap());
        let started = std::fs::read_to_string(&starts).unwrap().lines().count();
        let want = match term_exit {
            None => (None, Some(15)),
            Some(code) => (Some(code), None),
        };
        assert_eq!(
            ((status.code(), status.signal()), started, out.len(), err.len()),
            (want, 1, 0, 0),
            "{client:?}, {term_exit:?}: status {status:?}, CLI started {started} times, stdout {:?}\n{}",
            String::from_utf8_lossy(&out),
            context(&w)
        );
        assert_eq!(pins(&w).len(), 2, "nothing new pinned");
    }
}

/// The shim SIGKILLed during an in-place resume leaves its lease behind; the
/// next turn from the same node still resumes in place (a dead holder's lease
/// is taken over), and the answer is complete.
#[test]
fn lease_of_a_killed_shim_is_taken_over() {
    let w = Sandbox::new();
    let mut c = primed(&w, Client::LangChain);
    let starts = w.file("starts");
    let mut cmd = shim(&w);
    cmd.env("FAKE_STARTS", &starts)
        .env("FAKE_START_DELAY", "30");
    let input = c.prepare(&mut cmd, &third());
    assert!(matches!(input, Input::Null));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid: i32 = eventually(Duration::from_secs(10), "the CLI started", || {
        std::fs::read_to_string(&starts).ok()?.trim().parse().ok()
    });
    let leased = heads(&w).iter().any(|h| h.2 == Some(child.id() as i64));
    child.kill().unwrap();
    child.wait().unwrap();
    // The CLI dies with the shim: at once by PR_SET_PDEATHSIG; with the
    // portable fallback (`.ci/test`'s second run) when its pipes to the shim
    // close, at its first write (its init event), after its start delay.
    // Either way before the next turn, which must find no other writer.
    let (gone_within, how) = if claude_shim::env::portable_platform() {
        (Duration::from_secs(90), "at its first write (portable)")
    } else {
        (Duration::from_secs(5), "at once (PR_SET_PDEATHSIG)")
    };
    eventually(gone_within, &format!("the CLI gone {how}"), || {
        (!alive(pid)).then_some(())
    });
    assert!(leased, "the in-place resume held a lease: {:?}", heads(&w));
    let ran = say(&w, &mut c, &third());
    assert_eq!(
        c.read(&ran.stdout).unwrap(),
        ack(&[tag("a", 1), tag("a", 2), tag("a", 3)])
    );
    assert_eq!(
        kinds(&w),
        ["fresh", "resumed", "resumed"],
        "{}",
        context(&w)
    );
    assert!(
        heads(&w).iter().all(|h| h.2.is_none()),
        "no lease left: {:?}",
        heads(&w)
    );
}

// ---- the caller goes away ----------------------------------------------------------

/// The caller reads 10 bytes and closes its end (`claude -p … | head -c 10`).
/// Returns (status, stderr).
fn read_ten_and_close(mut cmd: Command, stdin: Input) -> (std::process::ExitStatus, Vec<u8>) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let bytes = match stdin {
        Input::Bytes(b) => {
            cmd.stdin(Stdio::piped());
            Some(b)
        }
        Input::Null => {
            cmd.stdin(Stdio::null());
            None
        }
    };
    let mut child = cmd.spawn().unwrap();
    if let Some(b) = bytes {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&b).unwrap();
    }
    let err = reader(child.stderr.take());
    let mut out = child.stdout.take().unwrap();
    let mut ten = [0u8; 10];
    out.read_exact(&mut ten).unwrap();
    drop(out);
    let status = wait_timeout(&mut child, Duration::from_secs(60)).expect("it ends");
    (status, err.join().unwrap())
}

/// EPIPE: a CLI that dies by SIGPIPE, and one that reports the error and
/// exits 1 (the fake ignores SIGPIPE, as Node does): the shim ends the same way
/// and says nothing itself.
#[test]
fn caller_closing_stdout_early() {
    for env in [("FAKE_FLOOD", "50000000"), ("FAKE_BYTES", "50000000")] {
        let w = Sandbox::scripted();
        let run_one = |mut cmd: Command| {
            cmd.args(["-p", "hello"]).env(env.0, env.1);
            read_ten_and_close(cmd, Input::Null)
        };
        let (ss, se) = run_one(w.shim());
        let (ds, de) = run_one(w.direct(NO_ARGS));
        assert_eq!(
            (ss.code(), ss.signal()),
            (ds.code(), ds.signal()),
            "{env:?}: shim stderr {}",
            String::from_utf8_lossy(&se)
        );
        assert_eq!(
            String::from_utf8_lossy(&se),
            String::from_utf8_lossy(&de),
            "{env:?}"
        );
    }
}

/// The same on a resumed turn, whose output the shim holds until the CLI
/// accepts the session (stream-json: the init event; text: the exit).
#[test]
fn caller_closing_stdout_early_on_a_resumed_turn() {
    for client in [Client::LangChain, Client::Wrapper] {
        let w = Sandbox::new();
        let c = primed(&w, client);
        let go = |mut cmd: Command| {
            cmd.env("FAKE_REPLY_PAD", "20000000");
            let input = c.prepare(&mut cmd, &third());
            read_ten_and_close(cmd, input)
        };
        let (ss, se) = go(shim(&w));
        let (ds, de) = go(direct(&w));
        assert_eq!(
            (ss.code(), ss.signal()),
            (ds.code(), ds.signal()),
            "{client:?}: shim stderr {}\ndirect stderr {}",
            String::from_utf8_lossy(&se),
            String::from_utf8_lossy(&de)
        );
        assert_eq!(mask_uuids(&se), mask_uuids(&de), "{client:?}");
    }
}

/// The shim ignores SIGXFSZ for its own writes; the CLI must still get the
/// caller's dispositions and mask, managed or passed through, whether the
/// caller left SIGXFSZ at its default or ignored it.
#[test]
fn signal_dispositions_reach_the_cli_unchanged() {
    for caller_ignores in [false, true] {
        for args in [&["-p", "hello"][..], &["--version"][..]] {
            let w = Sandbox::scripted();
            let env = [("FAKE_SIGNALS", "1"), ("FAKE_ON_VERSION", "1")];
            let mut s = w.shim();
            let mut d = w.direct(NO_ARGS);
            for cmd in [&mut s, &mut d] {
                cmd.args(args).envs(env);
                if caller_ignores {
                    // SAFETY: signal() is async-signal-safe.
                    unsafe {
                        cmd.pre_exec(|| {
                            nix::libc::signal(nix::libc::SIGXFSZ, nix::libc::SIG_IGN);
                            Ok(())
                        });
                    }
                }
            }
            let (s, d) = (run(s, Input::Null), run(d, Input::Null));
            assert!(d.out().contains("SigIgn"), "{}", d.out());
            assert_eq!(s.how(), d.how());
            assert_eq!(
                standard_signals(&s.out()),
                standard_signals(&d.out()),
                "ignored {caller_ignores}, {args:?}\nshim:   {}direct: {}",
                s.out(),
                d.out()
            );
        }
    }
}

/// The masks with signals 1..=31 only: glibc claims 32 and 33 (SIGCANCEL,
/// SIGSETXID) for itself in every process that links it, the shim included.
fn standard_signals(masks: &str) -> Vec<(String, u64)> {
    masks
        .lines()
        .filter_map(|l| l.split_once(":\t"))
        .map(|(k, v)| {
            let bits = u64::from_str_radix(v.trim(), 16).unwrap();
            (k.to_string(), bits & 0x7fff_ffff)
        })
        .collect()
}

// ---- the real CLI ------------------------------------------------------------------
// The same faults where only the real Claude Code CLI can tell what happens.

mod real {
    use crate::support::turns::{ack, mask_uuids, say, tag, tags_in};
    use crate::support::{assert_seen_same, Ran};
    use crate::support::{describe, ApiServer, LoggedRequest, Sandbox};
    use crate::support::{Chat, Client};

    /// Every `<<tag>>` in the user messages the model was sent, in order.
    pub fn tags_seen(req: &LoggedRequest) -> Vec<String> {
        req.user_texts().iter().flat_map(|t| tags_in(t)).collect()
    }

    /// A server whose reply names the conversation the model saw.
    pub fn world() -> (ApiServer, Sandbox) {
        let server = ApiServer::start();
        server.set_reply(|req| ack(&tags_seen(req)));
        let mut sb = Sandbox::real(&server);
        let log = sb.root.join("shim.log");
        sb.set_env("CLAUDE_SHIM_LOG", &log);
        // The faults of a cold run (a CLI per turn); a warm turn's are in
        // tests/e2e/warm.rs.
        sb.set_env("CLAUDE_SHIM_WARM", "0");
        (server, sb)
    }

    /// A `Human:`/`Assistant:` client on stdin with text output, two turns in.
    pub fn primed(sb: &Sandbox) -> Chat {
        let mut c = Chat::new(Client::Wrapper);
        say(sb, &mut c, &format!("first {}", tag("a", 1)));
        say(sb, &mut c, &format!("second {}", tag("a", 2)));
        c
    }

    pub fn third() -> String {
        format!("third {}", tag("a", 3))
    }

    pub fn whole() -> String {
        ack(&[tag("a", 1), tag("a", 2), tag("a", 3)])
    }

    /// Through the shim and directly: same status, same bytes (session ids
    /// masked); the shim's debug log when they differ.
    #[track_caller]
    pub fn assert_same(sb: &Sandbox, shim: &Ran, direct: &Ran) {
        let log = || std::fs::read_to_string(sb.root.join("shim.log")).unwrap_or_default();
        assert_seen_same(shim, direct, &|b| mask_uuids(b).into_bytes(), &|| {
            format!(
                "shim:\n{}\ndirect:\n{}\nlog:\n{}",
                describe(shim),
                describe(direct),
                log()
            )
        });
    }

    pub fn session_of_last_turn(server: &ApiServer) -> String {
        server
            .last_main()
            .and_then(|r| r.session_id())
            .expect("a session id")
    }
}

/// The real CLI's session file torn mid-line (a crash while it wrote), in the
/// last record or in the head assistant record: the model must still see the
/// whole conversation, resumed or replayed, and the caller the same answer.
#[test]
fn real_cli_session_file_truncated_mid_line() {
    for cut in ["last-line", "head-assistant", "first-assistant"] {
        let (server, sb) = real::world();
        let c = real::primed(&sb);
        let session = real::session_of_last_turn(&server);
        let file = sb.session_file(&session).expect("session file");
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let assistants: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains("\"type\":\"assistant\""))
            .map(|(i, _)| i)
            .collect();
        let at = match cut {
            "last-line" => lines.len() - 1,
            "head-assistant" => *assistants.last().unwrap(),
            _ => assistants[0],
        };
        let mut torn: String = lines[..at].concat();
        torn.push_str(&lines[at][..lines[at].len() / 2]);
        std::fs::write(&file, &torn).unwrap();

        let prompt = c.render(&real::third());
        let before = server.main_requests().len();
        let shim = crate::support::run(sb.shimmed(["-p"]), prompt.as_bytes());
        let shim_requests = server.main_requests()[before..].to_vec();
        let direct = crate::support::run(sb.direct(["-p"]), prompt.as_bytes());
        real::assert_same(&sb, &shim, &direct);
        assert_eq!(
            String::from_utf8_lossy(&direct.stdout).trim(),
            real::whole(),
            "{cut}"
        );
        let last = shim_requests
            .last()
            .expect("the shim's turn reached the server");
        assert_eq!(
            real::tags_seen(last),
            [tag("a", 1), tag("a", 2), tag("a", 3)],
            "{cut}: the model saw the whole conversation once: {:?}",
            last.transcript()
        );
        eprintln!(
            "torn {cut}: {} request(s), last plan/refusal {:?}",
            shim_requests.len(),
            std::fs::read_to_string(sb.root.join("shim.log"))
                .unwrap_or_default()
                .lines()
                .rfind(|l| l.contains("plan:") || l.contains("refused"))
        );
    }
}

/// The session file vanishes between the shim's decision and the real CLI's
/// start (a wrapper deletes it, then execs the CLI): the CLI refuses the
/// resume, the shim reruns fresh, the caller gets the same answer as without
/// the shim and no trace of the refusal.
#[test]
fn real_cli_session_file_deleted_between_lookup_and_run() {
    let (server, mut sb) = real::world();
    // The real binary is part of a conversation's identity: the wrapper runs
    // every turn, and deletes only once armed.
    let wrapper = sb.root.join("deleting-claude");
    let armed = sb.root.join("armed");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n# (the shim's probe looks for --resume-session-at in the binary)\n\
             if [ -e '{}' ] && [ \"$1\" = --resume ]; then\n\
             rm -f \"$HOME\"/.claude/projects/*/\"$2\".jsonl\nfi\n\
             exec '{}' \"$@\"\n",
            armed.display(),
            sb.real_cli.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.set_env("CLAUDE_SHIM_REAL", &wrapper);
    let c = real::primed(&sb);
    let session = real::session_of_last_turn(&server);
    std::fs::write(&armed, "").unwrap();
    let prompt = c.render(&real::third());
    let shim = crate::support::run(sb.shimmed(["-p"]), prompt.as_bytes());
    let direct = crate::support::run(sb.direct(["-p"]), prompt.as_bytes());
    real::assert_same(&sb, &shim, &direct);
    assert_eq!(String::from_utf8_lossy(&shim.stdout).trim(), real::whole());
    assert!(
        sb.session_file(&session).is_none(),
        "the wrapper deleted it"
    );
    let log = std::fs::read_to_string(sb.root.join("shim.log")).unwrap_or_default();
    assert_eq!(log.matches("resume refused").count(), 1, "{log}");
}

/// `claude -p … | head -c 10` with the real CLI and a long reply, on a fresh
/// and on a resumed turn: the same exit status and stderr as without the shim.
#[test]
fn real_cli_caller_closing_stdout_early() {
    let (server, sb) = real::world();
    let c = real::primed(&sb);
    server.set_reply_size(Some(4 << 20));
    let prompt = c.render(&real::third());
    let go = |mut cmd: Command| {
        cmd.current_dir(&sb.work);
        let (status, err) = read_ten_and_close(cmd, Input::Bytes(prompt.clone().into_bytes()));
        ((status.code(), status.signal()), mask_uuids(&err))
    };
    // The shim resumes this turn (its output is held until the CLI exits).
    let shim_resumed = go(sb.shimmed(["-p"]));
    let direct = go(sb.direct(["-p"]));
    assert_eq!(shim_resumed, direct, "resumed turn");
    // A first turn runs fresh: output streams through.
    let fresh = |cmd: Command| {
        let mut cmd = cmd;
        cmd.current_dir(&sb.work);
        let (status, err) = read_ten_and_close(
            cmd,
            Input::Bytes(format!("Human: hello {}", tag("b", 1)).into_bytes()),
        );
        ((status.code(), status.signal()), mask_uuids(&err))
    };
    assert_eq!(
        fresh(sb.shimmed(["-p"])),
        fresh(sb.direct(["-p"])),
        "fresh turn"
    );
    eprintln!("real CLI, stdout closed after 10 bytes: {direct:?}");
}

/// The real CLI killed mid-stream (after its init event, while the model is
/// answering): the shim ends by the same signal with the same partial output
/// and pins nothing.
#[test]
fn real_cli_killed_mid_stream() {
    let (server, sb) = real::world();
    let mut c = real::primed(&sb);
    let db = sb.shim_home.join("shim.db");
    let count_pins = || -> i64 {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row("SELECT COUNT(*) FROM pins", [], |r| r.get(0))
            .unwrap()
    };
    let pins_before = count_pins();
    server.set_latency(Duration::from_secs(20));
    let prompt = c.render(&real::third());
    let args = ["-p", "--output-format", "stream-json", "--verbose"];
    let kill_the_cli = |cmd: Command, through_shim: bool| -> (Option<i32>, String) {
        let mut cmd = cmd;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(prompt.as_bytes()).unwrap();
        }
        let mut out = Tap::new(child.stdout.take().unwrap());
        let err = reader(child.stderr.take());
        out.expect(b"\"subtype\":\"init\"", Duration::from_secs(60));
        let cli = if through_shim {
            eventually(Duration::from_secs(10), "the CLI under the shim", || {
                children(child.id()).into_iter().next()
            })
        } else {
            child.id()
        };
        kill(Pid::from_raw(cli as i32), Signal::SIGKILL).unwrap();
        let status = wait_timeout(&mut child, Duration::from_secs(30)).expect("ends");
        let stdout = out.finish(Duration::from_secs(10));
        let stderr = err.join().unwrap();
        assert!(stderr.is_empty(), "{}", String::from_utf8_lossy(&stderr));
        (status.signal(), sb.mask(&String::from_utf8_lossy(&stdout)))
    };
    let shim = kill_the_cli(sb.shimmed(args), true);
    let direct = kill_the_cli(sb.direct(args), false);
    server.set_latency(Duration::ZERO);
    assert_eq!(direct.0, Some(9));
    assert_eq!(shim, direct);
    assert_eq!(count_pins(), pins_before, "a killed run was pinned");
    // The conversation goes on: the killed turn again, resumed.
    let out = say(&sb, &mut c, &real::third());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), real::whole());
}

/// Child pids of `pid` (its threads' children).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// A live CLI that writes on stderr while idle (a warning at its start, here
/// the CLI started ready for the next conversation) is ended, and the keeper
/// goes on answering: it read the pipe that had something. It used to read
/// the other one, stdout, and wait there for good, every later turn paying
/// its timeouts.
#[test]
fn a_live_cli_writing_on_stderr_while_idle_leaves_the_keeper_answering() {
    let mut w = Sandbox::new();
    // Text-input calls in live CLIs (as shipped they run cold).
    w.set_env("CLAUDE_SHIM_WARM", "1")
        .set_env("CLAUDE_SHIM_WARM_TEXT", "1");
    let mut chat = Chat::new(Client::Wrapper);
    say(&w, &mut chat, "one <<s.1>>");
    let mut cmd = shim(&w);
    cmd.env("FAKE_STDERR", "warn\\n");
    let input = chat.prepare(&mut cmd, "two <<s.2>>");
    let ran = run(cmd, input);
    assert!(ran.status.success(), "{}", describe(&ran));
    chat.keep("two <<s.2>>", &ran);
    let log = w.file("shim.log");
    eventually(Duration::from_secs(20), "an idle live CLI stirred", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("stirred (warn").then_some(())
    });
    // The keeper still answers.
    let status = ok(w.cli(&["warm", "status", "--json"]));
    let status: serde_json::Value = serde_json::from_str(&status).expect("status JSON");
    assert!(status["keeper"]["pid"].is_i64(), "{status}");
    let third = say(&w, &mut chat, "three <<s.3>>");
    assert!(third.out().contains("ack s.1,s.2,s.3"), "{}", third.out());
}
