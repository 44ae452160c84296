//! A fleet, end to end: two hosts (two HOMEs — Claude Code config dirs — and two shim
//! data dirs, one cwd path) share a real PostgreSQL store (a cluster the test starts on
//! loopback and stops at the end), and a conversation's turns land on either host. The
//! REAL Claude Code CLI runs every turn against the loopback Messages-API server, whose
//! logged requests prove what each turn sent.
//!
//! Needs the real CLI (`.ci/install-cli`) and PostgreSQL's server binaries (Debian's
//! `postgresql` package); the tests fail, never skip, without them.

use std::path::Path;
use std::process::Command;
use std::sync::Barrier;

use crate::support::clients::Client;
use crate::support::postgres::PgServer;
use crate::support::{describe, run, shim_exe, ApiServer, LoggedRequest, Ran, Sandbox};
use serde_json::{json, Value};

/// The server's reply: what it was last asked, on one line.
fn reply_text(req: &LoggedRequest) -> String {
    let text = req.last_user_text().unwrap_or_default();
    let tail: String = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    format!("reply {}: {tail}", req.index)
}

struct Fleet {
    pg: PgServer,
    db: String,
    server: ApiServer,
    hosts: [Sandbox; 2],
}

impl Fleet {
    fn new(db: &str, warm: bool) -> Fleet {
        let pg = PgServer::start();
        let url = pg.create_db(db);
        let server = ApiServer::start();
        server.set_reply(reply_text);
        let host = |name: &str| {
            let mut sb = Sandbox::real(&server);
            sb.set_env("CLAUDE_SHIM_STORE", &url);
            sb.set_env("CLAUDE_SHIM_LOG", sb.root.join(format!("{name}.log")));
            if !warm {
                sb.set_env("CLAUDE_SHIM_WARM", "0");
            }
            sb
        };
        let hosts = [host("a"), host("b")];
        Fleet {
            pg,
            db: db.to_string(),
            server,
            hosts,
        }
    }

    /// The one cwd path both hosts run in.
    fn cwd(&self) -> &Path {
        &self.hosts[0].work
    }

    fn exec(&self, host: usize, client: Client, history: &[(String, String)], cur: &str) -> Ran {
        let (args, stdin) = client.render(history, cur);
        let mut cmd = self.hosts[host].shimmed(&args);
        cmd.current_dir(self.cwd());
        run(cmd, &stdin)
    }

    fn sql(&self, sql: &str) -> Vec<String> {
        let out = self.pg.psql(&self.db, sql);
        out.lines().map(str::to_string).collect()
    }

    /// `kind|session|host` of every run, in order.
    fn runs(&self) -> Vec<String> {
        self.sql("SELECT kind || '|' || COALESCE(session, '') FROM claude_shim.runs ORDER BY id")
    }

    fn errors(&self, host: usize) -> Option<String> {
        std::fs::read_to_string(self.hosts[host].shim_home.join("errors.log")).ok()
    }

    fn context(&self) -> String {
        let mut s = String::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let log = std::fs::read_to_string(h.root.join(if i == 0 { "a.log" } else { "b.log" }))
                .unwrap_or_default();
            s.push_str(&format!("=== host {i} log ===\n{}", h.unsandbox(&log)));
            if let Some(e) = self.errors(i) {
                s.push_str(&format!("=== host {i} errors.log ===\n{e}"));
            }
        }
        s.push_str("=== main requests: session, user texts ===\n");
        for q in self.server.main_requests() {
            s.push_str(&format!(
                "#{} {:?} {:?}\n",
                q.index,
                q.session_id(),
                q.user_texts()
            ));
        }
        s
    }

    /// One turn on `host`: exit 0, nothing on stderr, the server's reply as the answer.
    /// Returns the reply as the client keeps it and the turn's one request.
    fn say(
        &self,
        host: usize,
        client: Client,
        history: &mut Vec<(String, String)>,
        cur: &str,
    ) -> LoggedRequest {
        let before = self.server.main_requests().len();
        let out = self.exec(host, client, history, cur);
        let ctx = || {
            format!(
                "host {host}, turn {cur:?}\n{}\n{}",
                describe(&out),
                self.context()
            )
        };
        assert!(out.status.success(), "{}", ctx());
        assert!(out.stderr.is_empty(), "stderr not empty\n{}", ctx());
        let reply = client
            .reply(&out.stdout)
            .unwrap_or_else(|| panic!("no reply\n{}", ctx()));
        let reqs = self.server.main_requests()[before..].to_vec();
        assert_eq!(reqs.len(), 1, "one request per turn\n{}", ctx());
        assert_eq!(
            reply,
            reqs[0].reply,
            "the answer is the server's\n{}",
            ctx()
        );
        history.push((cur.to_string(), reply));
        reqs.into_iter().next().unwrap()
    }

    fn stop_keepers(&self) {
        for h in &self.hosts {
            let mut cmd = Command::new(shim_exe());
            cmd.args(["warm", "stop"])
                .env_clear()
                .env("HOME", &h.home)
                .env("CLAUDE_SHIM_HOME", &h.shim_home);
            let _ = run(cmd, b"");
        }
    }
}

fn question(k: usize) -> String {
    format!("fleet question {k:02}")
}

/// The request carries the first prompt and every later question once each, as
/// separate user messages, and every earlier reply: one copy of history.
fn assert_one_copy(f: &Fleet, req: &LoggedRequest, first: &str, history: &[(String, String)]) {
    let users: Vec<Vec<String>> = req
        .texts_by_message("user")
        .into_iter()
        .filter(|m| !m.is_empty())
        .collect();
    let mut want = vec![vec![first.to_string()]];
    want.extend(history[1..].iter().map(|(u, _)| vec![u.clone()]));
    assert_eq!(users, want, "request #{}\n{}", req.index, f.context());
    let replies: Vec<String> = history[..history.len() - 1]
        .iter()
        .map(|(_, a)| a.clone())
        .collect();
    assert_eq!(
        req.assistant_texts(),
        replies,
        "request #{}\n{}",
        req.index,
        f.context()
    );
}

/// Ten turns on `hosts[k]`: one conversation, one session, resumed from turn 2 on.
fn ten_turns(hosts: [usize; 10], warm: bool) {
    let f = Fleet::new("alternating", warm);
    let mut history = Vec::new();
    let mut first = String::new();
    let mut session = None;
    for k in 1..=10 {
        let host = hosts[k - 1];
        let req = f.say(host, Client::Wrapper, &mut history, &question(k));
        if k == 1 {
            first = String::from_utf8(Client::Wrapper.render(&[], &question(1)).1).unwrap();
            session = req.session_id();
            assert!(session.is_some());
        } else {
            assert_one_copy(&f, &req, &first, &history);
        }
        assert_eq!(
            req.session_id(),
            session,
            "turn {k} changed session\n{}",
            f.context()
        );
    }
    let runs = f.runs();
    let s = session.unwrap();
    let mut want = vec![format!("fresh|{s}")];
    want.extend((2..=10).map(|_| format!("resumed|{s}")));
    assert_eq!(runs, want, "{}", f.context());
    let machines = f.sql("SELECT DISTINCT host FROM claude_shim.runs");
    assert_eq!(
        machines.len(),
        1,
        "both hosts are this machine: {machines:?}"
    );
    // Each host brought the session here itself, under its own config dir.
    for h in &f.hosts {
        assert!(h.session_file(&s).is_some(), "{}", f.context());
    }
    // The stored transcript is the session file, byte for byte, on the host that
    // ran the last turn.
    let last = &f.hosts[hosts[9]];
    let file = std::fs::read(last.session_file(&s).unwrap()).unwrap();
    let stored = f.sql(&format!(
        "SELECT encode(data, 'hex') FROM claude_shim.transcript_chunks \
         WHERE session = '{s}' ORDER BY start"
    ));
    let stored: Vec<u8> = stored
        .iter()
        .flat_map(|h| hex::decode(h).unwrap())
        .collect();
    assert!(
        file.starts_with(&stored) && !stored.is_empty(),
        "{}",
        f.context()
    );
    // The route key of the conversation's messages is the key the shim recorded.
    let mut messages = Vec::new();
    for (u, a) in &history {
        messages.push(json!({"role": "user", "content": u}));
        messages.push(json!({"role": "assistant", "content": a}));
    }
    let key = route_key(&json!({"model": "claude", "messages": messages}));
    let recorded = f.sql("SELECT DISTINCT conv_key FROM claude_shim.runs");
    assert_eq!(recorded, [key], "{}", f.context());
    if warm {
        // A turn on the host of the turn before runs in that turn's live CLI; one
        // after another host's turn starts a new one: a live process whose session
        // another host moved on is never reused (its head no longer matches).
        let engines = f.sql("SELECT engine FROM claude_shim.runs ORDER BY id");
        let want: Vec<&str> = (0..10)
            .map(|k| match k {
                0 => "live",
                k if hosts[k] == hosts[k - 1] => "warm",
                _ => "live",
            })
            .collect();
        assert_eq!(engines, want, "{}", f.context());
        f.stop_keepers();
    }
    for h in 0..2 {
        assert!(f.errors(h).is_none(), "{}", f.context());
    }
}

fn route_key(body: &Value) -> String {
    let mut cmd = Command::new(shim_exe());
    cmd.arg("route-key");
    let out = run(cmd, body.to_string().as_bytes());
    assert!(out.status.success(), "{}", describe(&out));
    out.out().trim().to_string()
}

#[test]
fn ten_turns_alternating_between_hosts_resume_every_turn_from_two() {
    ten_turns([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], false);
}

#[test]
fn warm_turns_moving_between_hosts_resume_too() {
    ten_turns([0, 0, 1, 1, 0, 1, 0, 0, 1, 0], true);
}

#[test]
fn killing_postgres_mid_conversation_runs_the_next_turns_as_without_the_shim() {
    let mut f = Fleet::new("killed", false);
    let mut history = Vec::new();
    for k in 1..=4 {
        f.say((k - 1) % 2, Client::LangChain, &mut history, &question(k));
    }
    f.pg.kill();
    for k in 5..=7 {
        let host = (k - 1) % 2;
        let prompt = Client::LangChain
            .render(&history, &question(k))
            .0
            .last()
            .unwrap()
            .clone();
        let req = f.say(host, Client::LangChain, &mut history, &question(k));
        // As without the shim: the whole transcript, as the caller sent it.
        let users: Vec<Vec<String>> = req
            .texts_by_message("user")
            .into_iter()
            .filter(|m| !m.is_empty())
            .collect();
        assert_eq!(users, [vec![prompt]], "{}", f.context());
        let errors = f.errors(host).unwrap_or_default();
        assert!(
            errors.contains("store"),
            "errors.log says the store failed:\n{errors}"
        );
    }
}

#[test]
fn sixteen_turns_from_two_hosts_branching_from_one_node_never_resume_one_session_twice() {
    const N: usize = 16;
    let f = Fleet::new("branching", false);
    let mut history = Vec::new();
    f.say(0, Client::LangChain, &mut history, &question(1));
    f.say(1, Client::LangChain, &mut history, &question(2));
    let original: String =
        f.sql("SELECT session FROM claude_shim.runs ORDER BY id LIMIT 1")[0].clone();
    let texts: Vec<String> = (1..=N)
        .map(|k| format!("fleet branch {k} of {N}"))
        .collect();
    let barrier = Barrier::new(N);
    let outputs: Vec<Ran> = std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let (f, history, barrier) = (&f, &history, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    f.exec(i % 2, Client::LangChain, history, text)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("turn"))
            .collect()
    });
    let requests = f.server.main_requests();
    let first = Client::LangChain
        .render(&[], &question(1))
        .0
        .last()
        .unwrap()
        .clone();
    for (text, out) in texts.iter().zip(&outputs) {
        let ctx = || format!("branch {text:?}\n{}\n{}", describe(out), f.context());
        assert!(out.status.success(), "{}", ctx());
        assert!(out.stderr.is_empty(), "{}", ctx());
        let mine: Vec<&LoggedRequest> = requests
            .iter()
            .filter(|r| r.last_user_text().as_deref() == Some(text.as_str()))
            .collect();
        assert_eq!(mine.len(), 1, "{}", ctx());
        assert_eq!(
            Client::LangChain.reply(&out.stdout).as_deref(),
            Some(mine[0].reply.as_str()),
            "{}",
            ctx()
        );
        let mut h = history.clone();
        h.push((text.clone(), String::new()));
        assert_one_copy(&f, mine[0], &first, &h);
    }
    let runs = f.runs()[2..].to_vec();
    assert_eq!(runs.len(), N, "{}", f.context());
    let in_place: Vec<&String> = runs.iter().filter(|r| r.starts_with("resumed|")).collect();
    assert!(
        in_place.len() <= 1,
        "two in-place resumes of one session\n{runs:?}"
    );
    assert!(
        runs.iter()
            .all(|r| r.starts_with("resumed|") || r.starts_with("forked|")),
        "{runs:?}\n{}",
        f.context()
    );
    for r in &in_place {
        assert_eq!(**r, format!("resumed|{original}"));
    }
    let mut sessions: Vec<&str> = runs.iter().map(|r| r.split('|').nth(1).unwrap()).collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), N, "every branch its own session\n{runs:?}");
    // The original session's stored transcript is whole JSON lines (no interleaving).
    let stored = f.sql(&format!(
        "SELECT encode(data, 'hex') FROM claude_shim.transcript_chunks \
         WHERE session = '{original}' ORDER BY start"
    ));
    let bytes: Vec<u8> = stored
        .iter()
        .flat_map(|h| hex::decode(h).unwrap())
        .collect();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<Value>(line).unwrap_or_else(|e| {
            panic!(
                "stored line is not JSON ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
    }
    println!(
        "branch kinds: {:?}",
        runs.iter()
            .map(|r| r.split('|').next().unwrap())
            .collect::<Vec<_>>()
    );
}

/// Metrics on a fleet: each replica serves `metrics --serve`, one Prometheus
/// scrapes both, and each counts only the turns it ran, so the sum over the
/// replicas is every turn once, as the shared runs log holds them.
#[test]
fn each_replica_counts_the_turns_it_ran_and_prometheus_sums_them_once() {
    use crate::support::prometheus::{Endpoint, Prometheus};
    let f = Fleet::new("metrics", false);
    let endpoints = [0, 1].map(|h| Endpoint::serve(f.hosts[h].cli(&[])));
    let targets: Vec<String> = endpoints.iter().map(|e| e.addr.clone()).collect();
    let prom = Prometheus::scraping(&targets);
    prom.wait_for("sum(up{job=\"claude-shim\"})", 2.0);
    let hosts = [0, 1, 1, 0, 1];
    let mut history = Vec::new();
    for (k, &host) in hosts.iter().enumerate() {
        f.say(host, Client::Wrapper, &mut history, &question(k + 1));
    }
    let logged = f.runs().len();
    assert_eq!(logged, hosts.len(), "{}", f.context());
    prom.wait_for("sum(claude_shim_turns_total)", logged as f64);
    for (h, e) in endpoints.iter().enumerate() {
        let ran = hosts.iter().filter(|&&x| x == h).count() as f64;
        let q = format!("sum(claude_shim_turns_total{{instance=\"{}\"}})", e.addr);
        assert_eq!(prom.value(&q), ran, "replica {h}\n{}", f.context());
    }
    let resumed = prom.value("sum(claude_shim_turns_total{kind=\"resumed\"})");
    assert_eq!(resumed, (hosts.len() - 1) as f64, "{}", f.context());
    for h in 0..2 {
        assert!(f.errors(h).is_none(), "{}", f.context());
    }
}
