//! Connections readied ahead of a turn. Connecting starts a backend on the
//! server (~2 ms on loopback), and a new backend's first statements load its
//! catalog caches (~1.5 ms more): together most of what a shared store adds
//! to a turn. So the keeper (a long-lived process of the same user) connects
//! ahead, has the backend run statements on the tables a turn uses, and
//! hands the socket to the next turn that asks (SCM_RIGHTS). The turn's
//! client starts on it as on a connection of its own: it reads the server's
//! start-up answer the keeper received, and its own start-up message never
//! reaches the server. The keeper keeps no copy, so the connection is the
//! turn's alone and ends with it, its leases (session advisory locks) with it.

use super::conn::{config, Io, Patience, Pg};
use super::nss;
use super::open::Schema;
use anyhow::{bail, Context, Result};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::NoTls;

/// How long a readied connection is offered: the keeper drops it after.
pub const OFFERED_FOR: Duration = Duration::from_secs(50);
/// Readying one may take at most this (the keeper's time, not a turn's).
const READYING: Duration = Duration::from_secs(5);

/// A connection the keeper readied.
pub struct Ready {
    pub socket: OwnedFd,
    /// The server's answer to the start-up, as a client that just
    /// authenticated reads it (see [`answer_of`]).
    pub answer: Vec<u8>,
    pub unix: bool,
    pub made: Instant,
}

impl Ready {
    /// Still worth handing over: young, and the server has said nothing
    /// since (a backend ended by the server, or a server gone, leaves a
    /// message or an end to read).
    pub fn fresh(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        if self.made.elapsed() >= OFFERED_FOR {
            return false;
        }
        let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
        matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
    }
}

/// Connect to `url` as a turn would (the schema brought up to date if it
/// is not), and run a turn's statements on made-up rows, rolled back (see
/// `Pg::warm_up`); the socket and the start-up answer, to hand over.
pub fn ready(url: &str) -> Result<Ready> {
    let config = config(url, Patience::Turn)?;
    let io = Io::new(Patience::Each(READYING))?;
    nss::builtin_services_only();
    let opened = io.rt.block_on(async {
        tokio::time::timeout(READYING, async {
            let (stream, unix) = open(&config).await?;
            let socket = match &stream {
                Socket::Tcp(s) => s.as_fd().try_clone_to_owned()?,
                Socket::Unix(s) => s.as_fd().try_clone_to_owned()?,
            };
            let read = Arc::new(Mutex::new(Vec::new()));
            let recorded = Stream {
                inner: stream,
                record: Some(read.clone()),
                answer: Vec::new(),
                answered: 0,
                start_up: StartUp::Dropped,
            };
            let (client, connection) = config
                .connect_raw(recorded, NoTls)
                .await
                .context("connecting")?;
            let answer = answer_of(&read.lock().unwrap_or_else(|p| p.into_inner()))?;
            Ok::<_, anyhow::Error>((client, connection, socket, answer, unix))
        })
        .await
        .context("connecting timed out")?
    });
    let (client, connection, socket, answer, unix) = opened?;
    let mut pg = Pg::started(io, client, connection, Schema::Migrate)?;
    pg.warm_up()?;
    // Dropped without a goodbye: the connection's task ends with the
    // runtime, before the client's `Terminate` could be sent, and our copy
    // of the socket keeps the backend.
    drop(pg);
    Ok(Ready {
        socket,
        answer,
        unix,
        made: Instant::now(),
    })
}

/// A readied connection as a turn receives it.
pub struct Handed {
    pub socket: OwnedFd,
    pub answer: Vec<u8>,
    pub unix: bool,
}

impl Handed {
    /// The stream a client starts on (inside the store's runtime).
    fn stream(self) -> io::Result<Stream> {
        let socket = match self.unix {
            true => {
                let s = std::os::unix::net::UnixStream::from(self.socket);
                s.set_nonblocking(true)?;
                Socket::Unix(tokio::net::UnixStream::from_std(s)?)
            }
            false => {
                let s = std::net::TcpStream::from(self.socket);
                s.set_nonblocking(true)?;
                Socket::Tcp(tokio::net::TcpStream::from_std(s)?)
            }
        };
        Ok(Stream {
            inner: socket,
            record: None,
            answer: self.answer,
            answered: 0,
            start_up: StartUp::Header(Vec::new()),
        })
    }
}

impl Pg {
    /// A turn's store on a connection the keeper readied (see [`ready`]):
    /// no connecting, and its backend has run a turn's statements already.
    pub fn adopt(url: &str, ready: Handed, schema: Schema) -> Result<Pg> {
        let config = config(url, Patience::Turn)?;
        let mut io = Io::new(Patience::Turn)?;
        let (client, connection) = {
            let _in_rt = io.rt.enter();
            let stream = ready.stream()?;
            io.block_alone(
                "adopting a readied connection",
                config.connect_raw(stream, NoTls),
            )?
        };
        Pg::started(io, client, connection, schema)
    }
}

/// What a client reads after its start-up message, from what the keeper's
/// client read: `AuthenticationOk`, then the server's parameters, its
/// backend key and ready-for-query (its authentication exchange dropped: it
/// is done).
pub fn answer_of(read: &[u8]) -> Result<Vec<u8>> {
    let mut answer = vec![b'R', 0, 0, 0, 8, 0, 0, 0, 0];
    let mut rest = read;
    loop {
        let (kind, body_len) = match rest {
            [k, a, b, c, d, ..] => (*k, u32::from_be_bytes([*a, *b, *c, *d]) as usize),
            _ => bail!("the server's start-up answer ended early"),
        };
        if body_len < 4 || rest.len() < 1 + body_len {
            bail!("the server's start-up answer ended early");
        }
        let (message, next) = rest.split_at(1 + body_len);
        match kind {
            b'S' | b'K' => answer.extend_from_slice(message),
            b'Z' => {
                answer.extend_from_slice(message);
                return Ok(answer);
            }
            b'E' => bail!("the server refused the start-up"),
            _ => {}
        }
        rest = next;
    }
}

enum Socket {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

/// The socket of `config`'s server: one host, by TCP or a Unix socket (a
/// list of hosts is left to the turn's own connecting).
async fn open(config: &tokio_postgres::Config) -> Result<(Socket, bool)> {
    let (hosts, ports, addrs) = (
        config.get_hosts(),
        config.get_ports(),
        config.get_hostaddrs(),
    );
    if hosts.len() > 1 || ports.len() > 1 || addrs.len() > 1 {
        bail!("the store URL names several servers");
    }
    let port = ports.first().copied().unwrap_or(5432);
    match (hosts.first(), addrs.first()) {
        (_, Some(ip)) => tcp((*ip, port)).await,
        (Some(Host::Tcp(name)), None) => tcp((name.as_str(), port)).await,
        (Some(Host::Unix(dir)), None) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let s = tokio::net::UnixStream::connect(path).await?;
            Ok((Socket::Unix(s), true))
        }
        (None, None) => bail!("the store URL names no server"),
    }
}

/// A TCP connection set up as the client library sets up its own.
async fn tcp(to: impl tokio::net::ToSocketAddrs) -> Result<(Socket, bool)> {
    use nix::sys::socket::{setsockopt, sockopt};
    let s = tokio::net::TcpStream::connect(to).await?;
    s.set_nodelay(true)?;
    let _ = setsockopt(&s, sockopt::KeepAlive, &true);
    let _ = setsockopt(&s, sockopt::TcpKeepIdle, &30);
    #[cfg(target_os = "linux")]
    let _ = setsockopt(
        &s,
        sockopt::TcpUserTimeout,
        &(super::conn::TURN_BUDGET.as_millis() as u32),
    );
    Ok((Socket::Tcp(s), false))
}

/// The client's side of a connection being readied or handed over: what it
/// reads may be recorded (the keeper keeps the start-up answer) or begin with
/// a replayed answer (a turn reads the keeper's), and the start-up message it
/// writes may be dropped (the server had one already).
pub(super) struct Stream {
    inner: Socket,
    record: Option<Arc<Mutex<Vec<u8>>>>,
    answer: Vec<u8>,
    answered: usize,
    start_up: StartUp,
}

/// How much of the client's start-up message is still to be dropped.
enum StartUp {
    /// Its 4-byte length, as far as it came.
    Header(Vec<u8>),
    Body(usize),
    Dropped,
}

impl StartUp {
    /// Drop what of `buf` belongs to the start-up message; how much did.
    fn consume(&mut self, buf: &[u8]) -> usize {
        let mut used = 0;
        while used < buf.len() {
            match self {
                StartUp::Header(h) => {
                    let take = (4 - h.len()).min(buf.len() - used);
                    h.extend_from_slice(&buf[used..used + take]);
                    used += take;
                    if h.len() == 4 {
                        let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                        *self = StartUp::Body(len.saturating_sub(4));
                    }
                }
                StartUp::Body(left) => {
                    let take = (*left).min(buf.len() - used);
                    used += take;
                    *left -= take;
                }
                StartUp::Dropped => break,
            }
            if matches!(self, StartUp::Body(0)) {
                *self = StartUp::Dropped;
            }
        }
        used
    }
}

macro_rules! socket_io {
    ($socket:expr, |$s:ident| $e:expr) => {
        match $socket {
            Socket::Tcp($s) => $e,
            Socket::Unix($s) => $e,
        }
    };
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        socket_io!(self.get_mut(), |s| Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        socket_io!(self.get_mut(), |s| Pin::new(s).poll_write(cx, buf))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        socket_io!(self.get_mut(), |s| Pin::new(s).poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        socket_io!(self.get_mut(), |s| Pin::new(s).poll_shutdown(cx))
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.answered < me.answer.len() {
            let n = (me.answer.len() - me.answered).min(buf.remaining());
            buf.put_slice(&me.answer[me.answered..me.answered + n]);
            me.answered += n;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let out = Pin::new(&mut me.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(record)) = (&out, &me.record) {
            let mut read = record.lock().unwrap_or_else(|p| p.into_inner());
            read.extend_from_slice(&buf.filled()[before..]);
        }
        out
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let dropped = me.start_up.consume(buf);
        if dropped > 0 {
            return Poll::Ready(Ok(dropped));
        }
        Pin::new(&mut me.inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn the_answer_keeps_parameters_key_and_ready_and_drops_authentication() {
        let sasl = message(b'R', b"\0\0\0\x0aSCRAM-SHA-256\0\0");
        let ok = message(b'R', &[0, 0, 0, 0]);
        let param = message(b'S', b"server_version\x0015.8\0");
        let key = message(b'K', &[0, 0, 0, 7, 1, 2, 3, 4]);
        let ready = message(b'Z', b"I");
        let read = [sasl, ok.clone(), param.clone(), key.clone(), ready.clone()].concat();
        let want = [ok, param, key, ready].concat();
        assert_eq!(answer_of(&read).unwrap(), want);
        // Nothing past ready-for-query, and a cut answer is no answer.
        assert_eq!(
            answer_of(&[read.clone(), b"junk".to_vec()].concat()).unwrap(),
            want
        );
        assert!(answer_of(&read[..read.len() - 2]).is_err());
        assert!(answer_of(&message(b'E', b"SFATAL\0\0")).is_err());
    }

    #[test]
    fn the_start_up_message_is_dropped_in_whatever_pieces_it_comes() {
        let start_up = [&12u32.to_be_bytes()[..], &[0, 3, 0, 0, b'u', 0, b'x', 0]].concat();
        let query = b"Qselect".to_vec();
        for cut in 0..=start_up.len() {
            let mut s = StartUp::Header(Vec::new());
            let (a, b) = start_up.split_at(cut);
            let mut rest = [b, &query[..]].concat();
            assert_eq!(s.consume(a), a.len());
            let n = s.consume(&rest);
            assert_eq!(n, b.len(), "cut at {cut}");
            rest.drain(..n);
            assert_eq!(rest, query);
            assert_eq!(s.consume(&rest), 0);
        }
    }
}
