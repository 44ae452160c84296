//! Load: many callers at once through the shim.
//!
//! * `storm_real_cli`: 4 conversations (2 in one cwd, one in a second cwd, an
//!   exact copy of the first in a third), a first turn each, then 32 calls at
//!   once — 8 branches from the head of every conversation — then 2 branches
//!   of each continued, through the shim in front of the REAL Claude Code CLI
//!   and the loopback server. The server's reply names every `<<tag>>` of the
//!   user messages the model was sent, so each answer proves which
//!   conversation (and how much of it) reached the model. 64 real CLIs at
//!   once take ~70 s of wall time on 2 cores (~1.1 CPU-s each), so the
//!   64-call storms run against the fake; `LOAD_REAL_BRANCHES=16` runs this
//!   one with 64.
//! * `storm_fake_cli`: 8 conversations (4 in one cwd, 4 in cwds of their own,
//!   one a copy), 64 calls at once, three storms deep, against the
//!   session-level fake, which holds each session file as a writer while it
//!   "thinks" and notes any second writer: proof that no session is ever
//!   resumed in place by two processes at once.
//! * `first_use_by_many_at_once`: 24 callers create the data directory,
//!   database and capability cache together, five times over.
//!
//! After every load: no `database is locked` (or any other error) in
//! errors.log, empty stderr, every answer its own conversation's, at most one
//! in-place resume per session per storm, no session used from two cwds,
//! every pin consistent with the session files (file there, pinned message
//! in it, the session head is the file's last assistant message), no session
//! file holding two continuations of one message, no lease left behind.
//! Sequential load (1,000 turns) is `tests/soak.rs`.

use crate::support::process::run;
use crate::support::sandbox::{session_files, Sandbox};
use crate::support::store::{open_at, run_rows, RunRow};
use crate::support::turns::{ack, tags_in};
use crate::support::Client;
use crate::support::Ran;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Barrier;
use std::time::{Duration, Instant};

// ---- conversations -----------------------------------------------------------------

/// One conversation: `Human:`/`Assistant:` on stdin, text output.
#[derive(Clone, Debug)]
struct Conv {
    name: String,
    /// Tag prefix of its user messages (a copy shares its original's).
    tags: String,
    cwd: PathBuf,
    history: Vec<(String, String)>,
}

impl Conv {
    fn prompt(&self, current: &str) -> String {
        Client::Wrapper.prompt(&self.history, current)
    }

    fn user(&self, k: &str) -> String {
        format!("message {k} of {} <<{}.{k}>>", self.tags, self.tags)
    }

    /// The tags the model must see for `current` after this history.
    fn expected(&self, current: &str) -> String {
        let mut tags: Vec<String> = self.history.iter().flat_map(|(u, _)| tags_in(u)).collect();
        tags.extend(tags_in(current));
        ack(&tags)
    }
}

/// 8 conversations: c0..c3 in `one`, c4..c7 each in its own cwd; c4 is a copy
/// of c0 (same texts, so the same answers) in another directory.
fn conversations(one: &Path, root: &Path) -> Vec<Conv> {
    (0..8)
        .map(|i| {
            let cwd = if i < 4 {
                one.to_path_buf()
            } else {
                let d = root.join(format!("cwd-{i}"));
                std::fs::create_dir_all(&d).unwrap();
                d.canonicalize().unwrap()
            };
            let tags = if i == 4 {
                "c0".to_string()
            } else {
                format!("c{i}")
            };
            Conv {
                name: format!("c{i}"),
                tags,
                cwd,
                history: Vec::new(),
            }
        })
        .collect()
}

/// One invocation of a load: which conversation, what it sends, what comes back.
struct Call {
    conv: usize,
    current: String,
    expected: String,
    out: Ran,
    elapsed: Duration,
}

/// Run every `(conv, current)` at once (released together by a barrier).
fn storm(
    convs: &[Conv],
    calls: &[(usize, String)],
    command: &(dyn Fn(&Conv) -> Command + Sync),
    runner: &(dyn Fn(Command, &[u8]) -> Ran + Sync),
) -> Vec<Call> {
    let barrier = Barrier::new(calls.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = calls
            .iter()
            .map(|(i, current)| {
                let barrier = &barrier;
                let conv = &convs[*i];
                s.spawn(move || {
                    let prompt = conv.prompt(current);
                    let cmd = command(conv);
                    barrier.wait();
                    let start = Instant::now();
                    let out = runner(cmd, prompt.as_bytes());
                    Call {
                        conv: *i,
                        current: current.clone(),
                        expected: conv.expected(current),
                        out,
                        elapsed: start.elapsed(),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("call thread"))
            .collect()
    })
}

/// Every call succeeded, with clean stderr and the answer of its own conversation.
#[track_caller]
fn check_answers(calls: &[Call], context: &dyn Fn() -> String) {
    let mut problems = Vec::new();
    for c in calls {
        let answer = String::from_utf8_lossy(&c.out.stdout).trim().to_string();
        if !c.out.status.success() || !c.out.stderr.is_empty() || answer != c.expected {
            problems.push(format!(
                "c{} {:?}: {:?} stderr {:?}\n  answer   {answer:?}\n  expected {:?}",
                c.conv,
                c.current,
                c.out.status,
                String::from_utf8_lossy(&c.out.stderr),
                c.expected
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} calls wrong:\n{}\n{}",
        problems.len(),
        calls.len(),
        problems.join("\n"),
        context()
    );
}

fn keep(convs: &mut [Conv], calls: &[Call]) {
    for c in calls {
        let answer = String::from_utf8_lossy(&c.out.stdout).trim().to_string();
        convs[c.conv].history.push((c.current.clone(), answer));
    }
}

fn timing(label: &str, calls: &[Call], wall: Duration) {
    let mut t: Vec<Duration> = calls.iter().map(|c| c.elapsed).collect();
    t.sort();
    eprintln!(
        "{label}: median {:?}, max {:?}, wall {wall:?}",
        t[t.len() / 2],
        t[t.len() - 1]
    );
}

// ---- the shim's database and the session files -------------------------------------

fn runs(shim_home: &Path) -> Vec<RunRow> {
    run_rows(shim_home)
}

/// Main-thread user/assistant records of a session file: (uuid, parentUuid, type).
fn records(file: &Path) -> Vec<(String, Option<String>, String)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["isSidechain"].as_bool() != Some(true))
        .filter(|v| v["type"] == "user" || v["type"] == "assistant")
        .filter_map(|v| {
            Some((
                v["uuid"].as_str()?.to_string(),
                v["parentUuid"].as_str().map(str::to_owned),
                v["type"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Session files, pins, heads and leases agree; no session file holds two
/// continuations of one message (what two in-place writers would leave).
fn check_consistency(home: &Path, shim_home: &Path) -> Result<(), String> {
    let files = session_files(home);
    let mut problems = Vec::new();
    for f in &files {
        let recs = records(f);
        let mut parents = BTreeMap::new();
        for (uuid, parent, _) in &recs {
            if let Some(p) = parent {
                if let Some(other) = parents.insert(p.clone(), uuid.clone()) {
                    problems.push(format!(
                        "{}: {other} and {uuid} both continue {p} (interleaved writers)",
                        f.display()
                    ));
                }
            }
        }
    }
    let conn = open_at(shim_home).expect("shim.db");
    let mut stmt = conn
        .prepare("SELECT session, assistant_uuid FROM pins")
        .unwrap();
    let pins: Vec<(String, Option<String>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (session, at) in &pins {
        let Some(file) = files
            .iter()
            .find(|p| p.file_stem().is_some_and(|s| s == session.as_str()))
        else {
            problems.push(format!("pin of {session}: no session file"));
            continue;
        };
        let recs = records(file);
        match at {
            Some(at) if recs.iter().any(|r| &r.0 == at && r.2 == "assistant") => {}
            _ => problems.push(format!(
                "pin of {session} at {at:?}: not an assistant message of its file"
            )),
        }
    }
    let mut stmt = conn
        .prepare("SELECT session, head_uuid, lease_pid FROM sessions")
        .unwrap();
    let heads: Vec<(String, Option<String>, Option<i64>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (session, head, lease) in &heads {
        if lease.is_some() {
            problems.push(format!("{session}: lease left held by {lease:?}"));
        }
        let file = files
            .iter()
            .find(|p| p.file_stem().is_some_and(|s| s == session.as_str()));
        let last = file.and_then(|f| {
            records(f)
                .into_iter()
                .rev()
                .find(|r| r.2 == "assistant")
                .map(|r| r.0)
        });
        if &last != head {
            problems.push(format!(
                "{session}: head {head:?} but the file ends at {last:?}"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// errors.log must not exist (nothing failed inside the shim).
fn check_no_shim_errors(shim_home: &Path) -> Result<(), String> {
    match std::fs::read_to_string(shim_home.join("errors.log")) {
        Ok(e) if !e.is_empty() => Err(format!(
            "errors.log ({} busy):\n{e}",
            e.matches("locked").count() + e.matches("busy").count()
        )),
        _ => Ok(()),
    }
}

/// During one storm, at most one call per session resumed it in place, every
/// other call ran in a session of its own, and sessions never cross cwds.
fn check_storm_runs(rows: &[RunRow]) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut in_place: BTreeMap<&str, usize> = BTreeMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for r in rows {
        let Some(s) = r.session.as_deref() else {
            problems.push(format!("run without a session: {r:?}"));
            continue;
        };
        match r.kind.as_str() {
            "resumed" => *in_place.entry(s).or_default() += 1,
            "forked" | "fresh" | "fallback" => {
                if !seen.insert(s) {
                    problems.push(format!("two new sessions share one id {s}"));
                }
            }
            other => problems.push(format!("unexpected kind {other}: {r:?}")),
        }
    }
    for (s, n) in &in_place {
        if *n > 1 {
            problems.push(format!("{s} resumed in place by {n} calls at once"));
        }
        if seen.contains(s) {
            problems.push(format!("{s} both resumed in place and new"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// No session is used from two cwds.
fn check_cwds(rows: &[RunRow]) -> Result<(), String> {
    let mut cwd_of: BTreeMap<&str, &str> = BTreeMap::new();
    for r in rows {
        if let Some(s) = r.session.as_deref() {
            if let Some(other) = cwd_of.insert(s, &r.cwd) {
                if other != r.cwd {
                    return Err(format!("session {s} used from {other} and {}", r.cwd));
                }
            }
        }
    }
    Ok(())
}

// ---- the scenario -----------------------------------------------------------------

/// Priming turns, then `depth` storms of `branches` calls per conversation at
/// once, each storm branching from the head the previous one left (branch 0
/// of each conversation goes on), then two branches of each continued.
struct Scenario<'a> {
    label: &'a str,
    convs: Vec<Conv>,
    branches: usize,
    depth: usize,
    command: &'a (dyn Fn(&Conv) -> Command + Sync),
    runner: &'a (dyn Fn(Command, &[u8]) -> Ran + Sync),
    shim_home: &'a Path,
    home: &'a Path,
}

impl Scenario<'_> {
    fn context(&self) -> String {
        let log = self
            .shim_home
            .parent()
            .map(|p| p.join("shim.log"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        format!(
            "errors.log: {:?}\nruns: {:?}\ndebug log:\n{log}",
            std::fs::read_to_string(self.shim_home.join("errors.log")).ok(),
            runs(self.shim_home)
        )
    }

    fn round(&self, convs: &[Conv], calls: &[(usize, String)], what: &str) -> Vec<Call> {
        let start = Instant::now();
        let done = storm(convs, calls, self.command, self.runner);
        let wall = start.elapsed();
        check_answers(&done, &|| self.context());
        timing(&format!("{}, {what}", self.label), &done, wall);
        done
    }

    fn run(mut self) {
        let n = self.convs.len();
        let calls: Vec<(usize, String)> = (0..n).map(|i| (i, self.convs[i].user("1"))).collect();
        let done = self.round(&self.convs, &calls, &format!("first turns, {n} at once"));
        keep(&mut self.convs, &done);

        for level in 0..self.depth {
            let before = runs(self.shim_home).len();
            let calls: Vec<(usize, String)> = (0..n)
                .flat_map(|i| (0..self.branches).map(move |j| (i, j)))
                .map(|(i, j)| (i, self.convs[i].user(&format!("s{level}b{j}"))))
                .collect();
            let what = format!("storm {}, {} at once", level + 1, calls.len());
            let done = self.round(&self.convs, &calls, &what);
            let rows = runs(self.shim_home)[before..].to_vec();
            assert_eq!(rows.len(), calls.len(), "{}", self.context());
            let kinds = rows
                .iter()
                .fold(BTreeMap::<&str, usize>::new(), |mut m, r| {
                    *m.entry(r.kind.as_str()).or_default() += 1;
                    m
                });
            eprintln!("{}, {what}: kinds {kinds:?}", self.label);
            check_storm_runs(&rows).unwrap_or_else(|e| panic!("{e}\n{}", self.context()));
            // Branch 0 of each conversation is where it goes on.
            let mut next = self.convs.clone();
            for c in done
                .iter()
                .filter(|c| c.current.contains(&format!("s{level}b0 ")))
            {
                let answer = String::from_utf8_lossy(&c.out.stdout).trim().to_string();
                next[c.conv].history.push((c.current.clone(), answer));
            }
            // Two branches of each continue, all at once: each resumes its own session.
            let mut goes_on = Vec::new();
            for c in done.iter().filter(|c| {
                c.current.contains(&format!("s{level}b0 "))
                    || c.current
                        .contains(&format!("s{level}b{} ", self.branches - 1))
            }) {
                let mut b = self.convs[c.conv].clone();
                let answer = String::from_utf8_lossy(&c.out.stdout).trim().to_string();
                b.history.push((c.current.clone(), answer));
                goes_on.push(b);
            }
            let before = runs(self.shim_home).len();
            let calls: Vec<(usize, String)> = (0..goes_on.len())
                .map(|i| (i, goes_on[i].user(&format!("s{level}next"))))
                .collect();
            let what = format!("{} branches continued at once", calls.len());
            let done = self.round(&goes_on, &calls, &what);
            let rows = runs(self.shim_home)[before..].to_vec();
            assert!(
                rows.iter().all(|r| r.kind == "resumed"),
                "every continued branch resumes its own session: {rows:?}\n{}",
                self.context()
            );
            // Branch 0's continuation is the head the next storm branches from.
            for c in done.iter().filter(|c| {
                goes_on[c.conv]
                    .history
                    .last()
                    .is_some_and(|h| h.0.contains(&format!("s{level}b0 ")))
            }) {
                let answer = String::from_utf8_lossy(&c.out.stdout).trim().to_string();
                let conv = next
                    .iter_mut()
                    .find(|x| x.name == goes_on[c.conv].name)
                    .unwrap();
                conv.history.push((c.current.clone(), answer));
            }
            self.convs = next;
        }
        let rows = runs(self.shim_home);
        check_cwds(&rows).unwrap_or_else(|e| panic!("{e}\n{}", self.context()));
        check_no_shim_errors(self.shim_home).unwrap();
        // A warm turn's lease is let go by the keeper once its live CLI has
        // finished the turn, which on a loaded machine can come just after
        // the caller had its answer: leases get a few seconds to clear.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match check_consistency(self.home, self.shim_home) {
                Ok(()) => break,
                Err(e)
                    if Instant::now() < deadline
                        && e.lines().all(|l| l.contains("lease left held")) =>
                {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(e) => panic!("{e}\n{}", self.context()),
            }
        }
    }
}

// ---- the real CLI ------------------------------------------------------------------

/// See the module doc: 32 real CLIs at once (64 with `LOAD_REAL_BRANCHES=16`).
#[test]
fn storm_real_cli() {
    let server = crate::support::ApiServer::start();
    server.set_reply(|req| {
        let tags: Vec<String> = req.user_texts().iter().flat_map(|t| tags_in(t)).collect();
        ack(&tags)
    });
    let mut sb = crate::support::Sandbox::real(&server);
    let log = sb.root.join("shim.log");
    sb.set_env("CLAUDE_SHIM_LOG", &log);
    // 32 CLIs starting at once on 2 cores keep a new live CLI from its first
    // word for more than the default 20 s, which the shim takes for a CLI that
    // cannot answer (RELIABILITY.md, observations): the storm waits for it.
    sb.set_env("CLAUDE_SHIM_WARM_START_PATIENCE", "120s");
    // The keeper under load as users run it: with CLIs started ready.
    sb.ready_clis();
    let all = conversations(&sb.work, &sb.root);
    let convs = vec![
        all[0].clone(),
        all[1].clone(),
        all[5].clone(),
        all[4].clone(),
    ];
    let command = |c: &Conv| {
        let mut cmd = sb.shimmed(["-p"]);
        cmd.current_dir(&c.cwd);
        cmd
    };
    let runner = |cmd: Command, stdin: &[u8]| crate::support::run(cmd, stdin);
    Scenario {
        label: "real CLI",
        convs,
        branches: std::env::var("LOAD_REAL_BRANCHES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8),
        depth: 1,
        command: &command,
        runner: &runner,
        shim_home: &sb.shim_home,
        home: &sb.home,
    }
    .run();
    if std::env::var_os("LOAD_DUMP_LOG").is_some() {
        eprintln!("{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
}

// ---- the fake CLI ------------------------------------------------------------------

/// 8 conversations, 64 calls at once, three storms deep; the fake holds each
/// session file as a writer for 0.3 s and notes a second writer.
#[test]
fn storm_fake_cli() {
    let w = Sandbox::new();
    let one = w.root.join("one");
    std::fs::create_dir_all(&one).unwrap();
    let convs = conversations(&one, &w.root);
    let fake_runs = w.file("fake-runs.jsonl");
    let command = |c: &Conv| {
        let mut cmd = crate::support::turns::shim(&w);
        cmd.arg("-p")
            .current_dir(&c.cwd)
            .env("FAKE_DELAY", "0.3")
            .env("FAKE_RUNS", &fake_runs);
        cmd
    };
    let runner = |cmd: Command, stdin: &[u8]| run(cmd, stdin);
    Scenario {
        label: "fake CLI",
        convs,
        branches: 8,
        depth: 3,
        command: &command,
        runner: &runner,
        shim_home: &w.shim_home,
        home: &w.home,
    }
    .run();
    // The fake's own record: no session file ever had two writers at once.
    let log = std::fs::read_to_string(&fake_runs).unwrap();
    let conflicts: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"conflict\": true"))
        .collect();
    assert!(
        conflicts.is_empty(),
        "two writers on one session file:\n{}",
        conflicts.join("\n")
    );
    let in_place = log
        .lines()
        .filter(|l| l.contains("\"mode\": \"resume\""))
        .count();
    eprintln!(
        "fake CLI: {} runs, {in_place} in place, no second writer",
        log.lines().count()
    );
}

/// The very first use of a data directory by many callers at once (the
/// database is created, switched to WAL and migrated, the real binary probed
/// and its capabilities cached, all concurrently): every call is managed and
/// pinned, nothing is logged as an error.
#[test]
fn first_use_by_many_at_once() {
    for attempt in 0..5 {
        let w = Sandbox::new();
        let convs: Vec<Conv> = (0..24)
            .map(|i| Conv {
                name: format!("f{i}"),
                tags: format!("f{i}"),
                cwd: w.root.clone(),
                history: Vec::new(),
            })
            .collect();
        let command = |_: &Conv| {
            let mut cmd = crate::support::turns::shim(&w);
            cmd.arg("-p");
            cmd
        };
        let calls: Vec<(usize, String)> =
            (0..convs.len()).map(|i| (i, convs[i].user("1"))).collect();
        let runner = |cmd: Command, stdin: &[u8]| run(cmd, stdin);
        let done = storm(&convs, &calls, &command, &runner);
        let context = || crate::support::turns::context(&w);
        check_answers(&done, &context);
        check_no_shim_errors(&w.shim_home)
            .unwrap_or_else(|e| panic!("attempt {attempt}: {e}\n{}", context()));
        let rows = runs(&w.shim_home);
        assert_eq!(rows.len(), convs.len(), "attempt {attempt}: {}", context());
        assert_eq!(
            crate::support::store::pins(&w).len(),
            convs.len(),
            "attempt {attempt}: {}",
            context()
        );
    }
}
