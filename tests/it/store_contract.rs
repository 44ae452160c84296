//! One contract, both engines: every case here runs on a SQLite store and on a
//! PostgreSQL database (a real server, started on loopback for the suite), through
//! the same `Store` methods a turn and the management commands call. A case gets a
//! new, empty store from `new.store()` (a new database on PostgreSQL) and ages rows
//! with the store's clock, never with SQL of one engine.
//!
//! What only one engine does is named in [`ONE_ENGINE`], with the test that holds it.

use crate::support::postgres::PgServer;
use claude_shim::events::Usage;
use claude_shim::identity::ReplyHash;
use claude_shim::identity::{Chain, Scope, ScopeParts};
use claude_shim::store::attempts::Outcome;
use claude_shim::store::caps::{BinaryKey, Capabilities};
use claude_shim::store::pins::{Lease, NewPin, Ownership};
use claude_shim::store::postgres::Patience;
use claude_shim::store::prompts::{Kept, CANDIDATES, HEAD, PER_SCOPE};
use claude_shim::store::runs::{Engine, Kind, Run, Spent, UsageFrom};
use claude_shim::store::Store;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Makes the stores a case uses.
pub struct New {
    make: Box<dyn Fn() -> Store>,
}

impl New {
    fn store(&self) -> Store {
        (self.make)()
    }
}

type Case = fn(&New);

const CASES: &[(&str, Case)] = &[
    ("pins_heads_and_drop", pins_heads_and_drop),
    (
        "unpin_takes_the_pin_and_the_head_back",
        unpin_takes_the_pin_and_the_head_back,
    ),
    (
        "elsewhere_finds_the_same_turns_in_another_scope",
        elsewhere_finds_the_same_turns_in_another_scope,
    ),
    (
        "ephemeral_sessions_expire_when_idle_or_superseded_never_while_leased",
        ephemeral_sessions_expire_when_idle_or_superseded_never_while_leased,
    ),
    (
        "keeps_two_per_conversation_newest_first",
        keeps_two_per_conversation_newest_first,
    ),
    (
        "a_kept_prompts_start_by_pin_or_by_where_the_next_turn_extends",
        a_kept_prompts_start_by_pin_or_by_where_the_next_turn_extends,
    ),
    ("a_scope_keeps_its_newest", a_scope_keeps_its_newest),
    ("logs_and_counts", logs_and_counts),
    (
        "the_last_attempt_of_a_turn_and_how_it_ended",
        the_last_attempt_of_a_turn_and_how_it_ended,
    ),
    (
        "pinned_leased_and_ephemeral_sessions_are_listed_once_each",
        pinned_leased_and_ephemeral_sessions_are_listed_once_each,
    ),
    (
        "round_trip_keyed_on_size_and_mtime",
        round_trip_keyed_on_size_and_mtime,
    ),
    (
        "a_scan_is_kept_and_carried_on",
        a_scan_is_kept_and_carried_on,
    ),
    (
        "latest_pin_per_session_newest_first",
        latest_pin_per_session_newest_first,
    ),
    (
        "forget_by_session_cwd_and_all",
        forget_by_session_cwd_and_all,
    ),
];

/// Behaviour that only one engine has, and the test that holds it there.
pub const ONE_ENGINE: &[(&str, &str, &str)] = &[
    (
        "SQLite",
        "a lease is held by the pid the turn gives, and a dead pid's lease is free",
        "lease_is_exclusive_while_holder_lives_and_says_when_it_drains",
    ),
    (
        "SQLite",
        "a turn's queries go through indexes (counted in SQLite's VM steps)",
        "a_turns_queries_do_not_grow_with_the_pins_kept",
    ),
    (
        "SQLite",
        "a file on disk: its quick_check, its size, opened read-only by doctor",
        "health_reads_without_creating",
    ),
    (
        "PostgreSQL",
        "a lease is held by a connection (an advisory lock) and names its process; \
         it is freed when the connection ends",
        "pins_heads_and_leases_hold_across_hosts",
    ),
    (
        "PostgreSQL",
        "transcripts, and the head and the lease in one round trip (Engine::fleet)",
        "the_head_and_the_lease_in_one_round_trip",
    ),
    (
        "PostgreSQL",
        "every call of a turn within its budget when the server does not answer",
        "a_store_that_does_not_answer_costs_a_turn_its_budget_not_more",
    ),
];

/// Every case on `new`'s engine; the failures named together.
fn holds(engine: &str, new: &New) {
    let failed: Vec<&str> = CASES
        .iter()
        .filter(|(name, case)| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(new)));
            if r.is_err() {
                eprintln!("{engine}: {name} failed");
            }
            r.is_err()
        })
        .map(|(name, _)| *name)
        .collect();
    assert!(
        failed.is_empty(),
        "on {engine}, the contract fails in {failed:?}"
    );
}

#[test]
fn the_contract_holds_on_sqlite() {
    let dirs = std::sync::Mutex::new(Vec::new());
    holds(
        "SQLite",
        &New {
            make: Box::new(move || {
                let dir = tempfile::tempdir().unwrap();
                let store = Store::open_in(dir.path()).expect("a SQLite store");
                dirs.lock().unwrap().push(dir);
                store
            }),
        },
    );
}

#[test]
fn the_contract_holds_on_postgres() {
    let pg = std::rc::Rc::new(PgServer::start());
    let n = AtomicUsize::new(0);
    let server = pg.clone();
    holds(
        "PostgreSQL",
        &New {
            make: Box::new(move || {
                let db = format!("contract{}", n.fetch_add(1, Ordering::Relaxed));
                let url = server.create_db(&db);
                Store::open_shared(&url, Patience::Each(Duration::from_secs(10)))
                    .expect("a PostgreSQL store")
            }),
        },
    );
}

/// The tests [`ONE_ENGINE`] names exist (a rename would leave it pointing at nothing).
#[test]
fn what_one_engine_does_is_held_by_a_named_test() {
    let sources = [
        include_str!("../../src/store/sqlite/pins.rs"),
        include_str!("../../src/store/sqlite/report.rs"),
        include_str!("fleet_store.rs"),
    ];
    for (engine, what, test) in ONE_ENGINE {
        let needle = format!("fn {test}()");
        assert!(
            sources.iter().any(|s| s.contains(&needle)),
            "{engine}: {what}: no test {test}"
        );
    }
}

/// A pin of `turns` in session S of /w; its id and scope.
fn pin_turns(s: &mut Store, turns: &[&str]) -> (i64, Scope) {
    let p = NewPin::of_turns("S", "A", "/w", turns, "r");
    let scope = p.scope.clone();
    (s.add_pin(&p, Ownership::Kept, "/c").unwrap(), scope)
}

/// A pin of `session` in `cwd`, `turns` long, its reply `preview`.
fn pin_at(s: &mut Store, session: &str, cwd: &str, turns: usize, preview: &str) {
    let t = format!("{session}{turns}");
    let mut p = new_pin(session, "a", &[t.as_str()], preview);
    p.cwd = cwd.into();
    p.turns = turns;
    s.add_pin(&p, Ownership::Kept, "/c").unwrap();
}

fn new_pin(session: &str, uuid: &str, turns: &[&str], reply: &str) -> NewPin {
    NewPin::of_turns(session, uuid, "/w", turns, reply)
}

// pins

fn pins_heads_and_drop(new: &New) {
    let mut s = new.store();
    let a = new_pin("S", "A1", &["hi"], "r1");
    s.add_pin(&a, Ownership::Kept, "/c").unwrap();
    s.add_pin(&new_pin("T", "B1", &["hi"], "r1"), Ownership::Kept, "/c")
        .unwrap();
    let found = s.find_pins(&a.node).unwrap();
    assert_eq!(
        found.iter().map(|p| p.session.as_str()).collect::<Vec<_>>(),
        ["T", "S"]
    );
    assert_eq!(found[1].reply_hashes, [ReplyHash::of("r1")]);
    assert_eq!(s.session_head("S").unwrap().as_deref(), Some("A1"));
    s.drop_session("S").unwrap();
    assert_eq!(s.find_pins(&a.node).unwrap().len(), 1);
    assert_eq!(s.session_head("S").unwrap(), None);
}

// pins

fn unpin_takes_the_pin_and_the_head_back(new: &New) {
    let mut s = new.store();
    s.add_pin(&new_pin("S", "A1", &["a"], "r"), Ownership::Kept, "/c")
        .unwrap();
    let b = new_pin("S", "A2", &["a", "b"], "r");
    let id = s.add_pin(&b, Ownership::Kept, "/c").unwrap();
    assert_eq!(s.session_head("S").unwrap().as_deref(), Some("A2"));
    s.unpin(id, "S", Some("A1")).unwrap();
    assert!(s.find_pins(&b.node).unwrap().is_empty());
    assert_eq!(s.session_head("S").unwrap().as_deref(), Some("A1"));
}

// pins

fn elsewhere_finds_the_same_turns_in_another_scope(new: &New) {
    let mut s = new.store();
    let mut p = new_pin("S", "A1", &["a"], "r");
    p.parts.cwd = "/other".into();
    p.scope = p.parts.scope();
    p.node = p.chain.node(&p.scope);
    s.add_pin(&p, Ownership::Kept, "/c").unwrap();
    let found = s.find_elsewhere(&p.chain).unwrap().unwrap();
    assert_eq!(found.parts.cwd, "/other");
    let other = Chain::empty().user("zzz");
    assert_eq!(s.find_elsewhere(&other).unwrap(), None);
}

// pins

fn ephemeral_sessions_expire_when_idle_or_superseded_never_while_leased(new: &New) {
    let t = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(1000));
    let clock = t.clone();
    let mut s = new
        .store()
        .with_clock(move || clock.load(std::sync::atomic::Ordering::SeqCst));
    let set = |v| t.store(v, std::sync::atomic::Ordering::SeqCst);
    s.add_pin(&new_pin("E", "A1", &["a"], "r"), Ownership::Ephemeral, "/c")
        .unwrap();
    s.add_pin(&new_pin("K", "B1", &["k"], "r"), Ownership::Kept, "/c")
        .unwrap();
    assert!(s.is_ephemeral("E").unwrap() && !s.is_ephemeral("K").unwrap());
    assert!(s.expired_ephemeral(1000, &|_| true).unwrap().is_empty());
    // Superseded: the same node and reply pinned later in another session.
    s.add_pin(&new_pin("F", "C1", &["a"], "r"), Ownership::Ephemeral, "/c")
        .unwrap();
    assert_eq!(
        s.expired_ephemeral(1000, &|_| true).unwrap(),
        [("E".to_string(), "/c".to_string())]
    );
    // Idle past the TTL, unless a live turn holds it.
    set(5000);
    assert_eq!(
        s.try_lease("F", Some("C1"), 7, &|_| true).unwrap(),
        Lease::Taken
    );
    set(9000);
    let expired = s.expired_ephemeral(6000, &|_| true).unwrap();
    assert_eq!(expired, [("E".to_string(), "/c".to_string())]);
    // Let go (how a holder's death frees it is each engine's: ONE_ENGINE).
    s.release_lease("F", 7).unwrap();
    let expired = s.expired_ephemeral(6000, &|_| true).unwrap();
    assert_eq!(expired.len(), 2, "{expired:?}");
}

// prompts

fn keeps_two_per_conversation_newest_first(new: &New) {
    let mut s = new.store();
    let (a, scope) = pin_turns(&mut s, &["a"]);
    let r = vec!["ra".to_owned()];
    s.keep_prompt(
        a,
        &scope,
        &Kept {
            prompt: "a",
            replies: &r,
            continues: None,
        },
    )
    .unwrap();
    let (b, _) = pin_turns(&mut s, &["a", "b"]);
    s.keep_prompt(
        b,
        &scope,
        &Kept {
            prompt: "a ra b",
            replies: &r,
            continues: Some(a),
        },
    )
    .unwrap();
    let (c, _) = pin_turns(&mut s, &["a", "b", "c"]);
    s.keep_prompt(
        c,
        &scope,
        &Kept {
            prompt: "a ra b rb c",
            replies: &r,
            continues: Some(b),
        },
    )
    .unwrap();
    let got: Vec<(i64, usize)> = s
        .prompted(&scope)
        .unwrap()
        .iter()
        .map(|p| (p.pin, p.prompt_len))
        .collect();
    assert_eq!(
        got,
        vec![(c, 11), (b, 6)],
        "the one two runs back is let go"
    );
    assert_eq!(s.prompt_of(b).unwrap().as_deref(), Some("a ra b"));
    assert_eq!(s.prompt_of(a).unwrap(), None);
    // Another scope sees none of them.
    let other = NewPin::of_turns("S", "A", "/elsewhere", &["a"], "r").scope;
    assert!(s.prompted(&other).unwrap().is_empty());
}

// prompts

fn a_kept_prompts_start_by_pin_or_by_where_the_next_turn_extends(new: &New) {
    let mut s = new.store();
    let (a, scope) = pin_turns(&mut s, &["a"]);
    let long = "é".repeat(30);
    s.keep_prompt(
        a,
        &scope,
        &Kept {
            prompt: &long,
            replies: &["r".to_owned()],
            continues: None,
        },
    )
    .unwrap();
    let head = "é".repeat(HEAD as usize);
    let node = |turns: &[&str]| NewPin::of_turns("S", "A", "/w", turns, "r").node;
    let at = node(&["a"]);
    assert_eq!(
        s.kept_prompt_head(Some(a), &at).unwrap(),
        Some(head.clone())
    );
    assert_eq!(s.kept_prompt_head(None, &at).unwrap(), Some(head));
    // A pin that kept none, a node no pin is at: none.
    let (b, _) = pin_turns(&mut s, &["a", "b"]);
    let there = node(&["a", "b"]);
    assert_eq!(s.kept_prompt_head(Some(b), &there).unwrap(), None);
    assert_eq!(s.kept_prompt_head(None, &there).unwrap(), None);
    assert_eq!(s.kept_prompt_head(None, &node(&["c"])).unwrap(), None);
}

// prompts

fn a_scope_keeps_its_newest(new: &New) {
    let mut s = new.store();
    let r = vec!["r".to_owned()];
    let mut ids = Vec::new();
    for i in 0..(PER_SCOPE + 3) {
        let t = i.to_string();
        let (id, scope) = pin_turns(&mut s, &[&t]);
        s.keep_prompt(
            id,
            &scope,
            &Kept {
                prompt: &t,
                replies: &r,
                continues: None,
            },
        )
        .unwrap();
        ids.push((id, scope));
    }
    let (_, scope) = &ids[0];
    let kept = ids
        .iter()
        .filter(|(id, _)| s.prompt_of(*id).unwrap().is_some())
        .count();
    assert_eq!(kept as i64, PER_SCOPE);
    assert_eq!(s.prompt_of(ids[0].0).unwrap(), None);
    assert_eq!(s.prompted(scope).unwrap().len() as i64, CANDIDATES);
}

// runs

fn logs_and_counts(new: &New) {
    let s = new.store();
    for kind in [Kind::Fresh, Kind::Resumed, Kind::Resumed] {
        let run = Run {
            cwd: "/w",
            kind,
            why_code: "resumed",
            why: "resumed in place",
            exit: 0,
            bytes_in: 10,
            bytes_sent: 3,
            spent: Spent {
                usage: Some((Usage::default(), UsageFrom::Result)),
                cost_usd: Some(0.1),
                total_cost_usd: Some(0.3),
            },
            session: None,
            conv_key: None,
            engine: Engine::Cold,
            replay_misses_prefix: false,
            cache_miss: None,
            prefix: None,
            timing: None,
            errors: 0,
            cold: None,
        };
        s.log_run(&run).unwrap();
    }
    let counts = s.run_counts().unwrap();
    assert_eq!(
        counts,
        [("fresh".to_string(), 1), ("resumed".to_string(), 2)]
    );
}

// attempts

fn the_last_attempt_of_a_turn_and_how_it_ended(new: &New) {
    let s = new.store().with_clock(|| 100);
    let node = Chain::empty()
        .user("a")
        .node(&ScopeParts::default().scope());
    assert_eq!(s.last_attempt(&node, "m", 0).unwrap(), None);
    let first = s.start_attempt(&node, "m", "S1", 10, 0).unwrap();
    s.end_attempt(first, Outcome::NoResult).unwrap();
    let second = s.start_attempt(&node, "m", "S2", 11, 1).unwrap();
    let last = s.last_attempt(&node, "m", 0).unwrap().unwrap();
    assert_eq!(
        (last.id, last.session.as_str(), last.outcome),
        (second, "S2", None)
    );
    assert_eq!(last.continues, 1);
    assert_eq!(s.last_attempt(&node, "other", 0).unwrap(), None);
    assert_eq!(s.last_attempt(&node, "m", 101).unwrap(), None, "too old");
    assert_eq!(s.prune_attempts(101).unwrap(), 2);
}

// listing

fn pinned_leased_and_ephemeral_sessions_are_listed_once_each(new: &New) {
    let mut s = new.store();
    let a = "6e8e0435-8e12-4245-aa25-f674ed4e97a7";
    let b = "7e8e0435-8e12-4245-aa25-f674ed4e97a7";
    let c = "8e8e0435-8e12-4245-aa25-f674ed4e97a7";
    s.add_pin(&new_pin(a, "u1", &["hi"], "r1"), Ownership::Kept, "/c")
        .unwrap();
    s.add_pin(
        &new_pin(a, "u2", &["hi", "more"], "r2"),
        Ownership::Kept,
        "/c",
    )
    .unwrap();
    s.add_pin(&new_pin(b, "u1", &["x"], "r"), Ownership::Ephemeral, "/c")
        .unwrap();
    s.try_lease(c, None, 4242, &|_| true).unwrap();
    let got = s.shim_sessions().unwrap();
    assert_eq!(got.len(), 3, "{got:#?}");
    let by = |id: &str| got.iter().find(|r| r.session == id).unwrap();
    assert_eq!((by(a).turns, by(a).pins, by(a).ephemeral), (2, 2, false));
    assert!(by(a).conversation.is_some());
    assert!(by(b).ephemeral);
    assert_eq!(
        (by(c).pins, by(c).lease_pid.is_some(), by(c).cwd.clone()),
        (0, true, None),
        "which pid a lease names is each engine's (ONE_ENGINE)"
    );
}

// caps

fn round_trip_keyed_on_size_and_mtime(new: &New) {
    let s = new.store();
    let key = BinaryKey {
        path: "/c".into(),
        size: 1,
        mtime_ns: 2,
    };
    let caps = Capabilities {
        version: "2.1.330".into(),
        resume: true,
        ..Default::default()
    };
    s.save_capabilities(&key, &caps).unwrap();
    assert_eq!(s.capabilities(&key).unwrap(), Some(caps));
    let moved = BinaryKey { mtime_ns: 3, ..key };
    assert_eq!(s.capabilities(&moved).unwrap(), None);
}

// scans

fn a_scan_is_kept_and_carried_on(new: &New) {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("s.jsonl");
    std::fs::write(&f, "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n").unwrap();
    let s = new.store();
    assert_eq!(s.scan_of(&f).unwrap(), None);
    assert_eq!(s.scan(&f).unwrap().messages, 1);
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n");
    std::fs::write(&f, text).unwrap();
    let again = s.scan(&f).unwrap();
    assert_eq!((again.messages, again.compactions), (1, 1));
    assert_eq!(s.scan_of(&f).unwrap(), Some(again));
}

// report

fn latest_pin_per_session_newest_first(new: &New) {
    let mut s = new.store();
    pin_at(&mut s, "S", "/a", 1, "one");
    pin_at(&mut s, "T", "/b", 1, "other");
    pin_at(&mut s, "S", "/a", 2, "two");
    let rows = s.latest_pins(None).unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.session.as_str(),
                r.turns,
                r.reply_preview.as_str(),
                r.pins,
            )
        })
        .collect();
    assert_eq!(got, [("S", 2, "two", 2), ("T", 1, "other", 1)]);
    let only_b = s.latest_pins(Some("/b")).unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].session, "T");
}

// report

fn forget_by_session_cwd_and_all(new: &New) {
    let mut s = new.store();
    pin_at(&mut s, "S", "/a", 1, "");
    pin_at(&mut s, "S", "/a", 2, "");
    pin_at(&mut s, "T", "/b", 1, "");
    pin_at(&mut s, "U", "/b", 1, "");
    let r = s.forget_sessions(&["S".into()]).unwrap();
    assert_eq!((r.pins, r.sessions), (2, 1));
    let r = s.forget_cwd("/b").unwrap();
    assert_eq!((r.pins, r.sessions), (2, 2));
    assert_eq!(
        (s.count_pinned().unwrap(), s.shim_sessions().unwrap().len()),
        (0, 0)
    );
    pin_at(&mut s, "V", "/c", 1, "");
    let r = s.forget_all().unwrap();
    assert_eq!((r.pins, r.sessions), (1, 1));
}
