//! Where a scrape's figures come from ([`Source`]), and the endpoint
//! Prometheus scrapes (`tiny_http`). The accepting thread only hands each
//! request to a thread of its own, which reads the figures and writes the
//! answer: a slow store or keeper, a client that reads slowly or stalls,
//! holds only its own scrape, never the next one, and never a turn.

use super::exposition::{self, Format, Snapshot};
use crate::store::Store;
use anyhow::{anyhow, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The store, kept open across scrapes: opened again after a failure, or
/// when its file was replaced (deleted and started anew by a turn).
#[derive(Default)]
pub struct Source {
    store: Option<(Store, Option<(u64, u64)>)>,
    /// The last scrape failed to read the store (said once, not each time).
    failing: bool,
}

/// The database file's identity (device, inode); `None`: not a file.
fn identity(store: &Store) -> Option<(u64, u64)> {
    let m = std::fs::metadata(store.file()?).ok()?;
    Some((m.dev(), m.ino()))
}

impl Source {
    pub fn snapshot(&mut self) -> Snapshot {
        let dir = crate::data_dir::DataDir::existing().ok().flatten();
        let mut snap = Snapshot {
            keeper: dir
                .as_ref()
                .and_then(crate::warm::client::Keeper::status_of),
            ..Snapshot::default()
        };
        let replaced = self
            .store
            .as_ref()
            .is_some_and(|(s, id)| id.is_some() && identity(s) != *id);
        if replaced {
            self.store = None;
        }
        if self.store.is_none() {
            match crate::cli::store_access::existing_store() {
                Ok(Some(store)) => {
                    let id = identity(&store);
                    self.store = Some((store, id));
                }
                // No store yet (no turn ran): zeros.
                Ok(None) => {
                    snap.totals = Some(Vec::new());
                    self.recovered();
                    return snap;
                }
                Err(e) => {
                    self.failed(&format!("opening the store: {e:#}"));
                    return snap;
                }
            }
        }
        let Some((store, _)) = &self.store else {
            return snap;
        };
        match store.totals() {
            Ok(t) => {
                snap.totals = Some(t);
                snap.cli_versions = store.cli_versions().unwrap_or_default();
                self.recovered();
            }
            Err(e) => {
                self.store = None;
                self.failed(&format!("reading the store: {e:#}"));
            }
        }
        snap
    }

    /// Said once when the store starts failing (on stderr, which a service
    /// manager keeps, and in errors.log), not at every scrape.
    fn failed(&mut self, why: &str) {
        if !self.failing {
            crate::error!("metrics: {why}");
            let _ = writeln!(
                std::io::stderr(),
                "claude-shim metrics: {why} (claude_shim_store_up 0; `claude-shim doctor` says how to fix the store)"
            );
        }
        self.failing = true;
    }

    fn recovered(&mut self) {
        if std::mem::take(&mut self.failing) {
            let _ = writeln!(
                std::io::stderr(),
                "claude-shim metrics: the store reads again"
            );
        }
    }
}

/// Scrapes answered at once, at most; past it a scrape gets 503.
const AT_ONCE: usize = 16;

pub fn serve(addr: SocketAddr, out: &mut dyn Write) -> Result<()> {
    allow_more_files();
    // A panic in the HTTP layer's threads (out of descriptors, a client
    // gone mid-request) is said in one line, not as Rust's report.
    std::panic::set_hook(Box::new(|info| {
        let why = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        crate::error!("metrics: the HTTP layer failed: {why}");
        let _ = writeln!(
            std::io::stderr(),
            "claude-shim metrics: the HTTP layer failed: {why}"
        );
    }));
    let server = tiny_http::Server::http(addr).map_err(|e| {
        let msg = format!("cannot listen on {addr}: {e}");
        crate::error!("metrics: {msg}");
        let in_use = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::AddrInUse);
        match in_use {
            true => anyhow!(
                "{msg} (another process holds the port: choose another with --serve IP:PORT)"
            ),
            false => anyhow!("{msg}"),
        }
    })?;
    let local = server
        .server_addr()
        .to_ip()
        .map_or(addr.to_string(), |a| a.to_string());
    writeln!(
        out,
        "serving metrics at http://{local}/metrics (Ctrl-C stops)"
    )?;
    out.flush()?;
    let source = Arc::new(Mutex::new(Source::default()));
    let answering = Arc::new(AtomicUsize::new(0));
    let probe = probe_addr(&server, addr);
    loop {
        let request = match server.recv_timeout(std::time::Duration::from_secs(10)) {
            Ok(Some(r)) => r,
            // Quiet: is the listener still there? (`tiny_http`'s accepting
            // thread ends on a panic, out of descriptors, and says nothing.)
            Ok(None) if listener_gone(probe) => break,
            Ok(None) => continue,
            Err(e) => {
                crate::debug!("metrics: accepting: {e}");
                continue;
            }
        };
        if answering.fetch_add(1, Ordering::SeqCst) >= AT_ONCE {
            answering.fetch_sub(1, Ordering::SeqCst);
            let busy = tiny_http::Response::from_string("busy\n").with_status_code(503);
            let _ = request.respond(busy);
            continue;
        }
        let (source, done) = (source.clone(), answering.clone());
        std::thread::spawn(move || {
            answer(request, &source);
            done.fetch_sub(1, Ordering::SeqCst);
        });
    }
    // The listener is gone (its accepting thread ended): exit non-zero, so a
    // service manager starts it again.
    crate::error!("metrics: the listener on {addr} stopped");
    Err(anyhow!("the listener on {addr} stopped"))
}

/// Where to knock to see that the listener is there: its own address, or
/// loopback where it listens on every interface.
fn probe_addr(server: &tiny_http::Server, asked: SocketAddr) -> SocketAddr {
    let mut a = server.server_addr().to_ip().unwrap_or(asked);
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

/// Nothing listens at `addr` any more (refused; any other failure, such as
/// this process being out of descriptors, is not taken for it).
fn listener_gone(addr: SocketAddr) -> bool {
    matches!(
        std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(1)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// Each connection holds a descriptor until its client goes: the soft
/// limit is raised to the hard one, as servers do.
fn allow_more_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn answer(request: tiny_http::Request, source: &Mutex<Source>) {
    let accept = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Accept"))
        .map(|h| h.value.as_str().to_owned());
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    let readable = matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    );
    let response = match (readable, path.as_str()) {
        (false, "/metrics" | "/metrics/" | "/") => {
            tiny_http::Response::from_string("only GET and HEAD\n")
                .with_status_code(405)
                .with_header(header("Allow", "GET, HEAD"))
        }
        (true, "/metrics" | "/metrics/") => {
            let format = Format::accepted(accept.as_deref());
            // One scrape reads at a time; the others wait here, not in
            // the accepting thread.
            let snap = source.lock().unwrap_or_else(|p| p.into_inner()).snapshot();
            tiny_http::Response::from_string(exposition::render(&snap, format))
                .with_header(header("Content-Type", format.content_type()))
        }
        (true, "/") => tiny_http::Response::from_string("claude-shim: metrics at /metrics\n")
            .with_header(header("Content-Type", "text/plain; charset=utf-8")),
        _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
    };
    let _ = request.respond(response);
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}
