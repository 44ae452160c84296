//! `metrics --serve` against hostile scrape clients: one that pipelines
//! hundreds of requests and reads nothing, one that sends a header line of
//! 256 MB, a thousand that connect and say nothing, more connections than the
//! process has descriptors. Each takes only what is bounded for one client:
//! every other scrape is answered, and the endpoint's memory stays small.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::prometheus::{free_port, Endpoint};
use crate::support::store::errors_log;
use crate::support::Sandbox;

/// The endpoint's resident memory may grow by this much under a hostile
/// client (it starts near 10 MB; a 256 MB header took about 300 MB before
/// the bound).
const GROWTH: u64 = 32 << 20;

/// A GET of `/metrics`, answered within `within`: its status line and body.
fn scrape_within(addr: &str, within: Duration) -> (String, String) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(within)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("no answer in {within:?}: {e}"));
    assert!(started.elapsed() < within, "answered late");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    assert!(status.contains(" 200"), "{status}");
    assert!(body.contains("claude_shim_build_info"), "{body}");
    (status, body.to_owned())
}

/// The connection was closed by the endpoint (end of file or a reset).
fn closed(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

fn raise_own_file_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
}

/// One connection pipelines 600 scrapes and reads none of the answers: the
/// others are answered all the while, and what it is owed is not held in
/// memory.
#[test]
fn a_client_pipelining_600_scrapes_and_reading_none_holds_up_no_other() {
    let s = Sandbox::new();
    let mut endpoint = Endpoint::serve(s.cli(&[]));
    let addr = endpoint.addr.clone();
    scrape_within(&addr, Duration::from_secs(10));
    let before = endpoint.memory("VmRSS");
    let mut greedy = TcpStream::connect(&addr).unwrap();
    let request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    let all: Vec<u8> = request.repeat(600);
    greedy.write_all(&all).unwrap();
    for _ in 0..20 {
        scrape_within(&addr, Duration::from_secs(5));
    }
    assert!(endpoint.alive());
    let peak = endpoint.memory("VmHWM");
    assert!(
        peak < before + GROWTH,
        "peak {peak} bytes, from {before} before"
    );
    drop(greedy);
    scrape_within(&addr, Duration::from_secs(5));
    assert!(errors_log(&s).is_empty(), "{}", errors_log(&s));
}

/// A header line of 256 MB is refused once past the bound of a request's
/// head: the endpoint closes the connection instead of buffering it.
#[test]
fn a_256_mb_header_line_is_refused_without_being_held() {
    let s = Sandbox::new();
    let mut endpoint = Endpoint::serve(s.cli(&[]));
    let addr = endpoint.addr.clone();
    scrape_within(&addr, Duration::from_secs(10));
    let before = endpoint.memory("VmRSS");
    let mut huge = TcpStream::connect(&addr).unwrap();
    huge.set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    huge.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: ")
        .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0usize;
    let refused = loop {
        if sent >= 256 << 20 {
            break None;
        }
        match huge.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) => break Some(e),
        }
    };
    let refused = refused.unwrap_or_else(|| panic!("all 256 MB were taken"));
    assert!(
        matches!(
            refused.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        ),
        "{refused} after {sent} bytes"
    );
    assert!(sent < 64 << 20, "{sent} bytes taken before the refusal");
    scrape_within(&addr, Duration::from_secs(5));
    assert!(endpoint.alive());
    let peak = endpoint.memory("VmHWM");
    assert!(
        peak < before + GROWTH,
        "peak {peak} bytes, from {before} before"
    );
}

/// A thousand connections that say nothing (or half a request): the
/// endpoint keeps answering, the oldest of them are closed to make room, and
/// its memory stays small.
#[test]
fn a_thousand_silent_connections_do_not_stop_the_endpoint() {
    raise_own_file_limit();
    let s = Sandbox::new();
    let mut endpoint = Endpoint::serve(s.cli(&[]));
    let addr = endpoint.addr.clone();
    scrape_within(&addr, Duration::from_secs(10));
    let before = endpoint.memory("VmRSS");
    let mut silent: Vec<TcpStream> = (0..1000)
        .map(|i| {
            let mut c = TcpStream::connect(&addr).expect("connect");
            if i % 2 == 1 {
                c.write_all(b"GET /metr").unwrap();
            }
            c
        })
        .collect();
    for _ in 0..5 {
        scrape_within(&addr, Duration::from_secs(5));
    }
    assert!(endpoint.alive());
    // Past the bound, the oldest silent ones made room.
    assert!(closed(&mut silent[0]), "the oldest silent one stays open");
    let peak = endpoint.memory("VmHWM");
    assert!(
        peak < before + GROWTH,
        "peak {peak} bytes, from {before} before"
    );
    drop(silent);
    scrape_within(&addr, Duration::from_secs(5));
}

/// With 40 descriptors, 60 connections hold half a request each: the
/// endpoint closes the oldest to take the next, never runs out of
/// descriptors, and answers a scrape all the while.
#[test]
fn out_of_descriptors_the_endpoint_still_answers() {
    use std::os::unix::process::CommandExt;
    let s = Sandbox::new();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = s.cli(&["metrics", "--serve", &addr]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: only async-signal-safe setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = nix::libc::rlimit {
                rlim_cur: 40,
                rlim_max: 40,
            };
            if nix::libc::setrlimit(nix::libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start --serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "it never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let held: Vec<TcpStream> = (0..60)
        .filter_map(|_| {
            let mut c = TcpStream::connect(&addr).ok()?;
            c.write_all(b"GET /metr").ok()?;
            Some(c)
        })
        .collect();
    assert_eq!(held.len(), 60);
    // Out of descriptors it sheds connections (the oldest idle first, and an
    // accepted one it has no room for), so a scrape may be closed unanswered
    // and is tried again, as Prometheus does at its next interval; it is
    // answered within a few tries, every time.
    for _ in 0..3 {
        let answered = (0..10).any(|_| {
            std::panic::catch_unwind(|| scrape_within(&addr, Duration::from_secs(5))).is_ok()
        });
        assert!(answered, "no scrape answered in 10 tries");
    }
    assert!(child.try_wait().unwrap().is_none(), "--serve ended");
    drop(held);
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.is_empty(), "{err}");
}
