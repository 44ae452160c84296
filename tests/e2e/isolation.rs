//! A call's whole world, against the REAL CLI and the loopback API server: what a
//! call carries besides its text — inherited descriptors, credentials, the tenant,
//! the environment that shapes a session, umask and limits — and what a process
//! that outlives it (the keeper, live and ready CLIs) may keep of it: nothing but
//! what a warm turn needs. Each test fails on the build before the fix (issue 28).

use crate::support::clients::Chat;
use crate::support::store::run_rows;
use crate::support::{describe, run, run_with_timeout, ApiServer, Client, Input, Ran, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A sandbox with its debug log, warm turns on unless `warm` is false.
fn sandbox(server: &ApiServer, warm: bool) -> Sandbox {
    let mut sb = Sandbox::real(server);
    // What outlives a call includes the CLIs started ready.
    sb.ready_clis();
    if !warm {
        sb.set_env("CLAUDE_SHIM_WARM", "0");
    }
    let log = sb.root.join("shim.log");
    sb.set_env("CLAUDE_SHIM_LOG", &log);
    sb
}

/// One turn of `chat` through the shim (kept in its history when it succeeds).
fn turn(sb: &Sandbox, chat: &mut Chat, msg: &str) -> Ran {
    let mut cmd = sb.shimmed(crate::support::NO_ARGS);
    let input = chat.prepare(&mut cmd, msg);
    let out = run(cmd, input);
    assert!(out.status.success(), "{}", describe(&out));
    chat.keep(msg, &out);
    out
}

fn engines(sb: &Sandbox) -> Vec<String> {
    run_rows(&sb.shim_home)
        .into_iter()
        .map(|r| r.engine)
        .collect()
}

/// The live CLIs' pids and the keeper's, from `warm status --json`.
fn keeper_and_clis(sb: &Sandbox) -> (Option<i32>, Vec<i32>) {
    let out = run(sb.cli(&["warm", "status", "--json"]), Input::Null);
    assert!(out.status.success(), "{}", describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keeper = v["keeper"]["pid"].as_i64().map(|p| p as i32);
    let clis = v["keeper"]["live"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|l| l["pid"].as_i64())
                .map(|p| p as i32)
                .collect()
        })
        .unwrap_or_default();
    (keeper, clis)
}

fn stop_keeper(sb: &Sandbox) {
    let out = run(sb.cli(&["warm", "stop"]), Input::Null);
    assert!(out.status.success(), "{}", describe(&out));
}

/// A transcript prompt (not a one-shot): its turn starts a live CLI.
const TRANSCRIPT: &str = "Human: first\n\nAssistant: an answer\n\nHuman: second";

/// A caller that hands the CLI extra inheritable descriptors, then waits for what
/// it waits for without the shim: end-of-file on the CLI's stdout (a socketpair,
/// as uvloop gives a child, with an extra inheritable copy), on a pipe (as bash's
/// process substitution hands down), a listening port it can bind again and a lock
/// it can take again once the call is over. Prints what it found, as JSON.
const FD_CALLER: &str = r#"
import fcntl, json, os, select, socket, subprocess, sys
prompt, lock_path = sys.argv[1], sys.argv[2]
pr, pw = os.pipe(); os.set_inheritable(pw, True)
ours, theirs = socket.socketpair()
extra = os.dup(theirs.fileno()); os.set_inheritable(extra, True)
listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen()
port = listener.getsockname()[1]; listener.set_inheritable(True)
lock = open(lock_path, "w"); fcntl.flock(lock, fcntl.LOCK_EX); os.set_inheritable(lock.fileno(), True)
p = subprocess.Popen(["claude", "-p"], stdin=subprocess.PIPE, stdout=theirs.fileno(), close_fds=False)
theirs.close(); os.close(extra)
p.stdin.write(prompt.encode()); p.stdin.close()
def drained(fd, wait=30.0):
    data = b""
    while True:
        r, _, _ = select.select([fd], [], [], wait)
        if not r:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk
out = drained(ours.fileno())
code = p.wait()
os.close(pw)
piped = drained(pr)
listener.close(); lock.close()
again = socket.socket()
try:
    again.bind(("127.0.0.1", port)); port_free = True
except OSError:
    port_free = False
relock = open(lock_path, "w")
try:
    fcntl.flock(relock, fcntl.LOCK_EX | fcntl.LOCK_NB); lock_free = True
except OSError:
    lock_free = False
print(json.dumps({"code": code, "stdout_eof": out is not None, "pipe_eof": piped is not None,
                  "port_free": port_free, "lock_free": lock_free, "reply": (out or b"").decode()}))
"#;

/// Whether any of `pids` holds a descriptor the caller gave: one of the caller's
/// lock file, or any socket or pipe at all besides fds 0–2 (a live CLI's own are
/// its stdio; the keeper's sockets are its listener and its connections, which it
/// made itself and which do not show the caller's inodes).
fn holds(pids: &[i32], inodes: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                let t = target.to_string_lossy().into_owned();
                if inodes.iter().any(|i| t.contains(i.as_str())) {
                    found.push(format!("pid {pid} fd {:?} → {t}", fd.file_name()));
                }
            }
        }
    }
    found
}

#[test]
fn a_callers_inherited_descriptors_do_not_outlive_the_call() {
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    let lock = sb.root.join("caller.lock");
    for shimmed in [false, true] {
        let mut cmd = sb.client("python3", ["-c", FD_CALLER, TRANSCRIPT]);
        cmd.arg(&lock);
        if !shimmed {
            cmd.env("PATH", sb.direct_path());
        }
        let out = run_with_timeout(cmd, Input::Null, Duration::from_secs(240));
        assert!(out.status.success(), "{}", describe(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        for check in ["stdout_eof", "pipe_eof", "port_free", "lock_free"] {
            assert_eq!(
                v[check], true,
                "shimmed {shimmed}: {check} failed: the caller waits on a process \
                 that outlived its call ({v})"
            );
        }
        assert_eq!(v["code"], 0, "{v}");
        assert!(v["reply"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    }
    // It really ran warm: a keeper and a live CLI outlived the call.
    assert_eq!(engines(&sb), ["live"]);
    let (keeper, clis) = keeper_and_clis(&sb);
    let keeper = keeper.expect("a keeper runs");
    assert!(!clis.is_empty());
    // And they hold nothing of the caller's: not even its lock file.
    let mut all = clis.clone();
    all.push(keeper);
    let lock_name = lock.to_string_lossy().into_owned();
    assert_eq!(holds(&all, &[lock_name]), Vec::<String>::new());
    stop_keeper(&sb);
}

#[test]
fn bash_process_substitution_ends_when_the_call_does() {
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    // `> >(cat)`: bash hands the child the substitution's pipe; `$(…)` waits for
    // every copy of its own pipe to close, cat's included.
    let script = r#"out=$(printf '%s' "$1" | claude -p > >(cat)); printf 'got:%s' "$out""#;
    let mut cmd = sb.client("bash", ["-c", script, "bash", TRANSCRIPT]);
    cmd.env("BASH_ENV", "/dev/null");
    let out = run_with_timeout(cmd, Input::Null, Duration::from_secs(120));
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("got:"),
        "{}",
        describe(&out)
    );
    assert_eq!(engines(&sb), ["live"], "it ran warm");
    stop_keeper(&sb);
}

/// The session id each main request was made for, in order.
fn sessions_asked(server: &ApiServer) -> Vec<String> {
    server
        .main_requests()
        .iter()
        .map(|r| r.session_id().unwrap_or_default())
        .collect()
}

/// Two end users of one proxy — same OS user, cwd, flags and first message, each
/// call with its own credentials (or its own `CLAUDE_SHIM_SCOPE`) — never share a
/// session: A's second turn continues A's session, not B's (whose tool output, had
/// there been any, would otherwise reach A's model on A's key).
fn two_end_users(warm: bool, var: &str, a: &str, b: &str) {
    let server = ApiServer::start();
    // The same reply to both: B's turn 1 looks exactly like A's.
    server.set_reply(|_| "the same reply".to_owned());
    let sb = sandbox(&server, warm);
    let mut alice = Chat::new(Client::Wrapper);
    alice.env.push((var.into(), a.into()));
    let mut bob = Chat::new(Client::Wrapper);
    bob.env.push((var.into(), b.into()));
    turn(&sb, &mut alice, "hello");
    turn(&sb, &mut bob, "hello");
    turn(&sb, &mut alice, "and then?");
    let asked = sessions_asked(&server);
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_ne!(asked[0], asked[1], "two users, two sessions");
    assert_eq!(
        asked[2], asked[0],
        "A's second turn must continue A's session (B's is {})",
        asked[1]
    );
    let last = server.last_main().unwrap();
    assert_eq!(last.user_texts().last().unwrap(), "and then?");
    assert!(last.messages().len() > 1, "it was resumed, not replayed");
    if var == "ANTHROPIC_API_KEY" {
        assert_eq!(last.header("x-api-key"), Some(a));
    }
    if warm {
        stop_keeper(&sb);
    }
}

#[test]
fn end_users_with_their_own_keys_never_share_a_session() {
    two_end_users(false, "ANTHROPIC_API_KEY", "sk-test-alice", "sk-test-bob");
}

#[test]
fn end_users_with_their_own_keys_never_share_a_live_cli() {
    two_end_users(true, "ANTHROPIC_API_KEY", "sk-test-alice", "sk-test-bob");
}

#[test]
fn tenants_never_share_a_session() {
    two_end_users(false, "CLAUDE_SHIM_SCOPE", "tenant-a", "tenant-b");
    two_end_users(true, "CLAUDE_SHIM_SCOPE", "tenant-a", "tenant-b");
}

/// An evaluator on another key quotes an earlier run's prompt and reply and asks
/// about it: a one-shot call, not that run's next turn. The model sees one message,
/// as without the shim.
#[test]
fn a_quotation_on_another_key_is_not_a_continuation() {
    let server = ApiServer::start();
    server.set_reply(|_| "four, since two and two make four".to_owned());
    let sb = sandbox(&server, false);
    let mut run1 = Chat::new(Client::Wrapper);
    run1.env
        .push(("ANTHROPIC_API_KEY".into(), "sk-test-runner".into()));
    turn(&sb, &mut run1, "What is two plus two?");
    let quote = format!(
        "What is two plus two?\n\n{}\n\nRate the reply above from 1 to 10.",
        run1.history[0].1
    );
    let mut cmd = sb.shimmed(["-p"]);
    cmd.env("ANTHROPIC_API_KEY", "sk-test-evaluator");
    let out = run(cmd, quote.as_bytes());
    assert!(out.status.success(), "{}", describe(&out));
    let last = server.last_main().unwrap();
    let asked = sessions_asked(&server);
    assert_ne!(asked[1], asked[0], "a session of its own");
    assert_eq!(
        last.texts_by_message("user").len(),
        1,
        "one message, as sent"
    );
    assert!(
        last.assistant_texts().is_empty(),
        "not told it wrote the reply"
    );
}

/// `ANTHROPIC_MODEL` changed between turns: the CLI would start the new turn with
/// the new model's system prompt; a resume keeps the old. So the turn runs as a new
/// session with the whole transcript, as without the shim — cold and warm. With the
/// variable unchanged the same turn resumes (the check can tell).
fn changed_model_variable(warm: bool) {
    let server = ApiServer::start();
    let sb = sandbox(&server, warm);
    let mut chat = Chat::new(Client::Wrapper);
    chat.env
        .push(("ANTHROPIC_MODEL".into(), "claude-sonnet-4-5".into()));
    turn(&sb, &mut chat, "one");
    turn(&sb, &mut chat, "two");
    let resumed = server.last_main().unwrap();
    assert!(resumed.messages().len() > 1, "unchanged: it resumes");
    chat.env[0].1 = "claude-opus-4-1".into();
    turn(&sb, &mut chat, "three");
    let last = server.last_main().unwrap();
    assert_ne!(last.model(), resumed.model(), "the new model");
    assert_eq!(
        last.texts_by_message("user").len(),
        1,
        "a new session with the whole transcript: {:?}",
        last.transcript()
    );
    let rows = run_rows(&sb.shim_home);
    assert_eq!(rows.last().unwrap().kind, "fresh", "{rows:?}");
    if warm {
        stop_keeper(&sb);
    }
}

#[test]
fn a_changed_model_variable_starts_a_new_session() {
    changed_model_variable(false);
}

#[test]
fn a_changed_model_variable_starts_a_new_live_session() {
    changed_model_variable(true);
}

/// `/proc/PID/status`'s umask and `/proc/PID/limits`' soft file-size limit;
/// `None` for a process that has ended (a CLI being ended may be a zombie for
/// a moment, which has no umask).
fn umask_and_fsize(pid: i32) -> Option<(String, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))?
        .trim()
        .to_owned();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let fsize = limits
        .lines()
        .find(|l| l.starts_with("Max file size"))?
        .split_whitespace()
        .nth(3)?
        .to_owned();
    Some((umask, fsize))
}

/// A live CLI runs with the umask and limits of the caller it serves — not the
/// keeper's (umask 077) or those of whoever started the keeper — and serves no
/// caller whose settings differ.
#[test]
fn a_live_cli_has_its_callers_umask_and_limits() {
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    let call = |umask: &str, fsize: &str, prompt: &str| {
        let script = format!("umask {umask}; ulimit -S -f {fsize}; exec claude -p");
        let out = run(sb.client("sh", ["-c", &script]), prompt.as_bytes());
        assert!(out.status.success(), "{}", describe(&out));
        out
    };
    // The keeper starts with this caller's settings…
    call(
        "077",
        "unlimited",
        "Human: a\n\nAssistant: b\n\nHuman: conversation one",
    );
    // …and another caller's live CLI gets that caller's.
    let two = "Human: c\n\nAssistant: d\n\nHuman: conversation two";
    let out = call("022", "4096", two);
    let (_, clis) = keeper_and_clis(&sb);
    let mine: Vec<(String, String)> = clis.iter().filter_map(|&p| umask_and_fsize(p)).collect();
    assert!(
        mine.contains(&("0022".to_owned(), (4096 * 512).to_string())),
        "{mine:?}"
    );
    assert_eq!(engines(&sb), ["live", "live"]);
    // The same conversation's next turn from a caller with another umask: not
    // served by the live CLI made for 022.
    let reply = crate::support::clients::text_reply(&out.stdout);
    let next = format!("{two}\n\nAssistant: {reply}\n\nHuman: and on");
    call("027", "4096", &next);
    assert_ne!(engines(&sb).last().unwrap(), "warm");
    stop_keeper(&sb);
}

/// A conversation two turns in, its second warm (a keeper and a live CLI run).
fn warmed() -> (ApiServer, Sandbox, Chat) {
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    let mut chat = Chat::new(Client::Wrapper);
    turn(&sb, &mut chat, "one");
    turn(&sb, &mut chat, "two");
    (server, sb, chat)
}

/// A keeper stopped (SIGSTOP: a debugger, a frozen container) costs one turn its
/// wait for the keeper's hello, not every turn; continued, it serves again.
#[test]
fn a_stopped_keeper_costs_one_turn() {
    let (_server, sb, mut chat) = warmed();
    let (keeper, _) = keeper_and_clis(&sb);
    let keeper = nix::unistd::Pid::from_raw(keeper.expect("a keeper"));
    nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let log = sb.root.join("shim.log");
    let before = std::fs::read_to_string(&log).unwrap_or_default().len();
    turn(&sb, &mut chat, "three");
    turn(&sb, &mut chat, "four");
    let text = std::fs::read_to_string(&log).unwrap();
    let since = &text[before..];
    let waited = since.matches("keeper hello failed").count();
    nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(waited, 1, "one turn waits for the stopped keeper:\n{since}");
    assert!(since.contains("did not answer lately"), "{since}");
    // Continued, the keeper is asked again.
    turn(&sb, &mut chat, "five");
    assert_eq!(engines(&sb).last().unwrap(), "live", "{:?}", engines(&sb));
    stop_keeper(&sb);
}

/// `warm stop` leaves no keeper or CLI behind, even when the data dir is gone and
/// the keeper cannot notice it by itself (stopped).
#[test]
fn warm_stop_leaves_nothing_even_without_the_data_dir() {
    let (_server, sb, _chat) = warmed();
    let (keeper, clis) = keeper_and_clis(&sb);
    assert!(!clis.is_empty());
    let keeper = nix::unistd::Pid::from_raw(keeper.expect("a keeper"));
    nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGSTOP).unwrap();
    std::fs::remove_dir_all(&sb.shim_home).unwrap();
    let out = run(sb.cli(&["warm", "stop"]), Input::Null);
    assert!(out.status.success(), "{}", describe(&out));
    let left = crate::support::world::processes_with_home(&sb.home);
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(left, Vec::<i32>::new(), "{}", describe(&out));
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn last_engine(sb: &Sandbox) -> String {
    engines(sb).pop().unwrap_or_default()
}

/// A ready CLI took its snapshot of the directory when it started — the git
/// status, CLAUDE.md and what it `@`-imports. After a commit, or an edit to an
/// imported file, a new conversation must not get that old snapshot: it starts
/// its own CLI, as a cold start would read the new state. Unchanged, it takes the
/// ready CLI (the check can tell).
#[test]
fn a_commit_or_an_edited_import_keeps_the_ready_cli_from_a_new_conversation() {
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    git(&sb.work, &["init", "-q"]);
    git(&sb.work, &["commit", "-q", "--allow-empty", "-m", "first"]);
    std::fs::write(sb.work.join("CLAUDE.md"), "Read @notes.md first.\n").unwrap();
    std::fs::write(sb.work.join("notes.md"), "Be brief.\n").unwrap();
    let new_conversation = |msg: &str| {
        let mut chat = Chat::new(Client::Wrapper);
        turn(&sb, &mut chat, msg);
        last_engine(&sb)
    };
    new_conversation("one");
    assert_eq!(
        new_conversation("two"),
        "ready",
        "unchanged: the ready CLI serves"
    );
    git(&sb.work, &["commit", "-q", "--allow-empty", "-m", "second"]);
    assert_eq!(
        new_conversation("three"),
        "live",
        "after a commit: {:?}",
        engines(&sb)
    );
    std::fs::write(sb.work.join("notes.md"), "Be thorough.\n").unwrap();
    assert_eq!(
        new_conversation("four"),
        "live",
        "after an import's edit: {:?}",
        engines(&sb)
    );
    stop_keeper(&sb);
}

/// The CLI's Bash tool runs with a snapshot of the user's shell start-up files
/// taken when the CLI started. An alias added to `~/.bashrc` between turns: a cold
/// resume would have it, so the next turn does not run in the old live CLI.
#[test]
fn a_new_shell_alias_keeps_the_live_cli_from_the_next_turn() {
    let (_server, sb, mut chat) = warmed();
    assert_eq!(last_engine(&sb), "warm", "unchanged: warm");
    std::fs::write(sb.home.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
    turn(&sb, &mut chat, "three");
    assert_eq!(last_engine(&sb), "live", "{:?}", engines(&sb));
    stop_keeper(&sb);
}

/// The pid of `session`'s live CLI, as `warm status` lists it (also while it is
/// being ended).
fn live_cli_of(sb: &Sandbox, session: &str) -> Option<i32> {
    let out = run(sb.cli(&["warm", "status", "--json"]), Input::Null);
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    v["keeper"]["live"]
        .as_array()?
        .iter()
        .find(|l| l["session"] == session)
        .and_then(|l| l["pid"].as_i64())
        .map(|p| p as i32)
}

/// A streaming caller's timeout SIGKILLs its `claude` after the first output byte
/// of a warm turn (the init line), while the request is in flight. Without the
/// shim the CLI dies with it. Through the shim the live CLI must too: no request
/// is made for the killed turn after that, the session keeps no trace of the
/// killed message, and the caller's next, different message reaches the model
/// without it.
#[test]
fn a_warm_turn_killed_at_its_first_byte_leaves_no_trace() {
    use std::io::{Read, Write};
    let server = ApiServer::start();
    let sb = sandbox(&server, true);
    // Positional prompt, stream-json output.
    let mut chat = Chat::new(Client::LangChain);
    // (A bare first message is a one-shot: its next turn starts the live CLI.)
    for k in 1..=3 {
        turn(&sb, &mut chat, &format!("message {k}"));
    }
    assert_eq!(last_engine(&sb), "warm");
    let session = run_rows(&sb.shim_home).pop().unwrap().session.unwrap();
    let served = live_cli_of(&sb, &session).expect("the conversation's live CLI");
    server.set_latency(Duration::from_secs(3));
    let mut cmd = sb.shimmed(crate::support::NO_ARGS);
    let input = chat.prepare(&mut cmd, "message 4 (killed)");
    let stdin = match input {
        Input::Bytes(_) => std::process::Stdio::piped(),
        Input::Null => std::process::Stdio::null(),
    };
    cmd.stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    if let Input::Bytes(b) = input {
        child.stdin.take().unwrap().write_all(&b).unwrap();
    }
    let mut first = [0u8; 1];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let killed_at = server.main_requests().len();
    // The live CLI that served the turn dies with its caller, before the
    // answer it asked for (3 s away) could come.
    let alive = || std::path::Path::new(&format!("/proc/{served}")).exists();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the live CLI of the killed turn still runs");
    server.set_latency(Duration::ZERO);
    turn(&sb, &mut chat, "message 5");
    let requests = server.main_requests();
    // At most one for the killed turn, if it was already on its way at the
    // kill (as it may be without the shim), and the new message's.
    assert!(
        requests.len() <= killed_at + 2,
        "no request for the killed turn after the kill: {} then {}",
        killed_at,
        requests.len()
    );
    let seen = requests.last().unwrap().user_texts().join("\n");
    assert!(
        !seen.contains("killed") && seen.contains("message 5"),
        "the model saw the killed message: {seen}"
    );
    for f in sb.session_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("message 4 (killed)"),
            "{} keeps the killed message",
            f.display()
        );
    }
    stop_keeper(&sb);
}
