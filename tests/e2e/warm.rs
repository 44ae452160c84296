//! Warm turns against the REAL CLI and the loopback API server: a conversation's next
//! turn runs in the live process of its last turn (kept by the keeper), and the caller
//! sees the same bytes and exit statuses as with cold runs (ids, timings and paths
//! masked), while the API requests carry one copy of history. Faults: the keeper or the
//! live CLI killed, the caller killed mid-turn, TTL expiry, a full pool, two turns at
//! once, the environment changed — every turn answered, no stray process, every line
//! of the session file intact.

use crate::support::clients::{labels, result_reply, text_reply};
use crate::support::store::run_rows;
use crate::support::{describe, run, ApiServer, Ran, Sandbox};
use serde_json::Value;
use std::path::Path;
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

struct World {
    server: ApiServer,
    sb: Sandbox,
    history: Vec<(String, String)>,
}

impl World {
    fn new(warm: bool) -> World {
        let server = ApiServer::start();
        let mut sb = Sandbox::real(&server);
        if !warm {
            sb.set_env("CLAUDE_SHIM_WARM", "0");
        }
        let log = sb.root.join("shim.log");
        sb.set_env("CLAUDE_SHIM_LOG", &log);
        World {
            server,
            sb,
            history: Vec::new(),
        }
    }

    /// One turn of a `Human:`/`Assistant:` client replaying its transcript on stdin.
    fn turn(&mut self, format: Format, msg: &str) -> Ran {
        let prompt = labels(&self.history, msg, "Human", "\n\n");
        let out = run(self.sb.shimmed(format.args()), prompt.as_bytes());
        if out.status.success() {
            self.history.push((msg.to_owned(), format.reply(&out)));
        }
        out
    }

    /// `(kind, engine)` of every managed turn, in order.
    fn runs(&self) -> Vec<(String, String)> {
        run_rows(&self.sb.shim_home)
            .into_iter()
            .map(|r| (r.kind, r.engine))
            .collect()
    }

    fn stop_keeper(&self) {
        let mut cmd = std::process::Command::new(crate::support::shim_exe());
        cmd.args(["warm", "stop"])
            .env_clear()
            .env("HOME", &self.sb.home)
            .env("CLAUDE_SHIM_HOME", &self.sb.shim_home);
        let out = run(cmd, b"");
        assert!(out.status.success(), "{}", describe(&out));
    }

    /// Processes started for this sandbox (its HOME in their environment).
    fn processes(&self) -> Vec<i32> {
        processes_with_home(&self.sb.home)
    }

    /// Every session file line is one whole JSON record: no interleaved writers.
    fn assert_session_files_intact(&self) {
        for f in self.sb.session_files() {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "{} line {}: {line}",
                    f.display(),
                    i + 1
                );
            }
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Leave no live CLI behind, whatever the test did.
        for pid in self.processes() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn processes_with_home(home: &Path) -> Vec<i32> {
    let needle = format!("HOME={}\0", home.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            out.push(pid);
        }
    }
    out
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
    let mut cold = World::new(false);
    let mut warm = World::new(true);
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

/// Usage figures track the request's bytes, which differ slightly (see
/// `known_differences`); everything else of the line must match.
fn mask_usage(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('"') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[1..].find('"') else {
            break;
        };
        let key = &rest[1..end + 1];
        let after = &rest[end + 2..];
        let numeric =
            after.starts_with(':') && after[1..].starts_with(|c: char| c.is_ascii_digit());
        let lower = key.to_ascii_lowercase();
        if numeric && (lower.contains("token") || lower.contains("cost")) {
            let len = after[1..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .unwrap_or(after.len() - 1);
            out.push_str(&format!("\"{key}\":<n>"));
            rest = &after[1 + len..];
        } else {
            out.push_str(&rest[..end + 2]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
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
