//! Where a scrape's figures come from ([`Source`]), and the endpoint
//! Prometheus scrapes (`tiny_http`, one thread that reads, a thread per
//! answer being written): a client that reads slowly, or stalls, holds only
//! its own answer, never the next scrape, and never a turn.

use super::exposition::{self, Snapshot};
use crate::store::Store;
use anyhow::{anyhow, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The store, kept open across scrapes (opened again after a failure).
#[derive(Default)]
pub struct Source {
    store: Option<Store>,
}

impl Source {
    pub fn snapshot(&mut self) -> Snapshot {
        let mut snap = Snapshot {
            keeper: crate::cli::warm::connect()
                .ok()
                .flatten()
                .and_then(|mut k| k.status().ok()),
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

/// Answers being written at once, at most; past it a scrape gets 503.
const WRITERS: usize = 16;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn serve(addr: SocketAddr, out: &mut dyn Write) -> Result<()> {
    let server = tiny_http::Server::http(addr).map_err(|e| {
        let msg = format!("cannot listen on {addr}: {e}");
        crate::error!("metrics: {msg}");
        anyhow!("{msg} (another process holds the port? choose another with --serve HOST:PORT)")
    })?;
    let local = server
        .server_addr()
        .to_ip()
        .map_or(addr.to_string(), |a| a.to_string());
    writeln!(out, "serving metrics at http://{local}/metrics (Ctrl-C stops)")?;
    out.flush()?;
    let mut source = Source::default();
    let writing = Arc::new(AtomicUsize::new(0));
    for request in server.incoming_requests() {
        let answer = match (request.method(), request.url()) {
            (tiny_http::Method::Get, "/metrics") | (tiny_http::Method::Get, "/metrics/") => {
                let text = exposition::render(&source.snapshot());
                tiny_http::Response::from_string(text).with_header(header(CONTENT_TYPE))
            }
            (tiny_http::Method::Get, "/") => tiny_http::Response::from_string(
                "claude-shim: metrics at /metrics\n".to_owned(),
            )
            .with_header(header("text/plain; charset=utf-8")),
            _ => tiny_http::Response::from_string("not found\n".to_owned()).with_status_code(404),
        };
        if writing.load(Ordering::SeqCst) >= WRITERS {
            let busy = tiny_http::Response::from_string("busy\n".to_owned()).with_status_code(503);
            let _ = request.respond(busy);
            continue;
        }
        writing.fetch_add(1, Ordering::SeqCst);
        let done = writing.clone();
        std::thread::spawn(move || {
            let _ = request.respond(answer);
            done.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

fn header(content_type: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        .expect("a valid header")
}
