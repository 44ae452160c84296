//! `claude-shim metrics` against the fake CLI, where things go wrong: the port is
//! taken, the setting cannot be parsed, scrapes arrive during a turn, scrape
//! clients stall. Each gets a clear message (`metrics`, `doctor`, errors.log), and
//! turns run exactly as before: resumed as they were, what the caller sees the
//! same as without the shim.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::support::clients::{Chat, Client};
use crate::support::prometheus::Endpoint;
use crate::support::store::{errors_log, kinds};
use crate::support::turns::{assert_same_masked, both_chat, say, tag};
use crate::support::{run, Sandbox};

fn config(s: &Sandbox, text: &str) {
    let file = s.shim_home.join("config.toml");
    std::fs::write(&file, text).expect("write config.toml");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

fn doctor_line(s: &Sandbox) -> String {
    let out = run(s.cli(&["doctor"]), b"");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.get(6..).is_some_and(|r| r.starts_with("metrics")))
        .unwrap_or_else(|| panic!("no metrics line:\n{text}"))
        .to_owned()
}

/// Two turns of a conversation: the second resumes, as it would without any
/// metrics setting.
fn turns_run_as_before(s: &Sandbox) {
    let mut chat = Chat::new(Client::Wrapper);
    say(s, &mut chat, "one");
    say(s, &mut chat, "two");
    assert_eq!(kinds(s), ["fresh", "resumed"]);
}

/// A GET of `/metrics`: its status line and body.
fn scrape(addr: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

#[test]
fn a_port_taken_is_said_and_logged_and_turns_run_as_before() {
    let s = Sandbox::new();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = run(s.cli(&["metrics", "--serve", &addr]), b"");
    assert_eq!(out.status.code(), Some(1), "{}", out.err());
    let err = out.err();
    assert!(
        err.contains(&format!("cannot listen on {addr}")) && err.contains("in use"),
        "{err}"
    );
    assert!(err.contains("choose another"), "{err}");
    let log = errors_log(&s);
    assert!(log.contains("metrics: cannot listen on"), "{log}");
    // The configured endpoint is someone else's, who never answers.
    config(&s, &format!("metrics = \"{addr}\"\n"));
    let line = doctor_line(&s);
    assert!(line.starts_with("warn"), "{line}");
    assert!(line.contains("does not answer"), "{line}");
    turns_run_as_before(&s);
}

#[test]
fn a_setting_that_cannot_be_parsed_is_said_and_changes_no_turn() {
    for (text, said) in [
        ("metrics = 9464\n", "must be a string"),
        ("metrics = \"no-port\"\n", "is not an address"),
    ] {
        let s = Sandbox::new();
        config(&s, text);
        let out = run(s.cli(&["metrics", "--serve"]), b"");
        assert_eq!(out.status.code(), Some(1), "{text}: {}", out.err());
        assert!(out.err().contains(said), "{text}: {}", out.err());
        assert!(errors_log(&s).contains(said), "{text}: {}", errors_log(&s));
        let line = doctor_line(&s);
        assert!(line.starts_with("warn") && line.contains(said), "{line}");
        assert!(line.contains("turns do not read it"), "{line}");
        turns_run_as_before(&s);
        // Printing needs no address.
        let out = run(s.cli(&["metrics"]), b"");
        assert!(out.status.success(), "{}", out.err());
    }
}

/// Scrapes arrive all through a turn, and clients stall: one connects and sends
/// nothing, one sends half a request, one asks and never reads. Every other scrape
/// is answered, and the turn the caller sees is the one it sees without the shim.
#[test]
fn scrapes_during_a_turn_and_stalled_clients_hold_up_nothing() {
    let s = Sandbox::new();
    let endpoint = Endpoint::serve(s.cli(&[]));
    let addr = endpoint.addr.clone();
    let silent = TcpStream::connect(&addr).unwrap();
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /metr").unwrap();
    let mut unread = TcpStream::connect(&addr).unwrap();
    unread
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();

    let mut chat = Chat::new(Client::Wrapper);
    say(&s, &mut chat, &tag("m", 1));
    let scraping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let scraper = {
        let (addr, on) = (addr.clone(), scraping.clone());
        std::thread::spawn(move || {
            let mut answered = 0;
            while on.load(std::sync::atomic::Ordering::SeqCst) {
                let (status, body) = scrape(&addr);
                assert!(status.contains(" 200"), "{status}");
                assert!(body.contains("claude_shim_build_info"), "{body}");
                answered += 1;
            }
            answered
        })
    };
    // The turn holds its session a second after its first event.
    let (through, direct) = both_chat(&s, &chat, &tag("m", 2), |c| {
        c.env("FAKE_DELAY", "1");
    });
    scraping.store(false, std::sync::atomic::Ordering::SeqCst);
    let answered = scraper.join().expect("the scrapes were answered");
    assert!(answered > 1, "{answered} scrapes during the turn");
    assert_same_masked(&through, &direct);
    assert_eq!(kinds(&s), ["fresh", "resumed"]);
    let (_, body) = scrape(&addr);
    assert!(
        body.contains("claude_shim_turns_total{kind=\"resumed\",engine=\"cold\"} 1"),
        "{body}"
    );
    drop((silent, half, unread));
    assert!(errors_log(&s).is_empty(), "{}", errors_log(&s));
}

/// config.toml that is not TOML (the quick start's line appended twice): turns
/// cannot read their store from it either, so `doctor` fails and says so.
#[test]
fn a_config_file_that_is_not_toml_fails_doctor_and_says_turns_bypass() {
    let s = Sandbox::new();
    config(&s, "metrics = \"127.0.0.1:9\"\nmetrics = \"127.0.0.1:9\"\n");
    let line = doctor_line(&s);
    assert!(
        line.starts_with("FAIL") || line.starts_with("fail"),
        "{line}"
    );
    assert!(
        line.contains("not TOML") && line.contains("as without the shim"),
        "{line}"
    );
}

/// `doctor` tells an endpoint serving another data dir's figures (a service
/// started with another HOME) from its own; the endpoint answers HEAD, a query
/// string, and refuses other methods plainly; a store replaced under it (deleted,
/// started anew by a turn) is read anew.
#[test]
fn the_endpoint_is_this_data_dirs_and_follows_its_store() {
    let s = Sandbox::new();
    let other = Sandbox::new();
    let theirs = Endpoint::serve(other.cli(&[]));
    config(&s, &format!("metrics = \"{}\"\n", theirs.addr));
    let line = doctor_line(&s);
    assert!(
        line.starts_with("warn") && line.contains("another data dir"),
        "{line}"
    );
    let ours = Endpoint::serve(s.cli(&[]));
    config(&s, &format!("metrics = \"{}\"\n", ours.addr));
    let line = doctor_line(&s);
    assert!(
        line.starts_with("ok") && line.contains("this data dir"),
        "{line}"
    );

    let raw = |req: &str| {
        let mut c = TcpStream::connect(&ours.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text
    };
    let head = raw("HEAD /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    assert!(!head.contains("claude_shim_build_info"), "{head}");
    let query = raw("GET /metrics?x=1 HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(
        query.contains(" 200") && query.contains("claude_shim_build_info"),
        "{query}"
    );
    let post = raw("POST /metrics HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    assert!(
        post.contains(" 405") && post.contains("Allow: GET, HEAD"),
        "{post}"
    );

    let mut chat = Chat::new(Client::Wrapper);
    say(&s, &mut chat, &tag("r", 1));
    say(&s, &mut chat, &tag("r", 2));
    let (_, body) = scrape(&ours.addr);
    assert!(
        body.contains("claude_shim_turns_total{kind=\"resumed\""),
        "{body}"
    );
    for f in ["shim.db", "shim.db-wal", "shim.db-shm"] {
        let _ = std::fs::remove_file(s.shim_home.join(f));
    }
    let mut chat = Chat::new(Client::Wrapper);
    say(&s, &mut chat, &tag("n", 1));
    let (_, body) = scrape(&ours.addr);
    assert!(
        !body.contains("kind=\"resumed\""),
        "the new store's figures: {body}"
    );
    assert!(
        body.contains("claude_shim_turns_total{kind=\"fresh\",engine=\"cold\"} 1"),
        "{body}"
    );
}

/// `claude_shim_store_up` as a scrape of `addr` gives it.
fn store_up(addr: &str) -> String {
    let (_, body) = scrape(addr);
    body.lines()
        .find_map(|l| l.strip_prefix("claude_shim_store_up "))
        .unwrap_or_else(|| panic!("no store_up in {body}"))
        .trim()
        .to_owned()
}

/// `shim.db` replaced by garbage while `--serve` holds it open, its WAL and
/// SHM left beside it: no scrape reads the old WAL's pages as if the store
/// were whole; each says `store_up 0`, and stderr says why once.
#[test]
fn a_store_replaced_by_garbage_is_down_from_the_first_scrape() {
    let s = Sandbox::new();
    let mut chat = Chat::new(Client::Wrapper);
    say(&s, &mut chat, &tag("g", 1));
    say(&s, &mut chat, &tag("g", 2));
    let endpoint = Endpoint::serve(s.cli(&[]));
    assert_eq!(store_up(&endpoint.addr), "1");
    let db = s.shim_home.join("shim.db");
    assert!(s.shim_home.join("shim.db-wal").exists());
    let garbage = s.shim_home.join("garbage");
    std::fs::write(&garbage, b"this is not a database, only text".repeat(200)).unwrap();
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::rename(&garbage, &db).unwrap();
    for i in 0..3 {
        assert_eq!(store_up(&endpoint.addr), "0", "scrape {i}");
    }
    let log = errors_log(&s);
    assert!(
        log.contains("metrics: opening the store") && log.contains("not a SQLite database"),
        "{log}"
    );
}
