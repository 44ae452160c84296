//! Warm turns against the REAL CLI and the loopback API server: a conversation's next
//! turn runs in the live process of its last turn (kept by the keeper), and the caller
//! sees the same bytes and exit statuses as with cold runs (ids, timings and paths
//! masked), while the API requests carry one copy of history. Faults: the keeper or the
//! live CLI killed, the caller killed mid-turn, TTL expiry, a full pool, two turns at
//! once, the environment changed — every turn answered, no stray process, every line
//! of the session file intact.

use crate::support::clients::{labels, result_reply, text_reply};
use crate::support::mask::mask_usage;
use crate::support::{describe, run, Ran, World};
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    StreamJson,
}

impl Format {
    fn args(self) -> Vec<&'static str> {
        match self {
            Format::Text => vec!["-p"],
            Format::Json => vec!["-p", "--output-format", "json", "--max-turns", "5"],
            Format::StreamJson => vec!["-p", "--output-format", "stream-json", "--verbose"],
        }
    }

    fn reply(self, out: &Ran) -> String {
        match self {
            Format::Text => text_reply(&out.stdout),
            Format::Json => serde_json::from_slice::<Value>(&out.stdout).expect("json result")
                ["result"]
                .as_str()
                .expect("result text")
                .to_owned(),
            Format::StreamJson => result_reply(&out.stdout),
        }
    }
}

/// A world whose client names its output format each turn.
struct Caller(World);

impl std::ops::Deref for Caller {
    type Target = World;
    fn deref(&self) -> &World {
        &self.0
    }
}

impl std::ops::DerefMut for Caller {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.0
    }
}

impl Caller {
    /// The keeper's own suite: with ready CLIs, as users run it.
    fn new(warm: bool) -> Caller {
        let mut w = World::warm(warm);
        w.sb.ready_clis();
        Caller(w)
    }

    /// One turn of a `Human:`/`Assistant:` client replaying its transcript on stdin.
    fn turn(&mut self, format: Format, msg: &str) -> Ran {
        self.turn_with(format, &[], msg)
    }

    /// [`Caller::turn`] with more flags.
    fn turn_with(&mut self, format: Format, extra: &[&str], msg: &str) -> Ran {
        let mut args = format.args();
        args.extend_from_slice(extra);
        let cmd = self.sb.shimmed(args);
        self.send(cmd, msg, |out| format.reply(out))
    }

    /// `(kind, engine)` of every managed turn, in order.
    fn runs(&self) -> Vec<(String, String)> {
        self.0
            .runs()
            .into_iter()
            .map(|r| (r.kind, r.engine))
            .collect()
    }
}

/// Wait until a request carrying `msg` reached the API server: the turn is
/// in the CLI's hands (a fixed sleep is not enough on a loaded machine).
fn request_reached_the_model(w: &World, msg: &str) {
    eventually(Duration::from_secs(30), "the turn's request", || {
        w.server
            .requests()
            .iter()
            .any(|r| r.last_user_text().is_some_and(|t| t.contains(msg)))
            .then_some(())
    });
}

fn eventually<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn same_as_cold(format: Format) {
    let turns = 10;
    let mut cold = Caller::new(false);
    let mut warm = Caller::new(true);
    for k in 1..=turns {
        let msg = format!("message {k}");
        let c = cold.turn(format, &msg);
        let w = warm.turn(format, &msg);
        assert_eq!(c.status.code(), w.status.code(), "turn {k}");
        let mask = |wd: &World, o: &[u8]| mask_usage(&wd.sb.mask(&String::from_utf8_lossy(o)));
        assert_eq!(
            mask(&cold, &c.stdout),
            mask(&warm, &w.stdout),
            "turn {k} stdout:\n{}",
            describe(&w)
        );
        assert_eq!(
            mask(&cold, &c.stderr),
            mask(&warm, &w.stderr),
            "turn {k} stderr"
        );
    }
    let engines: Vec<String> = warm.runs().into_iter().map(|(_, e)| e).collect();
    if engines.iter().skip(1).any(|e| e != "warm") {
        eprintln!(
            "{}",
            std::fs::read_to_string(warm.sb.root.join("shim.log")).unwrap_or_default()
        );
    }
    let mut want = vec!["live".to_string()];
    want.extend(std::iter::repeat_n("warm".to_string(), turns - 1));
    assert_eq!(
        engines, want,
        "turn 1 starts the live CLI, the rest run in it"
    );
    let cold_engines: Vec<String> = cold.runs().into_iter().map(|(_, e)| e).collect();
    assert!(cold_engines.iter().all(|e| e == "cold"), "{cold_engines:?}");
    // The same requests (one copy of history each), warm and cold, but for what a
    // multi-turn process is told (see `known_differences`).
    let (c, w) = (cold.server.main_requests(), warm.server.main_requests());
    assert_eq!(c.len(), turns);
    assert_eq!(w.len(), turns);
    for (k, (c, w)) in c.iter().zip(&w).enumerate() {
        let transcript = |wd: &World, r: &crate::support::LoggedRequest| {
            wd.sb.mask(&format!("{:?}", r.transcript()))
        };
        assert_eq!(
            transcript(&cold, c),
            transcript(&warm, w),
            "request {}",
            k + 1
        );
        assert_eq!(w.user_texts().len(), k + 1, "request {}: one copy", k + 1);
        let masked = |wd: &World, v: &Value| wd.sb.mask(&v.to_string());
        assert_eq!(
            masked(&cold, &c.body["system"]),
            masked(&warm, &w.body["system"]),
            "request {}",
            k + 1
        );
        let (ct, wt) = (
            known_differences(&c.body, format),
            known_differences(&w.body, format),
        );
        assert_eq!(
            masked(&cold, &ct),
            masked(&warm, &wt),
            "request {} tools and thinking",
            k + 1
        );
    }
    warm.assert_session_files_intact();
    warm.stop_keeper();
    assert!(eventually(
        Duration::from_secs(10),
        "the live CLI to end",
        || { warm.processes().is_empty().then_some(true) }
    ));
}

/// The two things a live (multi-turn, stream-json) process tells the model otherwise
/// than a one-shot `-p` run, normalised to the one-shot form (checked on 2.1.330, not
/// reachable by flags): Bash's default background timeout (30 min instead of 10), and,
/// for callers without `--verbose`, thinking display `updates` instead of `omitted`.
fn known_differences(body: &Value, format: Format) -> Value {
    let mut tools = serde_json::to_string(&body["tools"]).unwrap();
    tools = tools.replace("default 1800000", "default 600000");
    let mut thinking = body["thinking"].clone();
    if format != Format::StreamJson && thinking["display"] == "updates" {
        thinking["display"] = "omitted".into();
    }
    serde_json::json!({ "tools": tools, "thinking": thinking })
}

#[test]
fn warm_turns_print_what_cold_turns_print_in_text() {
    same_as_cold(Format::Text);
}

#[test]
fn warm_turns_print_what_cold_turns_print_in_json() {
    same_as_cold(Format::Json);
}

#[test]
fn warm_turns_print_what_cold_turns_print_in_stream_json() {
    same_as_cold(Format::StreamJson);
}

// ---- faults --------------------------------------------------------------------------

impl Caller {
    fn keeper_pid(&self) -> i32 {
        self.keeper_status()["pid"].as_i64().expect("a keeper runs") as i32
    }

    /// Pids of the live CLIs the keeper holds for conversations (not one
    /// started ready for the next new conversation).
    fn live_pids(&self) -> Vec<i32> {
        let s = self.keeper_status();
        s["live"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|l| l["state"] != "ready")
                    .filter_map(|l| l["pid"].as_i64())
                    .map(|p| p as i32)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The turn answered what the model saw: the history once, then this message.
    fn assert_answered(&self, out: &Ran, k: usize) {
        assert!(out.status.success(), "turn {k}: {}", describe(out));
        let req = self.server.last_main().expect("a request");
        assert_eq!(req.user_texts().len(), k, "turn {k}: one copy of history");
        assert_eq!(
            text_reply(&out.stdout),
            req.reply,
            "turn {k}: the caller got the model's answer"
        );
    }

    /// A turn, run in the background; the shim's pid is known at once.
    fn turn_in_background(&self, msg: &str) -> std::process::Child {
        let prompt = labels(&self.history, msg, "Human", "\n\n");
        let mut cmd = self.sb.shimmed(["-p"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("spawn turn");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        child
    }
}

fn kill9(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

fn gone(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

/// Two warm turns in (turn 1 starts the live CLI): the set-up of the
/// keeper's fault tests. Under load (7.5, CI) turn 2 once ran `live`, its
/// conversation without a live CLI; the cause is not found (RELIABILITY's
/// observations). A set-up that did not warm up is said and made again
/// (3 tries), as the faults it sets up for are what these tests check.
fn warmed() -> Caller {
    for attempt in 1..=3 {
        let mut w = Caller::new(true);
        for k in 1..=2 {
            let out = w.turn(Format::Text, &format!("message {k}"));
            w.assert_answered(&out, k);
        }
        if w.last_engine() == "warm" || attempt == 3 {
            assert_eq!(w.last_engine(), "warm", "{}", w.log());
            return w;
        }
        eprintln!(
            "set-up {attempt}: turn 2 ran {}, not warm; again\n{}",
            w.last_engine(),
            w.log()
        );
    }
    unreachable!()
}

fn finish(w: &World) {
    w.assert_session_files_intact();
    w.stop_keeper();
    eventually(Duration::from_secs(15), "no process left", || {
        w.processes().is_empty().then_some(())
    });
}

#[test]
fn keeper_killed_between_turns_leaves_no_process_and_the_next_turn_is_answered() {
    let mut w = warmed();
    let (keeper, live) = (w.keeper_pid(), w.live_pids());
    kill9(keeper);
    // Its live CLI reads its input from the keeper: it ends on its own.
    eventually(
        Duration::from_secs(15),
        "the orphaned live CLI to end",
        || live.iter().all(|p| gone(*p)).then_some(()),
    );
    let out = w.turn(Format::Text, "message 3");
    w.assert_answered(&out, 3);
    finish(&w);
}

#[test]
fn keeper_killed_mid_turn_the_turn_still_completes() {
    let mut w = warmed();
    w.server.set_latency(Duration::from_millis(1500));
    let keeper = w.keeper_pid();
    let child = w.turn_in_background("message 3");
    request_reached_the_model(&w, "message 3");
    kill9(keeper);
    let out = child.wait_with_output().map(Ran::from).unwrap();
    w.server.set_latency(Duration::ZERO);
    w.assert_answered(&out, 3);
    assert_eq!(
        w.last_engine(),
        "warm",
        "it ran in the live CLI the shim held"
    );
    w.history
        .push(("message 3".into(), text_reply(&out.stdout)));
    let out = w.turn(Format::Text, "message 4");
    w.assert_answered(&out, 4);
    finish(&w);
}

#[test]
fn live_cli_killed_between_turns_or_mid_turn_the_turn_is_answered() {
    let mut w = warmed();
    for pid in w.live_pids() {
        kill9(pid);
    }
    let out = w.turn(Format::Text, "message 3");
    w.assert_answered(&out, 3);
    // Lent before the keeper saw it die, the turn reran cold and left no live
    // CLI: the next turn starts one.
    let mut k = 3;
    if w.live_pids().is_empty() {
        k += 1;
        let out = w.turn(Format::Text, &format!("message {k}"));
        w.assert_answered(&out, k);
    }
    let live = w.live_pids();
    assert_eq!(live.len(), 1, "{:?}", w.runs());
    // Mid-turn, before any output (text prints at the end): it reruns cold,
    // and the model sees the message once (what the killed process wrote to
    // the session is taken back, not repaired by the CLI into a second copy).
    k += 1;
    let msg = format!("message {k}");
    w.server.set_latency(Duration::from_millis(1500));
    let child = w.turn_in_background(&msg);
    request_reached_the_model(&w, &msg);
    for pid in live {
        kill9(pid);
    }
    let out = child.wait_with_output().map(Ran::from).unwrap();
    w.server.set_latency(Duration::ZERO);
    w.assert_answered(&out, k);
    let last = w.server.last_main().unwrap();
    assert!(
        !last
            .assistant_texts()
            .iter()
            .any(|t| t.contains("No response requested")),
        "{:?}",
        last.assistant_texts()
    );
    assert_eq!(w.last_engine(), "cold", "{:?}", w.runs());
    finish(&w);
}

#[test]
fn a_caller_killed_mid_turn_leaves_no_live_cli_working_for_it() {
    let mut w = warmed();
    w.server.set_latency(Duration::from_secs(3));
    let live = w.live_pids();
    let mut child = w.turn_in_background("message 3");
    request_reached_the_model(&w, "message 3");
    child.kill().unwrap();
    let _ = child.wait();
    eventually(
        Duration::from_secs(10),
        "the abandoned live CLI to end",
        || live.iter().all(|p| gone(*p)).then_some(()),
    );
    w.server.set_latency(Duration::ZERO);
    // The caller retries: answered, with the history once.
    let out = w.turn(Format::Text, "message 3");
    assert!(out.status.success(), "{}", describe(&out));
    finish(&w);
}

#[test]
fn idle_past_the_ttl_the_live_cli_and_the_keeper_end() {
    let mut w = Caller::new(true);
    // Long enough that a loaded machine's gap between two turns stays
    // under it; if it does not, turn 2's live CLI is a new one and the
    // old one is seen `stopping`, which the count below leaves out.
    w.sb.set_env("CLAUDE_SHIM_WARM_TTL", "4s");
    for k in 1..=2 {
        let out = w.turn(Format::Text, &format!("message {k}"));
        w.assert_answered(&out, k);
    }
    let status = w.keeper_status();
    let serving = status["live"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["state"] != "ready" && l["state"] != "stopping")
        .count();
    assert_eq!(serving, 1, "one conversation, one live CLI: {status}");
    let live = w.live_pids();
    eventually(Duration::from_secs(30), "the TTL to end it", || {
        (live.iter().all(|p| gone(*p)) && w.processes().is_empty()).then_some(())
    });
    assert!(
        w.keeper_status().is_null(),
        "the keeper exits when it holds nothing"
    );
    let out = w.turn(Format::Text, "message 3");
    w.assert_answered(&out, 3);
    assert_eq!(w.last_engine(), "live");
    finish(&w);
}

#[test]
fn a_full_pool_ends_the_least_recently_used_live_cli() {
    let mut a = Caller::new(true);
    a.sb.set_env("CLAUDE_SHIM_WARM_MAX", "1");
    let out = a.turn(Format::Text, "first conversation");
    a.assert_answered(&out, 1);
    // A second conversation in the same world: its own live CLI, the first's ends.
    let saved = std::mem::take(&mut a.history);
    let out = a.turn(Format::Text, "second conversation");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(a.live_pids().len() <= 1, "{}", a.keeper_status());
    a.history = saved;
    let out = a.turn(Format::Text, "first again");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        a.last_engine(),
        "live",
        "its live CLI was ended for the other"
    );
    assert!(a.live_pids().len() <= 1);
    finish(&a);
}

/// The pool is bounded by the memory its live CLIs hold too: a budget that
/// fits one (CLAUDE_SHIM_WARM_MEMORY 400M; a live CLI holds ~215 MiB) keeps one,
/// whatever the count allows, and `warm status --json` says what it holds.
#[test]
fn a_memory_budget_bounds_the_pool() {
    let mut a = Caller::new(true);
    a.sb.set_env("CLAUDE_SHIM_WARM_MAX", "8");
    a.sb.set_env("CLAUDE_SHIM_WARM_MEMORY", "400M");
    let out = a.turn(Format::Text, "first conversation");
    a.assert_answered(&out, 1);
    let status = a.keeper_status();
    assert_eq!(status["memory"], 400u64 << 20, "{status}");
    let held: u64 = status["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rss_bytes"].as_u64().unwrap_or(0))
        .sum();
    assert!(held > 64 << 20, "a live CLI's memory is shown: {status}");
    // `status` tells what runs in the background, in text and json.
    let glance = |json: bool| {
        let mut cmd = a.sb.manager();
        cmd.arg("status");
        if json {
            cmd.arg("--json");
        }
        let out = run(cmd, b"");
        assert!(out.status.success(), "{}", describe(&out));
        out.stdout
    };
    let g: Value = serde_json::from_slice(&glance(true)).unwrap();
    assert_eq!(g["background"]["live_clis"], 1, "{g}");
    assert_eq!(g["background"]["memory_budget_bytes"], 400u64 << 20, "{g}");
    assert!(
        g["background"]["memory_bytes"].as_u64().unwrap() > 64 << 20,
        "{g}"
    );
    let text = String::from_utf8(glance(false)).unwrap();
    assert!(text.contains("1 live CLI using "), "{text}");
    assert!(text.contains("of 400.0 MiB"), "{text}");
    let first = a.live_pids();
    assert_eq!(first.len(), 1, "{status}");
    let saved = std::mem::take(&mut a.history);
    let out = a.turn(Format::Text, "second conversation");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(a.last_engine(), "live");
    eventually(Duration::from_secs(10), "the first live CLI to end", || {
        gone(first[0]).then_some(())
    });
    assert_eq!(a.live_pids().len(), 1, "{}", a.keeper_status());
    a.history = saved;
    let out = a.turn(Format::Text, "first again");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        a.last_engine(),
        "live",
        "its live CLI was ended for the other"
    );
    finish(&a);
}

/// A real `claude` behind a wrapper that reads all its input before it
/// starts the CLI: a live process never hears its message. The first turn
/// waits for it (20 s) and runs cold; the shim remembers, so the turns after
/// it run cold at once; `warm status` and `doctor` say so and why;
/// `warm stop` forgets it.
#[test]
fn a_live_cli_that_never_answers_costs_one_turn() {
    let mut w = Caller::new(true);
    let wrapper = w.sb.file("buffering-claude");
    std::fs::write(
        &wrapper,
        format!(
            // (The probe finds hidden flags by name in the binary: this one
            // passes --resume-session-at on, as every flag.)
            "#!/bin/sh\n# passes every flag on, --resume-session-at too\ninput=$(cat; echo x)\nprintf '%s' \"${{input%x}}\" | exec '{}' \"$@\"\n",
            w.sb.real_claude().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    w.sb.set_env("CLAUDE_SHIM_REAL", &wrapper);
    for k in 1..=3 {
        let out = w.turn(Format::Text, &format!("message {k}"));
        w.assert_answered(&out, k);
        assert_eq!(w.last_engine(), "cold", "turn {k}: {:?}", w.runs());
    }
    let log = std::fs::read_to_string(w.sb.root.join("shim.log")).unwrap();
    assert_eq!(
        log.matches("the new live CLI said nothing in").count(),
        1,
        "one turn waited for a live CLI; the others ran cold at once\n{log}"
    );
    let errors = std::fs::read_to_string(w.sb.shim_home.join("errors.log")).unwrap();
    assert!(errors.contains("warm turns off for an hour"), "{errors}");
    let shim = |args: &[&str]| {
        let mut cmd = std::process::Command::new(crate::support::shim_exe());
        cmd.args(args)
            .env_clear()
            .env("HOME", &w.sb.home)
            .env("CLAUDE_SHIM_HOME", &w.sb.shim_home)
            .env("PATH", w.sb.shimmed_path());
        run(cmd, b"")
    };
    let status = shim(&["warm", "status", "--json"]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["unresponsive"].as_array().map(Vec::len), Some(1), "{v}");
    let text = String::from_utf8_lossy(&shim(&["warm", "status"]).stdout).into_owned();
    assert!(text.contains("warm turns off for"), "{text}");
    let doctor = shim(&["doctor", "--json"]);
    assert!(
        String::from_utf8_lossy(&doctor.stdout).contains("said nothing in 20 s"),
        "{}",
        describe(&doctor)
    );
    assert!(shim(&["warm", "stop"]).status.success());
    let v: Value = serde_json::from_slice(&shim(&["warm", "status", "--json"]).stdout).unwrap();
    assert_eq!(v["unresponsive"].as_array().map(Vec::len), Some(0), "{v}");
}

#[test]
fn two_turns_of_one_conversation_at_once_one_warm_one_cold_never_two_writers() {
    let w = warmed();
    w.server.set_latency(Duration::from_millis(1500));
    let first = w.turn_in_background("message 3");
    request_reached_the_model(&w, "message 3");
    let second = w.turn_in_background("message 3");
    let (a, b) = (
        first.wait_with_output().map(Ran::from).unwrap(),
        second.wait_with_output().map(Ran::from).unwrap(),
    );
    w.server.set_latency(Duration::ZERO);
    for out in [&a, &b] {
        assert!(out.status.success(), "{}", describe(out));
        assert!(
            text_reply(&out.stdout).starts_with("reply "),
            "{}",
            describe(out)
        );
    }
    let runs = w.runs();
    let last: Vec<&(String, String)> = runs.iter().rev().take(2).collect();
    assert!(
        last.iter().any(|(_, e)| e == "warm") && last.iter().any(|(k, _)| k == "forked"),
        "one ran in the live CLI, the other branched: {runs:?}"
    );
    finish(&w);
}

#[test]
fn a_changed_environment_starts_a_new_live_cli() {
    let mut w = warmed();
    let old = w.live_pids();
    w.sb.set_env("SOME_SETTING_FOR_TOOLS", "changed");
    let out = w.turn(Format::Text, "message 3");
    w.assert_answered(&out, 3);
    assert_eq!(
        w.last_engine(),
        "live",
        "not the old process: {:?}",
        w.runs()
    );
    eventually(Duration::from_secs(10), "the old live CLI to end", || {
        old.iter().all(|p| gone(*p)).then_some(())
    });
    // A changed instruction file likewise.
    std::fs::write(w.sb.work.join("CLAUDE.md"), "Answer briefly.").unwrap();
    let out = w.turn(Format::Text, "message 4");
    w.assert_answered(&out, 4);
    assert_eq!(w.last_engine(), "live");
    finish(&w);
}

/// A directory a flag names (`--plugin-dir`) is read at start-up and never
/// again by a live process: a file changed in it starts a new one (the
/// conversation goes on resumed: the plugin is not part of its identity).
#[test]
fn a_changed_plugin_dir_starts_a_new_live_cli() {
    let mut w = Caller::new(true);
    let plugin = w.sb.work.join("plugin");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(plugin.join("commands")).unwrap();
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name":"testplug","version":"1.0.0","description":"t"}"#,
    )
    .unwrap();
    let command = plugin.join("commands/hello.md");
    std::fs::write(&command, "Say hello.").unwrap();
    let flag = ["--plugin-dir", "plugin"];
    for k in 1..=2 {
        let out = w.turn_with(Format::Text, &flag, &format!("message {k}"));
        w.assert_answered(&out, k);
    }
    assert_eq!(w.last_engine(), "warm", "{:?}", w.runs());
    std::fs::write(&command, "Say hello, briefly.").unwrap();
    let out = w.turn_with(Format::Text, &flag, "message 3");
    w.assert_answered(&out, 3);
    assert_eq!(
        w.last_engine(),
        "live",
        "not the old process: {:?}",
        w.runs()
    );
    let out = w.turn_with(Format::Text, &flag, "message 4");
    w.assert_answered(&out, 4);
    assert_eq!(w.last_engine(), "warm", "{:?}", w.runs());
    finish(&w);
}

#[test]
fn a_keeper_whose_data_dir_is_removed_ends_with_its_live_clis() {
    // A test's temp dir removed, a user's `rm -rf` of the data dir: no shim can
    // reach the keeper again, so it ends itself and what it holds.
    let w = warmed();
    let (keeper, live) = (w.keeper_pid(), w.live_pids());
    assert!(!live.is_empty());
    std::fs::remove_dir_all(&w.sb.shim_home).unwrap();
    eventually(
        Duration::from_secs(15),
        "the keeper and its live CLIs to end",
        || (gone(keeper) && live.iter().all(|p| gone(*p))).then_some(()),
    );
}

/// A terminal on stdout: the CLI prints otherwise for one than for the pipe a
/// live process writes to, so the turn runs cold (and is answered).
#[test]
fn a_terminal_on_stdout_runs_the_turn_cold() {
    use std::io::{Read, Write};
    let w = warmed();
    let pty = crate::support::process::pty();
    let mut cmd = w.sb.shimmed(["-p"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn turn");
    drop(cmd);
    drop(pty.slave);
    let prompt = labels(&w.history, "message 3", "Human", "\n\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the child (the only holder of the slave) is done.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    });
    let status = child.wait().unwrap();
    let out = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    assert!(status.success(), "{out}");
    assert!(out.contains("reply 3"), "{out}");
    assert_eq!(w.last_engine(), "cold", "{:?}", w.runs());
    finish(&w);
}

impl Caller {
    /// The pid of the CLI started ready for a new conversation, if one is.
    fn ready_pid(&self) -> Option<i32> {
        self.keeper_status()["live"]
            .as_array()?
            .iter()
            .find(|l| l["state"] == "ready")
            .and_then(|l| l["pid"].as_i64())
            .map(|p| p as i32)
    }
}

/// After a turn, a CLI is started ready for the scope's next new
/// conversation; that conversation's first turn takes it (engine `ready`)
/// and prints what a cold first turn prints; its next turn runs warm in it.
#[test]
fn a_new_conversation_takes_the_ready_cli_and_prints_what_a_cold_one_prints() {
    for format in [Format::Text, Format::Json, Format::StreamJson] {
        let mut warm = Caller::new(true);
        let mut cold = Caller::new(false);
        for w in [&mut warm, &mut cold] {
            let out = w.turn(format, "first conversation");
            assert!(out.status.success(), "{}", describe(&out));
            w.history.clear();
        }
        // Started once the turn was done: there when the turn returns.
        let ready = warm.ready_pid().expect("a ready CLI after the turn");
        let w = warm.turn(format, "second conversation");
        let c = cold.turn(format, "second conversation");
        assert_eq!(
            warm.last_engine(),
            "ready",
            "{format:?}: {:?}\n{}",
            warm.runs(),
            std::fs::read_to_string(warm.sb.root.join("shim.log")).unwrap_or_default()
        );
        assert!(warm.live_pids().contains(&ready), "it serves on");
        assert_eq!(c.status.code(), w.status.code());
        let mask = |wd: &World, o: &[u8]| mask_usage(&wd.sb.mask(&String::from_utf8_lossy(o)));
        assert_eq!(mask(&cold, &c.stdout), mask(&warm, &w.stdout), "{format:?}");
        assert_eq!(mask(&cold, &c.stderr), mask(&warm, &w.stderr), "{format:?}");
        let req = warm.server.last_main().unwrap();
        assert_eq!(req.user_texts().len(), 1, "a new conversation: one message");
        let out = warm.turn(format, "again");
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(warm.last_engine(), "warm", "{:?}", warm.runs());
        finish(&warm);
    }
}

/// A ready CLI took in its scope's files at start: once they change, it can
/// serve no one and is ended; the new conversation starts its own.
#[test]
fn a_changed_fingerprint_ends_the_ready_cli() {
    let mut w = Caller::new(true);
    let out = w.turn(Format::Text, "first conversation");
    w.assert_answered(&out, 1);
    let ready = w.ready_pid().expect("a ready CLI after the turn");
    std::fs::write(w.sb.work.join("CLAUDE.md"), "Answer briefly.\n").unwrap();
    w.history.clear();
    let out = w.turn(Format::Text, "second conversation");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(w.last_engine(), "live", "{:?}", w.runs());
    eventually(
        Duration::from_secs(10),
        "the stale ready CLI to end",
        || gone(ready).then_some(()),
    );
    finish(&w);
}

/// `CLAUDE_SHIM_WARM_READY=0`: no CLI is started ahead of a conversation.
#[test]
fn no_ready_cli_when_turned_off() {
    let mut w = Caller::new(true);
    w.sb.set_env("CLAUDE_SHIM_WARM_READY", "0");
    let out = w.turn(Format::Text, "first conversation");
    w.assert_answered(&out, 1);
    assert_eq!(w.ready_pid(), None, "{}", w.keeper_status());
    assert_eq!(w.live_pids().len(), 1);
    w.history.clear();
    let out = w.turn(Format::Text, "second conversation");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(w.last_engine(), "live");
    finish(&w);
}

/// `warm stop SESSION` takes a prefix, says which live CLI it ended, and
/// fails for a session that has none (it used to claim it ended one).
#[test]
fn warm_stop_of_one_session_is_truthful() {
    let w = warmed();
    let status = w.keeper_status();
    let live = status["live"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["state"] == "idle")
        .expect("an idle live CLI")
        .clone();
    let session = live["session"].as_str().unwrap().to_owned();
    let stop = |arg: &str| {
        let mut cmd = w.sb.manager();
        cmd.args(["warm", "stop", arg]);
        run(cmd, b"")
    };
    let none = stop("nonexist");
    assert_eq!(none.status.code(), Some(1), "{}", describe(&none));
    assert!(
        none.err().contains("starts with \"nonexist\""),
        "{}",
        describe(&none)
    );
    assert!(none.out().is_empty(), "{}", describe(&none));
    let ended = stop(&session[..8]);
    assert!(ended.status.success(), "{}", describe(&ended));
    assert!(
        ended
            .out()
            .contains(&format!("ended the live CLI of {session}")),
        "{}",
        describe(&ended)
    );
    let pid = live["pid"].as_i64().unwrap() as i32;
    eventually(Duration::from_secs(10), "it to end", || {
        gone(pid).then_some(())
    });
    finish(&w);
}

/// A caller that writes its transcript as one stream-json user line with no
/// `initialize` before it (Open Design's way) is served warm with the text
/// of its message — never the line itself — and prints what it prints cold.
#[test]
fn a_stream_json_caller_without_a_handshake_runs_warm_with_its_message() {
    let args = crate::support::clients::LINES_ARGS;
    let converse = |w: &mut World| -> Vec<String> {
        let mut outs = Vec::new();
        for k in 1..=4 {
            let msg = format!("stream line {k}");
            let text = labels(&w.history, &msg, "Human", "\n\n");
            let line = serde_json::json!({"type": "user",
                "message": {"role": "user", "content": text}});
            let out = run(w.sb.shimmed(args), format!("{line}\n").as_bytes());
            assert!(out.status.success(), "{}", describe(&out));
            w.history.push((msg, result_reply(&out.stdout)));
            outs.push(w.sb.mask(&String::from_utf8_lossy(&out.stdout)));
        }
        outs
    };
    let mut cold = Caller::new(false);
    let mut warm = Caller::new(true);
    let (c, w) = (converse(&mut cold), converse(&mut warm));
    let engines: Vec<String> = warm.runs().into_iter().map(|(_, e)| e).collect();
    assert!(engines[2..].iter().all(|e| e == "warm"), "{engines:?}");
    // The model got the message's text each turn, as cold.
    let texts = |w: &World| -> Vec<Option<String>> {
        w.server
            .main_requests()
            .iter()
            .map(|r| r.last_user_text())
            .collect()
    };
    assert_eq!(texts(&cold), texts(&warm));
    assert_eq!(texts(&warm)[3].as_deref(), Some("stream line 4"));
    let strip = |outs: Vec<String>| -> Vec<String> { outs.iter().map(|o| mask_usage(o)).collect() };
    assert_eq!(strip(c), strip(w));
}
