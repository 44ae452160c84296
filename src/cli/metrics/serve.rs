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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The store, kept open across scrapes (opened again after a failure).
#[derive(Default)]
pub struct Source {
    store: Option<Store>,
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
        if self.store.is_none() {
            match crate::cli::store_access::existing_store() {
                Ok(Some(store)) => self.store = Some(store),
                // No store yet (no turn ran): zeros.
                Ok(None) => {
                    snap.totals = Some(Vec::new());
                    return snap;
                }
                Err(e) => {
                    crate::error!("metrics: opening the store: {e:#}");
                    return snap;
                }
            }
        }
        let Some(store) = &self.store else {
            return snap;
        };
        match store.totals() {
            Ok(t) => {
                snap.totals = Some(t);
                snap.cli_versions = store.cli_versions().unwrap_or_default();
            }
            Err(e) => {
                crate::error!("metrics: reading the store: {e:#}");
                self.store = None;
            }
        }
        snap
    }
}

/// Scrapes answered at once, at most; past it a scrape gets 503.
const AT_ONCE: usize = 16;

pub fn serve(addr: SocketAddr, out: &mut dyn Write) -> Result<()> {
    let server = tiny_http::Server::http(addr).map_err(|e| {
        let msg = format!("cannot listen on {addr}: {e}");
        crate::error!("metrics: {msg}");
        anyhow!("{msg} (another process holds the port? choose another with --serve IP:PORT)")
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
    for request in server.incoming_requests() {
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
    Ok(())
}

fn answer(request: tiny_http::Request, source: &Mutex<Source>) {
    let accept = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Accept"))
        .map(|h| h.value.as_str().to_owned());
    let response = match (request.method(), request.url()) {
        (tiny_http::Method::Get, "/metrics" | "/metrics/") => {
            let format = Format::accepted(accept.as_deref());
            // One scrape reads at a time; the others wait here, not in
            // the accepting thread.
            let snap = source.lock().unwrap_or_else(|p| p.into_inner()).snapshot();
            tiny_http::Response::from_string(exposition::render(&snap, format))
                .with_header(header(format.content_type()))
        }
        (tiny_http::Method::Get, "/") => {
            tiny_http::Response::from_string("claude-shim: metrics at /metrics\n")
                .with_header(header("text/plain; charset=utf-8"))
        }
        _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
    };
    let _ = request.respond(response);
}

fn header(content_type: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        .expect("a valid header")
}
