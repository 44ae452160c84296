//! The shared store against a real PostgreSQL server (started by the test on loopback,
//! stopped at the end): migrations applied once by replicas that start together,
//! pins and leases seen across connections (two hosts), transcripts appended only at
//! their end, every management query, and calls bounded when the server is away.

use crate::support::postgres::PgServer;
use claude_shim::identity::{Chain, ScopeParts};
use claude_shim::store::pins::{Lease, NewPin, Ownership};
use claude_shim::store::postgres::{Patience, TURN_BUDGET};
use claude_shim::store::Store;
use std::time::Duration;

const S: &str = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";

/// A sandbox whose turns use a new database of `pg` as their shared
/// store (cold turns: the fake CLI cannot be a live one), and its URL.
fn fleet_sandbox(pg: &PgServer, db: &str) -> (String, crate::support::Sandbox) {
    let url = pg.create_db(db);
    let mut w = crate::support::Sandbox::new();
    w.set_env("CLAUDE_SHIM_STORE", &url)
        .set_env("CLAUDE_SHIM_WARM", "0");
    (url, w)
}

fn open(url: &str) -> Store {
    Store::open_shared(url, Patience::Each(Duration::from_secs(10))).expect("open shared store")
}

#[test]
fn replicas_starting_together_apply_each_migration_once() {
    let pg = PgServer::start();
    let url = pg.create_db("migrate");
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || open(&url).schema_version().unwrap())
        })
        .collect();
    for h in handles {
        assert_eq!(
            h.join().unwrap(),
            claude_shim::store::postgres::COUNT as i64
        );
    }
    assert_eq!(
        pg.psql("migrate", "SELECT count(*) FROM claude_shim.schema_version"),
        "1"
    );
    assert!(open(&url).fleet().is_some());
}

#[test]
fn pins_heads_and_leases_hold_across_hosts() {
    let pg = PgServer::start();
    let url = pg.create_db("leases");
    let mut a = open(&url);
    let mut b = open(&url);
    let first = NewPin::of_turns(S, "A1", "/w", &["hi"], "hello");
    a.add_pin(&first, Ownership::Kept, "/host-a/.claude")
        .unwrap();
    // B sees A's pin and head.
    let found = b.find_pins(&first.node).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].session, S);
    assert_eq!(b.session_head(S).unwrap().as_deref(), Some("A1"));
    // One holder at a time, across connections; draining is visible.
    assert_eq!(
        a.try_lease(S, Some("A1"), 1, &|_| false).unwrap(),
        Lease::Taken
    );
    assert_eq!(
        b.try_lease(S, Some("A1"), 1, &|_| false).unwrap(),
        Lease::Held { draining: false },
        "pid and liveness are host-local: the lock decides"
    );
    a.mark_draining(S, 1).unwrap();
    assert_eq!(
        b.try_lease(S, Some("A1"), 2, &|_| true).unwrap(),
        Lease::Held { draining: true }
    );
    a.release_lease(S, 1).unwrap();
    assert_eq!(
        b.try_lease(S, Some("A1"), 2, &|_| true).unwrap(),
        Lease::Taken
    );
    // The holder dies (its connection goes): the server frees the lease.
    drop(b);
    let mut taken = false;
    for _ in 0..500 {
        if a.try_lease(S, Some("A1"), 1, &|_| true).unwrap() == Lease::Taken {
            taken = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(taken, "a dead holder's lease is freed");
    a.release_lease(S, 1).unwrap();
    // The head moved on: the old node may not resume in place.
    let second = NewPin::of_turns(S, "A2", "/w", &["hi", "more"], "sure");
    a.add_pin(&second, Ownership::Kept, "/host-a/.claude")
        .unwrap();
    let mut c = open(&url);
    assert_eq!(
        c.try_lease(S, Some("A1"), 3, &|_| true).unwrap(),
        Lease::NotHead
    );
    assert_eq!(
        c.try_lease(S, Some("A2"), 3, &|_| true).unwrap(),
        Lease::Taken
    );
    // Undo: the head goes back.
    let id = a.add_pin(
        &NewPin::of_turns(S, "A3", "/w", &["hi", "more", "x"], "y"),
        Ownership::Kept,
        "/c",
    );
    a.unpin(id.unwrap(), S, Some("A2")).unwrap();
    assert_eq!(a.session_head(S).unwrap().as_deref(), Some("A2"));
}

/// A turn's lookup reads the head and tries the lease in one statement:
/// tried only when the stored head is the pin's (a session without a row
/// has none), one holder across connections, and taking it again on the
/// same connection does not stack (one release frees it).
#[test]
fn the_head_and_the_lease_in_one_round_trip() {
    let pg = PgServer::start();
    let url = pg.create_db("headlease");
    let (mut a, b) = (open(&url), open(&url));
    assert_eq!(
        a.fleet().unwrap().head_and_lease(S, Some("A1")).unwrap(),
        (None, None)
    );
    a.add_pin(
        &NewPin::of_turns(S, "A1", "/w", &["hi"], "hello"),
        Ownership::Kept,
        "/c",
    )
    .unwrap();
    let head = Some("A1".to_string());
    assert_eq!(
        a.fleet().unwrap().head_and_lease(S, Some("A0")).unwrap(),
        (head.clone(), None),
        "another head: not tried"
    );
    assert_eq!(
        a.fleet().unwrap().head_and_lease(S, Some("A1")).unwrap(),
        (head.clone(), Some(Lease::Taken))
    );
    assert_eq!(
        a.fleet().unwrap().head_and_lease(S, Some("A1")).unwrap(),
        (head.clone(), Some(Lease::Taken)),
        "its holder may take it again"
    );
    assert_eq!(
        b.fleet().unwrap().head_and_lease(S, Some("A1")).unwrap(),
        (head.clone(), Some(Lease::Held { draining: false }))
    );
    a.release_lease(S, 1).unwrap();
    assert_eq!(
        b.fleet().unwrap().head_and_lease(S, Some("A1")).unwrap(),
        (head, Some(Lease::Taken)),
        "one release frees it, however often its holder took it"
    );
    let local = Store::in_memory().unwrap();
    assert!(
        local.fleet().is_none(),
        "one machine has no round trip to save"
    );
}

#[test]
fn transcripts_grow_only_at_their_end() {
    let pg = PgServer::start();
    let url = pg.create_db("transcripts");
    let a = open(&url);
    let b = open(&url);
    a.fleet()
        .unwrap()
        .append_transcript(S, 0, b"line one\n")
        .unwrap();
    b.fleet()
        .unwrap()
        .append_transcript(S, 9, b"line two\n")
        .unwrap();
    let err = a
        .fleet()
        .unwrap()
        .append_transcript(S, 9, b"late\n")
        .unwrap_err();
    assert!(format!("{err:#}").contains("ends at byte 18"), "{err:#}");
    let manifest = b.fleet().unwrap().transcript_manifest(S).unwrap();
    assert_eq!(
        manifest
            .iter()
            .map(|c| (c.start, c.len))
            .collect::<Vec<_>>(),
        [(0, 9), (9, 9)]
    );
    let tail = a.fleet().unwrap().transcript_from(S, 9).unwrap();
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].1, b"line two\n");
    assert_eq!(
        tail[0].0.sha256,
        claude_shim::store::transcripts::sha256(b"line two\n")
    );
    // Forgetting the session forgets its transcript.
    a.drop_session(S).unwrap();
    assert!(b
        .fleet()
        .unwrap()
        .transcript_manifest(S)
        .unwrap()
        .is_empty());
}

#[test]
fn every_query_of_the_store_runs_on_postgres() {
    use claude_shim::store::runs::{Kind, Run, Spent};
    let pg = PgServer::start();
    let url = pg.create_db("queries");
    let mut s = open(&url);
    let key = claude_shim::store::caps::BinaryKey {
        path: "/c".into(),
        size: 1,
        mtime_ns: 2,
    };
    let caps = claude_shim::probe::Capabilities {
        version: "2.1.330".into(),
        resume: true,
        ..Default::default()
    };
    s.save_capabilities(&key, &caps).unwrap();
    s.save_capabilities(&key, &caps).unwrap();
    assert_eq!(s.capabilities(&key).unwrap(), Some(caps));
    for (session, cwd) in [(S, "/a"), ("7e8e0435-8e12-4245-aa25-f674ed4e97a7", "/b")] {
        let mut p = NewPin::of_turns(session, "A1", cwd, &[session], "r");
        p.parts = ScopeParts {
            cwd: cwd.into(),
            ..Default::default()
        };
        s.add_pin(&p, Ownership::Ephemeral, "/c").unwrap();
    }
    assert!(s.is_ephemeral(S).unwrap());
    s.touch_session(S).unwrap();
    let chain = Chain::empty().user(S);
    assert_eq!(s.find_elsewhere(&chain).unwrap().unwrap().parts.cwd, "/a");
    assert_eq!(s.latest_pins(Some("/b")).unwrap().len(), 1);
    assert_eq!(s.pinned_sessions().unwrap().len(), 2);
    assert_eq!(s.count_pinned().unwrap(), 2);
    let listed = s.shim_sessions().unwrap();
    assert_eq!(listed.len(), 2);
    let a = listed.iter().find(|l| l.session == S).unwrap();
    assert_eq!(
        (a.cwd.as_deref(), a.pins, a.ephemeral),
        (Some("/a"), 1, true)
    );
    assert!(s.expired_ephemeral(i64::MAX, &|_| true).unwrap().len() == 2);
    let run = Run {
        cwd: "/a",
        kind: Kind::Resumed,
        why_code: "resumed",
        why: "resumed in place",
        exit: 0,
        bytes_in: 10,
        bytes_sent: 3,
        spent: Spent::default(),
        session: Some(S),
        conv_key: Some("k"),
        engine: claude_shim::store::runs::Engine::Cold,
        replay_misses_prefix: true,
        cache_miss: None,
        prefix: None,
        timing: None,
        errors: 0,
        cold: None,
    };
    s.log_run(&run).unwrap();
    assert_eq!(s.run_counts().unwrap(), [("resumed".to_string(), 1)]);
    let rows = s.runs_since(0, Some("/a")).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].day.len(), 10, "{:?}", rows[0].day);
    assert!(
        rows[0].replay_misses_prefix,
        "read back from the shared store"
    );
    // `log` and `status` read the shared store too (they met an SQLite-only
    // path before): the row as written, its time in this machine's zone.
    let log = s.recent_runs(0, Some("/a"), Some(5)).unwrap();
    assert_eq!(log.len(), 1);
    let row = &log[0];
    assert_eq!(
        (row.kind, row.why_code.as_deref(), row.session.as_deref()),
        (Some(Kind::Resumed), Some("resumed"), Some(S))
    );
    assert_eq!(
        (row.exit, row.engine),
        (Some(0), Some(claude_shim::store::runs::Engine::Cold))
    );
    assert_eq!(row.local[..10], s.local_day(row.at).unwrap());
    assert_eq!(rows[0].day, s.local_day(row.at).unwrap());
    assert!(s.recent_runs(0, Some("/a"), Some(0)).unwrap().is_empty());
    // A row written ahead (the caller about to have the reply), then
    // completed at the exit: one row, as completed.
    let ahead = Run {
        cwd: "/b",
        kind: Kind::Fresh,
        ..run
    };
    let id = s.begin_run(&ahead).unwrap();
    s.end_run(id, &Run { exit: 9, ..ahead }).unwrap();
    s.flush();
    let b = s.recent_runs(0, Some("/b"), Some(5)).unwrap();
    assert_eq!(
        b.iter().map(|r| (r.kind, r.exit)).collect::<Vec<_>>(),
        [(Some(Kind::Fresh), Some(9))]
    );
    let node = chain.node(&ScopeParts::default().scope());
    let id = s.start_attempt(&node, "m", S, 10, 0).unwrap();
    s.end_attempt(id, claude_shim::store::attempts::Outcome::NoResult)
        .unwrap();
    assert_eq!(s.last_attempt(&node, "m", 0).unwrap().unwrap().id, id);
    assert_eq!(s.prune_attempts(i64::MAX).unwrap(), 1);
    assert_eq!(s.count_prunable(&[], 0, i64::MAX).unwrap().runs, 2);
    let would = s.count_prunable(&[S.to_string()], 0, 0).unwrap();
    let removed = s.prune(&[S.to_string()], 0, 0).unwrap();
    assert_eq!((removed.pins, removed.sessions), (1, 1));
    assert_eq!(would, removed, "gc --dry-run counts what gc removes");
    assert_eq!(s.forget_cwd("/b").unwrap().pins, 1);
    assert_eq!(s.forget_all().unwrap().pins, 0);
    assert_eq!(s.forget_sessions(&[S.to_string()]).unwrap().pins, 0);
    // Session file scans are kept, and carried on as the file grows.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n").unwrap();
    assert_eq!(s.scan_of(&f).unwrap(), None);
    let scan = s.scan(&f).unwrap();
    assert_eq!(s.scan_of(&f).unwrap(), Some(scan));
    s.vacuum().unwrap();
    let h = s.health().unwrap();
    assert_eq!(h.schema_version, h.schema_expected);
}

#[test]
fn a_store_that_does_not_answer_costs_a_turn_its_budget_not_more() {
    // Something listens but never speaks PostgreSQL: connecting times out.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "postgres://shim@127.0.0.1:{}/x",
        silent.local_addr().unwrap().port()
    );
    let err = Store::open_shared(&url, Patience::Turn)
        .err()
        .expect("no store");
    assert!(format!("{err:#}").contains("timed out"), "{err:#}");
    // Nothing listens at all: refused at once.
    drop(silent);
    let err = Store::open_shared(&url, Patience::Turn)
        .err()
        .expect("no store");
    assert!(!format!("{err:#}").contains("timed out"), "{err:#}");

    // A server that stops answering mid-turn: the call in flight times out, and the
    // store is not used again by this process.
    let pg = PgServer::start();
    let url = pg.create_db("stopped");
    let s = Store::open_shared(&url, Patience::Turn).unwrap();
    assert_eq!(s.session_head(S).unwrap(), None);
    let pids = pg.pids();
    for p in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*p),
            nix::sys::signal::Signal::SIGSTOP,
        );
    }
    let err = s.session_head(S).unwrap_err();
    assert!(format!("{err:#}").contains("timed out"), "{err:#}");
    let err = s.session_head(S).unwrap_err();
    assert!(format!("{err:#}").contains("unusable"), "{err:#}");
    for p in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*p),
            nix::sys::signal::Signal::SIGCONT,
        );
    }
    println!("turn budget: {} ms", TURN_BUDGET.as_millis());
}

/// A fleet turn's round trips are counted, not timed: the statements the
/// server ran (pg_stat_statements) for a first turn and for a resumed one,
/// through the shim and the fake CLI. Each is bounded; on failure the
/// statements are listed.
#[test]
fn a_fleet_turn_makes_a_bounded_number_of_statements() {
    use crate::support::clients::{Chat, Client};
    use crate::support::turns::say;
    use crate::support::Sandbox;
    let pg = PgServer::start();
    let url = pg.create_db("counted");
    pg.psql("counted", "CREATE EXTENSION pg_stat_statements");
    let mut w = Sandbox::new();
    // The turn's own statements (the keeper's readying runs its own).
    w.set_env("CLAUDE_SHIM_STORE", &url)
        .set_env("CLAUDE_SHIM_WARM", "0")
        .set_env("CLAUDE_SHIM_STORE_READY", "0");
    let mut chat = Chat::new(Client::Wrapper);
    // Turn 1 connects, migrates and probes; the turns after are the steady state.
    say(&w, &mut chat, "first question <<a.1>>");
    say(&w, &mut chat, "second question <<a.2>>");
    let counted = |what: &str, bound: i64| {
        let listed = pg.psql(
            "counted",
            "SELECT calls || ' ' || regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements \
             WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC",
        );
        let total: i64 = listed
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<i64>().ok())
            .sum();
        eprintln!("{what}: {total} statements\n{listed}");
        assert!(
            total <= bound,
            "{what}: {total} statements, bound {bound}:\n{listed}"
        );
        total
    };
    // Round trips: the shim's log times each (`store: <what> (N µs)`).
    let log = w.file("shim.log");
    let round_trips = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .filter(|l| l.contains("] store: ") && l.ends_with(" µs)"))
            .count()
    };
    for (k, what) in [(3, "a resumed turn"), (4, "another resumed turn")] {
        pg.psql("counted", "SELECT pg_stat_statements_reset()");
        let before = round_trips();
        say(&w, &mut chat, &format!("question {k} <<a.{k}>>"));
        // 12 statements: 11, and the metrics' totals (queued with the run's
        // row, in its round trip). There were 19 in 17 round trips before a turn
        // remembered the transcript manifest it read, housekeeping ran once
        // a minute per host instead of every turn, and the head and the
        // lease became one plain statement (not a PL/pgSQL call); 13 before
        // the binary's capabilities and the schema seen up to date were kept
        // in the data dir.
        counted(what, 12);
        // 6 round trips, connecting included: the transcript's chunks and
        // the session file's scan ride with the lease, the writes nobody
        // waits for (the scan, the attempt's end, the run's log row) with
        // the next statement, and the upload with the lease's release (8
        // before the scan and the upload rode along).
        let trips = round_trips() - before;
        assert!(
            trips <= 6,
            "{what}: {trips} round trips:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let kind = pg.psql(
            "counted",
            "SELECT kind FROM claude_shim.runs ORDER BY at DESC, id DESC LIMIT 1",
        );
        assert_eq!(kind, "resumed", "{what}");
    }
    // A new conversation's first turn in a scope the store knows.
    pg.psql("counted", "SELECT pg_stat_statements_reset()");
    let mut other = Chat::new(Client::Wrapper);
    say(&w, &mut other, "another conversation <<b.1>>");
    counted("a new conversation's first turn", 10);
}

/// A turn on a shared store runs on the connection the keeper readied
/// (connected and warmed ahead), gives what the direct call gives, and that
/// connection is the turn's alone: killed mid-turn, the turn's lease goes
/// with it, as it would with a connection of its own.
#[test]
fn a_fleet_turn_runs_alone_on_the_connection_the_keeper_readied() {
    use crate::support::clients::{Chat, Client};
    use crate::support::process::{assert_same, eventually};
    use crate::support::turns::{both_chat, mask_uuids, say, shim};
    let pg = PgServer::start();
    let (_, w) = fleet_sandbox(&pg, "readied");
    let log = w.file("shim.log");
    let count = |needle: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches(needle)
            .count()
    };
    let readied = "keeper: store connection readied";
    let adopted = "store: adopting a readied connection";
    // The first turn connects itself and starts the keeper, which readies
    // the next turn's connection.
    let mut chat = Chat::new(Client::Wrapper);
    say(&w, &mut chat, "first <<r.1>>");
    assert_eq!(count(adopted), 0);
    let wait_readied = |n: usize| {
        eventually(Duration::from_secs(10), "a readied connection", || {
            (count(readied) >= n).then_some(())
        })
    };
    wait_readied(1);
    let ran = say(&w, &mut chat, "second <<r.2>>");
    assert_eq!(count(adopted), 1, "the second turn adopts it");
    assert!(ran.out().contains("ack r.1,r.2"), "{}", ran.out());
    assert_eq!(
        pg.psql(
            "readied",
            "SELECT kind FROM claude_shim.runs ORDER BY at DESC, id DESC LIMIT 1"
        ),
        "resumed"
    );
    // On it, the same bytes and status as without the shim.
    wait_readied(2);
    let (through, direct) = both_chat(&w, &chat, "third <<r.3>>", |_| {});
    assert_eq!(count(adopted), 2);
    assert_same(&through, &direct);
    assert_eq!(mask_uuids(&through.stdout), mask_uuids(&direct.stdout));
    chat.keep("third <<r.3>>", &through);
    // Killed while it holds its lease on the handed connection: the lock
    // is gone with the process (the keeper kept no copy of the socket).
    wait_readied(3);
    let advisory = || {
        pg.psql(
            "readied",
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted",
        )
    };
    // The session's lease alone: the keeper readying the next connection
    // takes and releases a made-up session's lease as it warms it up.
    let session = pg.psql(
        "readied",
        "SELECT session FROM claude_shim.runs ORDER BY at DESC, id DESC LIMIT 1",
    );
    let key = claude_shim::store::postgres::lease_key(&session);
    let lease = || {
        pg.psql(
            "readied",
            &format!(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND classid = {} AND objid = {}",
                (key as u64 >> 32) as u32,
                key as u64 as u32
            ),
        )
    };
    let pid_file = w.file("fake.pid");
    let mut cmd = shim(&w);
    cmd.env("FAKE_SLEEP", "30").env("FAKE_PID_OUT", &pid_file);
    let input = chat.prepare(&mut cmd, "fourth <<r.4>>");
    let mut child = {
        use std::io::Write;
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .stdin(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().expect("spawn the shim");
        let mut stdin = child.stdin.take().expect("stdin");
        if let crate::support::process::Input::Bytes(b) = input {
            stdin.write_all(&b).expect("write the prompt");
        }
        child
    };
    let fake: i32 = eventually(Duration::from_secs(10), "the CLI running", || {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    assert_eq!(count(adopted), 3, "the killed turn adopted one too");
    assert_eq!(lease(), "1", "the turn holds its lease");
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(fake),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    eventually(
        Duration::from_secs(10),
        "the lease gone with the turn",
        || (lease() == "0" && advisory() == "0").then_some(()),
    );
    // A keeper that does not answer (stopped): the turn connects itself.
    let status = crate::support::process::ok(w.cli(&["warm", "status", "--json"]));
    let status: serde_json::Value = serde_json::from_str(&status).expect("status JSON");
    let pid = status["keeper"]["pid"].as_i64().expect("the keeper's pid");
    let keeper = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let fifth = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        say(&w, &mut chat, "fifth <<r.5>>")
    }));
    nix::sys::signal::kill(keeper, nix::sys::signal::Signal::SIGCONT).unwrap();
    let fifth = fifth.unwrap_or_else(|p| std::panic::resume_unwind(p));
    assert_eq!(count(adopted), 3, "no connection from a stopped keeper");
    assert!(
        fifth.out().contains("ack r.1,r.2,r.3,r.5"),
        "{}",
        fifth.out()
    );
    // The server ends the readied connection before a turn asks for it:
    // the keeper hands over a live one or none, and the turn resumes.
    let ready_backends = "FROM pg_stat_activity WHERE application_name = 'claude-shim' \
                          AND state = 'idle' AND query = 'ROLLBACK'";
    eventually(Duration::from_secs(10), "a readied backend", || {
        (pg.psql("readied", &format!("SELECT count(*) {ready_backends}")) == "1").then_some(())
    });
    pg.psql(
        "readied",
        &format!("SELECT pg_terminate_backend(pid) {ready_backends}"),
    );
    let sixth = say(&w, &mut chat, "sixth <<r.6>>");
    assert!(
        sixth.out().contains("ack r.1,r.2,r.3,r.5,r.6"),
        "{}",
        sixth.out()
    );
    assert_eq!(
        pg.psql(
            "readied",
            "SELECT kind FROM claude_shim.runs ORDER BY at DESC, id DESC LIMIT 1"
        ),
        "resumed"
    );
}

/// `doctor` on a shared store says what the turns use: the store reached and
/// its schema, or why not — and only looks (no schema created).
#[test]
fn doctor_reports_the_shared_store_and_changes_nothing() {
    use crate::support::clients::{Chat, Client};
    use crate::support::turns::say;
    use crate::support::Sandbox;
    let pg = PgServer::start();
    let (url, mut w) = fleet_sandbox(&pg, "doctored");
    let doctor = |w: &Sandbox| {
        let out = w.cli(&["doctor"]).output().expect("run doctor");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let schemas = || {
        pg.psql(
            "doctored",
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'claude_shim'",
        )
    };
    let text = doctor(&w);
    assert!(text.contains("reached, no schema yet"), "{text}");
    assert_eq!(schemas(), "0", "doctor created the schema");
    say(&w, &mut Chat::new(Client::Wrapper), "hello <<d.1>>");
    let text = doctor(&w);
    let want = format!(
        "shared store {url}: ok, schema {}",
        claude_shim::store::postgres::COUNT
    );
    assert!(text.contains(&want), "{text}");
    assert!(!text.contains("shim.db"), "{text}");
    // A store that does not answer: the row fails and says what turns do.
    w.set_env("CLAUDE_SHIM_STORE", "postgres://shim@127.0.0.1:1/none");
    let out = w.cli(&["doctor"]).output().expect("run doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("postgres://shim@127.0.0.1:1/none")
            && text.contains("turns run as without the shim until it answers"),
        "{text}"
    );
}
