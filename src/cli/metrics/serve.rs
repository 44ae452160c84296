//! The endpoint Prometheus scrapes: hyper's HTTP/1 server on a tokio
//! runtime of one thread, each connection a task of its own. What one
//! client can take is bounded: its request's head ([`MAX_BUF`], refused
//! past it without being buffered), its time ([`HEAD_TIMEOUT`] for a
//! request's head, [`STALL`] without a byte read or written, so a client
//! that never reads its answers holds no more than the socket's buffers),
//! and the connections ([`connection_bound`]: past it the oldest one not
//! being answered is closed for the newcomer). The figures are read on a
//! thread per scrape, at most [`AT_ONCE`] at a time: a slow store or
//! keeper holds up only the scrapes, never the accepting or a turn.

use super::exposition::{self, Format};
use super::source::Source;
use anyhow::{anyhow, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{oneshot, Semaphore};

/// Scrapes whose figures are read at once, at most; past it a scrape gets
/// 503.
const AT_ONCE: usize = 16;
/// Connections open at once, at most (fewer where descriptors are fewer).
const MAX_CONNECTIONS: usize = 512;
/// Descriptors kept for the rest: the store, the keeper's socket, threads.
const RESERVED_FILES: usize = 64;
/// A request's head: Prometheus sends a few hundred bytes (hyper's least).
const MAX_BUF: usize = 16 << 10;
/// For a request's head, from the connection or the previous answer on
/// (hyper's timer: a silent connection ends then too).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection on which nothing was read or written for this long ends:
/// an idle client, or one that does not read its answer.
const STALL: Duration = Duration::from_secs(30);

pub fn serve(addr: SocketAddr, out: &mut dyn Write) -> Result<()> {
    let bound = connection_bound(allow_more_files());
    let listener = std::net::TcpListener::bind(addr).map_err(|e| {
        let msg = format!("cannot listen on {addr}: {e}");
        crate::error!("metrics: {msg}");
        match e.kind() == std::io::ErrorKind::AddrInUse {
            true => anyhow!(
                "{msg} (another process holds the port: choose another with --serve IP:PORT)"
            ),
            false => anyhow!("{msg}"),
        }
    })?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr().map_or(addr, |a| a);
    writeln!(
        out,
        "serving metrics at http://{local}/metrics (Ctrl-C stops)"
    )?;
    out.flush()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let lost = runtime.block_on(accept(listener, bound));
    // The listener failed for good: exit non-zero, so that a service
    // manager starts it again.
    crate::error!("metrics: the listener on {addr} stopped: {lost}");
    Err(anyhow!("the listener on {addr} stopped: {lost}"))
}

/// What the connections share.
struct Shared {
    source: Arc<Mutex<Source>>,
    reading: Arc<Semaphore>,
    open: Mutex<Open>,
}

/// Accepts until the listener fails for good (its error is returned).
async fn accept(listener: std::net::TcpListener, bound: usize) -> std::io::Error {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let shared = Arc::new(Shared {
        source: Arc::new(Mutex::new(Source::default())),
        reading: Arc::new(Semaphore::new(AT_ONCE)),
        open: Mutex::new(Open::default()),
    });
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => match accept_error(&e) {
                AcceptError::Lost => return e,
                AcceptError::OutOfFiles => {
                    // Make room: the oldest connection not being answered.
                    lock(&shared.open).evict();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                AcceptError::Transient => continue,
            },
        };
        let slot = lock(&shared.open).admit(bound);
        match slot {
            Some(slot) => {
                tokio::spawn(connection(stream, slot, shared.clone()));
            }
            // Every connection is being answered: this one waits no turn.
            None => drop(stream),
        }
    }
}

#[derive(Debug, PartialEq)]
enum AcceptError {
    /// The listening socket itself is gone or unusable.
    Lost,
    /// This process (or the system) is out of descriptors or memory.
    OutOfFiles,
    /// One connection failed before it was taken (reset, aborted…).
    Transient,
}

fn accept_error(e: &std::io::Error) -> AcceptError {
    use nix::libc;
    match e.raw_os_error() {
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EOPNOTSUPP | libc::EFAULT) => {
            AcceptError::Lost
        }
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => AcceptError::OutOfFiles,
        _ => AcceptError::Transient,
    }
}

/// How many connections may be open: [`MAX_CONNECTIONS`], fewer where the
/// descriptor limit would not leave room for the rest.
fn connection_bound(files: Option<u64>) -> usize {
    let room = files.map_or(MAX_CONNECTIONS, |n| {
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_sub(RESERVED_FILES)
    });
    room.clamp(1, MAX_CONNECTIONS)
}

/// Each connection holds a descriptor until it ends: the soft limit is
/// raised to the hard one, as servers do. Returns the limit now in force.
fn allow_more_files() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The open connections, oldest first.
#[derive(Default)]
struct Open {
    next: u64,
    slots: BTreeMap<u64, (oneshot::Sender<()>, Arc<AtomicBool>)>,
}

/// A connection's place among the open ones: its id, the signal that
/// closes it, and whether a scrape on it is being answered.
struct Slot {
    id: u64,
    close: oneshot::Receiver<()>,
    answering: Arc<AtomicBool>,
}

impl Open {
    /// A place for a new connection, making room where all are taken;
    /// `None` when every open connection is being answered.
    fn admit(&mut self, bound: usize) -> Option<Slot> {
        if self.slots.len() >= bound && !self.evict() {
            return None;
        }
        let (tx, close) = oneshot::channel();
        let answering = Arc::new(AtomicBool::new(false));
        let id = self.next;
        self.next += 1;
        self.slots.insert(id, (tx, answering.clone()));
        Some(Slot {
            id,
            close,
            answering,
        })
    }

    /// Closes the oldest connection not being answered: idle, sending its
    /// request's head, or writing an answer its client does not read.
    fn evict(&mut self) -> bool {
        let busy = self
            .slots
            .iter()
            .map(|(id, (_, a))| (*id, a.load(Ordering::SeqCst)));
        let Some(id) = victim(busy) else {
            return false;
        };
        if let Some((tx, _)) = self.slots.remove(&id) {
            let _ = tx.send(());
        }
        true
    }
}

/// The oldest of `(id, answering)` not being answered.
fn victim(open: impl IntoIterator<Item = (u64, bool)>) -> Option<u64> {
    open.into_iter()
        .filter(|(_, answering)| !answering)
        .map(|(id, _)| id)
        .min()
}

async fn connection(stream: tokio::net::TcpStream, slot: Slot, shared: Arc<Shared>) {
    let Slot {
        id,
        close,
        answering,
    } = slot;
    let io = hyper_util::rt::TokioIo::new(Timed::new(stream, STALL));
    let for_service = shared.clone();
    let service =
        hyper::service::service_fn(move |req| respond(req, for_service.clone(), answering.clone()));
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_BUF)
        // `Content-Type`, as scrapers and scripts have read it.
        .title_case_headers(true)
        .serve_connection(io, service);
    let conn = std::pin::pin!(conn);
    match futures_util::future::select(conn, close).await {
        futures_util::future::Either::Left((Err(e), _)) => {
            crate::debug!("metrics: a connection ended: {e}");
        }
        futures_util::future::Either::Left((Ok(()), _)) => {}
        // Evicted: its slot is already gone.
        futures_util::future::Either::Right(_) => return,
    }
    lock(&shared.open).slots.remove(&id);
}

/// What a request gets, by its method and path.
#[derive(Debug, PartialEq)]
enum Route {
    Metrics,
    Root,
    NotAllowed,
    NotFound,
}

fn route(method: &Method, path: &str) -> Route {
    let readable = method == Method::GET || method == Method::HEAD;
    match (readable, path) {
        (true, "/metrics" | "/metrics/") => Route::Metrics,
        (true, "/") => Route::Root,
        (false, "/metrics" | "/metrics/" | "/") => Route::NotAllowed,
        _ => Route::NotFound,
    }
}

type Answer = Response<Full<Bytes>>;

fn text(status: StatusCode, body: impl Into<Bytes>, content_type: &'static str) -> Answer {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

const PLAIN: &str = "text/plain; charset=utf-8";

async fn respond<B>(
    req: Request<B>,
    shared: Arc<Shared>,
    answering: Arc<AtomicBool>,
) -> Result<Answer, std::convert::Infallible> {
    Ok(match route(req.method(), req.uri().path()) {
        Route::Metrics => {
            let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
            let format = Format::accepted(accept);
            answering.store(true, Ordering::SeqCst);
            let figures = figures(&shared, format).await;
            answering.store(false, Ordering::SeqCst);
            match figures {
                Some(body) => text(StatusCode::OK, body, format.content_type()),
                None => text(StatusCode::SERVICE_UNAVAILABLE, "busy\n", PLAIN),
            }
        }
        Route::Root => text(StatusCode::OK, "claude-shim: metrics at /metrics\n", PLAIN),
        Route::NotAllowed => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n", PLAIN);
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
        Route::NotFound => text(StatusCode::NOT_FOUND, "not found\n", PLAIN),
    })
}

/// The figures as text, read on a thread of their own (the store and the
/// keeper answer blocking calls); `None` when [`AT_ONCE`] are being read.
async fn figures(shared: &Shared, format: Format) -> Option<String> {
    let permit = shared.reading.clone().try_acquire_owned().ok()?;
    let (tx, rx) = oneshot::channel();
    let source = shared.source.clone();
    std::thread::Builder::new()
        .name("metrics-scrape".into())
        .spawn(move || {
            // One scrape reads at a time; the others wait here.
            let snap = lock(&source).snapshot();
            let _ = tx.send(exposition::render(&snap, format));
            drop(permit);
        })
        .ok()?;
    rx.await.ok()
}

/// A connection's stream that fails once nothing was read or written on it
/// for `stall`, where hyper waits on it.
struct Timed {
    io: tokio::net::TcpStream,
    stall: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Timed {
    fn new(io: tokio::net::TcpStream, stall: Duration) -> Timed {
        Timed {
            io,
            stall,
            timer: Box::pin(tokio::time::sleep(stall)),
        }
    }

    fn moved(&mut self) {
        let at = tokio::time::Instant::now() + self.stall;
        self.timer.as_mut().reset(at);
    }

    /// Pending until the stall is over, then the error that ends it.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "nothing read or written for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Timed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.stalled(cx),
        }
    }
}

impl AsyncWrite for Timed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, data) {
            Poll::Ready(r) => {
                if r.as_ref().is_ok_and(|n| *n > 0) {
                    this.moved();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.stalled(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                if r.as_ref().is_ok_and(|n| *n > 0) {
                    this.moved();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.stalled(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending => this.stalled(cx),
            r => r,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_shutdown(cx) {
            Poll::Pending => this.stalled(cx),
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_gets_its_route() {
        let cases = [
            (Method::GET, "/metrics", Route::Metrics),
            (Method::HEAD, "/metrics/", Route::Metrics),
            (Method::GET, "/", Route::Root),
            (Method::POST, "/metrics", Route::NotAllowed),
            (Method::DELETE, "/", Route::NotAllowed),
            (Method::GET, "/metricsx", Route::NotFound),
            (Method::POST, "/other", Route::NotFound),
        ];
        for (method, path, want) in cases {
            assert_eq!(route(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn room_is_made_from_the_oldest_connection_not_answered() {
        assert_eq!(victim([(3, false), (1, true), (2, false)]), Some(2));
        assert_eq!(victim([(1, true), (2, true)]), None);
        assert_eq!(victim([]), None);
        let mut open = Open::default();
        let first = open.admit(2).expect("room");
        let second = open.admit(2).expect("room");
        second.answering.store(true, Ordering::SeqCst);
        let mut first_close = first.close;
        // Full: the first, idle, makes room; then both are answering.
        let third = open.admit(2).expect("room made");
        assert!(first_close.try_recv().is_ok(), "the oldest idle is closed");
        third.answering.store(true, Ordering::SeqCst);
        assert!(open.admit(2).is_none(), "all are being answered");
        assert_eq!(open.slots.len(), 2);
    }

    #[test]
    fn the_bound_leaves_descriptors_for_the_rest() {
        assert_eq!(connection_bound(None), MAX_CONNECTIONS);
        assert_eq!(connection_bound(Some(1 << 20)), MAX_CONNECTIONS);
        assert_eq!(connection_bound(Some(300)), 300 - RESERVED_FILES);
        assert_eq!(connection_bound(Some(40)), 1);
    }

    #[test]
    fn only_a_listener_gone_ends_the_accepting() {
        use nix::libc;
        let of = |n| accept_error(&std::io::Error::from_raw_os_error(n));
        assert_eq!(of(libc::EBADF), AcceptError::Lost);
        assert_eq!(of(libc::EINVAL), AcceptError::Lost);
        assert_eq!(of(libc::EMFILE), AcceptError::OutOfFiles);
        assert_eq!(of(libc::ENFILE), AcceptError::OutOfFiles);
        assert_eq!(of(libc::ECONNABORTED), AcceptError::Transient);
        assert_eq!(of(libc::EINTR), AcceptError::Transient);
    }
}
