//! The keeper's connections and their requests: each shim that connects
//! asks (a turn, its end, a release, a ready CLI, a store connection, the
//! status), and the answer comes from the pool, at once or once the
//! processes it waits for have exited.

use super::checkpoint::Checkpoints;
use super::pool::{ForTurn, Pool};
use super::store_pool::StorePool;
use crate::warm::protocol::{self, Miss, Reply, Request, Start};
use crate::warm::socket::same_user;
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::ExitStatus;
use std::time::Instant;

pub struct Server {
    pub pool: Pool,
    conns: HashMap<u64, Conn>,
    next_conn: u64,
    /// Our build: a shim of another makes us drain.
    build: String,
    /// When a shim last asked something, or a process last exited.
    pub last_activity: Instant,
    /// Store connections readied for the next turns.
    pub store_pool: StorePool,
    /// The store's WAL, folded after each turn (see `checkpoint`).
    pub checkpoints: Checkpoints,
}

struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    /// The entry lent to this connection.
    lent: Option<u64>,
    /// A request waiting for these entries to exit first.
    waiting: Option<(Vec<u64>, Request)>,
    closed: bool,
    /// How the process lent to it ended, once it has.
    ended: Option<ExitStatus>,
    /// It asked how its process ended, before it had.
    wants_end: bool,
    /// A CLI to start ready for the scope of its turn, once that is done.
    ready: Option<(String, Start)>,
    /// A turn waiting for its conversation's CLI, still lent for the turn
    /// before, until the deadline.
    queued: Option<(u64, Request, Instant)>,
}

/// How long a turn waits for its conversation's live CLI to be given back
/// by the turn before. That turn has its result (this one continues from
/// it): what is left is its shim's last steps, milliseconds — far sooner
/// than a new CLI could start (0.4–2 s), and a new one for the same session
/// would be its second writer. Past this the turn runs cold, as before.
const LENT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

fn ended(status: ExitStatus) -> Reply {
    use std::os::unix::process::ExitStatusExt;
    Reply::Ended {
        code: status.code(),
        signal: status.signal(),
    }
}

impl Server {
    pub fn new(build: String, pool: Pool) -> Server {
        Server {
            pool,
            conns: HashMap::new(),
            next_conn: 0,
            build,
            last_activity: Instant::now(),
            store_pool: Default::default(),
            checkpoints: Default::default(),
        }
    }

    /// Nothing held, nobody connected.
    pub fn is_idle(&self) -> bool {
        self.pool.is_empty() && self.conns.is_empty()
    }

    pub fn tick(&mut self, listener: &UnixListener) {
        self.poll(listener);
        self.accept(listener);
        self.read_all();
        self.pool.watch_idle();
        self.reap();
        self.serve_queued();
        self.store_pool.expire();
        self.pool.expire();
        self.pool.trim();
        self.conns.retain(|_, c| !c.closed);
    }

    /// Wait for something to do: a connection, a request, an idle process
    /// stirring, or the next timer tick.
    fn poll(&self, listener: &UnixListener) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        for c in self.conns.values() {
            fds.push(PollFd::new(c.stream.as_fd(), PollFlags::POLLIN));
        }
        for fd in self.pool.watched() {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
        }
        let _ = poll(&mut fds, PollTimeout::from(200u16));
    }

    fn accept(&mut self, listener: &UnixListener) {
        while let Ok((stream, _)) = listener.accept() {
            // The kernel says who connected: only our own user is lent a
            // live CLI (its pipes carry the turns, API keys included).
            if !same_user(&stream) {
                crate::error!("keeper: refused a connection from another user");
                continue;
            }
            self.connected(stream);
        }
    }

    /// A shim connected on `stream`: its connection's number.
    pub fn connected(&mut self, stream: UnixStream) -> u64 {
        let _ = stream.set_nonblocking(true);
        self.next_conn += 1;
        self.conns.insert(
            self.next_conn,
            Conn {
                stream,
                buf: Vec::new(),
                lent: None,
                waiting: None,
                closed: false,
                ended: None,
                wants_end: false,
                ready: None,
                queued: None,
            },
        );
        self.last_activity = Instant::now();
        self.next_conn
    }

    /// Every connection's requests, oldest connection first: a shim's last
    /// words (its turn's `Done`, not waited for) come before the turn of
    /// the shim its caller started next.
    fn read_all(&mut self) {
        let mut ids: Vec<u64> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.read_conn(id);
        }
    }

    fn read_conn(&mut self, id: u64) {
        let mut chunk = [0u8; 16 << 10];
        // What it wrote before it hung up is handled first (a `Done`).
        let mut gone = false;
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            match (&c.stream).read(&mut chunk) {
                Ok(0) => {
                    gone = true;
                    break;
                }
                Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    gone = true;
                    break;
                }
            }
        }
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            let line_end = match (&c.waiting, &c.queued) {
                (None, None) => memchr::memchr(b'\n', &c.buf),
                _ => None,
            };
            let Some(nl) = line_end else {
                if gone {
                    self.hang_up(id);
                }
                return;
            };
            let line: Vec<u8> = c.buf.drain(..=nl).collect();
            self.last_activity = Instant::now();
            match serde_json::from_slice::<Request>(&line) {
                Ok(req) => self.handle(id, req),
                Err(_) => self.miss(id, Miss::BadRequest),
            }
        }
    }

    /// The connection closed: a process still lent to it was abandoned
    /// mid-turn (its caller died, as a proxy's timeout kills it); see
    /// [`Pool::abandon`].
    fn hang_up(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.closed = true;
        c.queued = None;
        if let Some(entry) = c.lent.take() {
            self.pool.abandon(entry);
        }
        // Its writes are done (a shim hangs up as it exits).
        self.checkpoints.nudge();
    }

    fn reply(&mut self, id: u64, reply: &Reply, fds: &[RawFd]) {
        if let Some(c) = self.conns.get_mut(&id) {
            let _ = c.stream.set_nonblocking(false);
            if protocol::send(&c.stream, reply, fds).is_err() {
                c.closed = true;
            }
            let _ = c.stream.set_nonblocking(true);
        }
    }

    fn miss(&mut self, id: u64, why: Miss) {
        *self
            .pool
            .counters
            .misses
            .entry(why.code().to_owned())
            .or_default() += 1;
        self.reply(id, &Reply::Miss { why }, &[]);
    }

    pub fn handle(&mut self, id: u64, req: Request) {
        match req {
            Request::Hello { build } => {
                if build != self.build {
                    // Another build of the shim: its processes would be
                    // judged by other rules. Drain, and let it start anew.
                    self.pool.drain();
                }
                let reply = Reply::Hello {
                    build: self.build.clone(),
                    pid: std::process::id(),
                };
                self.reply(id, &reply, &[]);
            }
            Request::Turn { .. } => self.turn(id, req),
            Request::Store { build, .. } if build != self.build => {
                self.pool.drain();
                self.miss(id, Miss::OtherBuild);
            }
            Request::Store { url, .. } => match self.store_pool.take(&url) {
                Some(ready) => {
                    let reply = Reply::Store {
                        answer: hex::encode(&ready.answer),
                        unix: ready.unix,
                    };
                    // Ours is closed once sent: the connection is the turn's.
                    self.reply(id, &reply, &[ready.socket.as_raw_fd()]);
                }
                None => self.miss(id, Miss::NoStoreConnection),
            },
            Request::Ready { key } => match self.pool.reserve_ready(&key) {
                Some(session) => self.reply(id, &Reply::Ready { session }, &[]),
                None => self.miss(id, Miss::NoReadyCli),
            },
            Request::Ended => {
                let Some(c) = self.conns.get_mut(&id) else {
                    return;
                };
                match (c.ended, c.lent) {
                    (Some(status), _) => self.reply(id, &ended(status), &[]),
                    (None, Some(_)) => c.wants_end = true,
                    (None, None) => {
                        let unknown = Reply::Ended {
                            code: None,
                            signal: None,
                        };
                        self.reply(id, &unknown, &[]);
                    }
                }
            }
            Request::Done {
                healthy,
                head,
                file_size,
                key,
                at_once,
            } => {
                let done_key = key.clone();
                let lent = self.conns.get_mut(&id).and_then(|c| c.lent.take());
                let ready = self.conns.get_mut(&id).and_then(|c| c.ready.take());
                if let Some(entry) = lent {
                    let back = (healthy && !at_once, at_once);
                    self.pool.give_back(entry, back, head, file_size, key);
                }
                self.reply(id, &Reply::Ok, &[]);
                // It starts from the files as they are now (the turn's own
                // first start may have written some): the key sent with Done.
                if let Some((key, start)) = ready {
                    self.pool.start_ready(done_key.unwrap_or(key), &start);
                }
            }
            // The asker holds the session's lease: end it gracefully.
            Request::Release { ref session } => match self.pool.release(session) {
                Ok(idle) => self.stop_then(id, idle, Request::Status, true),
                Err(why) => self.miss(id, why),
            },
            Request::Status => {
                let status = self.pool.status(&self.build);
                self.reply(id, &Reply::Status(status), &[]);
            }
            Request::Stop { ref session } => {
                let ids = self.pool.idle(session.as_deref());
                if session.is_none() {
                    self.pool.draining = true;
                }
                self.stop_then(id, ids, Request::Status, false);
            }
        }
    }

    fn turn(&mut self, conn: u64, req: Request) {
        let until = Instant::now() + LENT_PATIENCE;
        self.turn_until(conn, req, until)
    }

    /// Turns that waited for a lent CLI: served once it is back (or gone),
    /// or run cold past their deadline.
    pub fn serve_queued(&mut self) {
        let due: Vec<u64> = self
            .conns
            .iter()
            .filter_map(|(id, c)| {
                let (entry, _, until) = c.queued.as_ref()?;
                (!self.pool.is_lent(*entry) || Instant::now() >= *until).then_some(*id)
            })
            .collect();
        for conn in due {
            let Some((_, req, until)) = self.conns.get_mut(&conn).and_then(|c| c.queued.take())
            else {
                continue;
            };
            self.turn_until(conn, req, until);
            self.read_conn(conn);
        }
    }

    fn turn_until(&mut self, conn: u64, req: Request, until: Instant) {
        if let Request::Turn {
            key,
            ready: Some(r),
            ..
        } = &req
        {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.ready = Some((key.clone(), (**r).clone()));
            }
        }
        match self.pool.turn(conn, &req) {
            ForTurn::Lent { id, reply, fds } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.lent = Some(id);
                }
                self.reply(conn, &reply, &fds);
            }
            ForTurn::EndFirst(id) => self.stop_then(conn, vec![id], req, true),
            ForTurn::Finishing(id) if Instant::now() < until => {
                crate::debug!("keeper: a turn waits for its live CLI, still lent");
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.queued = Some((id, req, until));
                }
            }
            ForTurn::Finishing(_) => self.miss(conn, Miss::Busy),
            ForTurn::Miss(why) => self.miss(conn, why),
        }
    }

    /// End `ids`, then answer `then` (a `Status` answers `Ok`).
    fn stop_then(&mut self, conn: u64, ids: Vec<u64>, then: Request, graceful: bool) {
        let pending = self.pool.end(ids, graceful);
        if pending.is_empty() {
            self.answer(conn, then);
        } else if let Some(c) = self.conns.get_mut(&conn) {
            c.waiting = Some((pending, then));
        }
    }

    fn answer(&mut self, conn: u64, then: Request) {
        match then {
            Request::Status => self.reply(conn, &Reply::Ok, &[]),
            other => self.handle(conn, other),
        }
    }

    /// Processes that exited: the connections they were lent to learn how,
    /// and requests that waited for them are answered.
    pub fn reap(&mut self) {
        let reaped = self.pool.reap();
        for (conn, status) in reaped.ended {
            let wants = self.conns.get_mut(&conn).map(|c| {
                c.ended = Some(status);
                std::mem::take(&mut c.wants_end)
            });
            if wants == Some(true) {
                self.reply(conn, &ended(status), &[]);
            }
        }
        for conn in reaped.freed {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.lent = None;
            }
        }
        if reaped.any {
            self.last_activity = Instant::now();
        }
        // Requests that waited for exits.
        let ready: Vec<(u64, Request)> = self
            .conns
            .iter_mut()
            .filter_map(|(id, c)| {
                let (ids, _) = c.waiting.as_ref()?;
                if ids.iter().any(|&e| self.pool.holds(e)) {
                    return None;
                }
                c.waiting.take().map(|(_, r)| (*id, r))
            })
            .collect();
        for (conn, then) in ready {
            self.answer(conn, then);
            self.read_conn(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::Limits;
    use super::super::fake::{turn, Fake};
    use super::*;
    use std::os::fd::OwnedFd;
    use std::time::Duration;

    fn server(fake: &Fake) -> Server {
        let limits = Limits {
            max: 4,
            memory: 1 << 40,
            ttl: Duration::from_secs(600),
        };
        Server::new(
            "build".into(),
            Pool::new(limits, None, Box::new(fake.clone())),
        )
    }

    /// A shim's end of a new connection.
    struct Shim {
        id: u64,
        stream: UnixStream,
        buf: Vec<u8>,
    }

    fn connect(s: &mut Server) -> Shim {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let id = s.connected(theirs);
        Shim {
            id,
            stream: ours,
            buf: Vec::new(),
        }
    }

    impl Shim {
        fn ask(&mut self, s: &mut Server, req: Request) -> (Reply, Vec<OwnedFd>) {
            s.handle(self.id, req);
            self.answer().expect("an answer at once")
        }

        /// The answer waiting, if there is one.
        fn answer(&mut self) -> Option<(Reply, Vec<OwnedFd>)> {
            self.stream.set_nonblocking(true).unwrap();
            match protocol::recv(&self.stream, &mut self.buf) {
                Ok(got) => Some(got),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn done(healthy: bool) -> Request {
        Request::Done {
            healthy,
            head: None,
            file_size: None,
            key: None,
            at_once: false,
        }
    }

    fn release(session: &str) -> Request {
        Request::Release {
            session: session.into(),
        }
    }

    #[test]
    fn a_release_while_lent_is_refused_and_the_cli_is_lent_once() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let (mut a, mut b, mut c) = (connect(&mut s), connect(&mut s), connect(&mut s));
        let (lent, pipes) = a.ask(&mut s, turn("S"));
        assert!(matches!(lent, Reply::Lent { fresh: true, .. }), "{lent:?}");
        assert_eq!(pipes.len(), 3);
        let kid = fake.kid("S");
        // Released mid-turn: refused, and the CLI keeps its stdin.
        assert_eq!(
            b.ask(&mut s, release("S")).0,
            Reply::Miss { why: Miss::InUse }
        );
        assert!(!kid.stdin_closed() && !kid.killed());
        // Another turn of the conversation meanwhile: not lent twice; past
        // its patience it runs cold, within it it waits for the CLI.
        s.turn_until(c.id, turn("S"), Instant::now());
        assert_eq!(c.answer().unwrap().0, Reply::Miss { why: Miss::Busy });
        s.handle(c.id, turn("S"));
        s.serve_queued();
        assert!(c.answer().is_none());
        assert_eq!(fake.kids().len(), 1);
        // The turn ends: the CLI is back, and serves the waiting turn.
        assert_eq!(a.ask(&mut s, done(true)).0, Reply::Ok);
        drop(pipes);
        s.serve_queued();
        let (lent, pipes) = c.answer().expect("the waiting turn is served");
        assert!(
            matches!(lent, Reply::Lent { fresh: false, turns: 1, pid, .. } if pid == kid.pid() as i32),
            "{lent:?}"
        );
        assert_eq!(c.ask(&mut s, done(true)).0, Reply::Ok);
        drop(pipes);
        // Released now: its stdin closes, and the answer waits for its exit.
        s.handle(b.id, release("S"));
        assert!(kid.stdin_closed());
        assert!(b.answer().is_none());
        s.reap();
        assert!(kid.exited());
        assert_eq!(b.answer().unwrap().0, Reply::Ok);
        assert!(s.pool.is_empty());
    }

    #[test]
    fn a_turn_that_left_background_work_ends_its_cli_at_once() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let (_, pipes) = a.ask(&mut s, turn("S"));
        let at_once = Request::Done {
            healthy: true,
            head: None,
            file_size: None,
            key: None,
            at_once: true,
        };
        assert_eq!(a.ask(&mut s, at_once).0, Reply::Ok);
        drop(pipes);
        assert!(
            fake.kid("S").killed(),
            "killed, not left to its input's end"
        );
        s.reap();
        assert!(s.pool.is_empty());
    }

    #[test]
    fn a_turn_given_back_unhealthy_ends_its_cli() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let (_, pipes) = a.ask(&mut s, turn("S"));
        assert_eq!(a.ask(&mut s, done(false)).0, Reply::Ok);
        drop(pipes);
        s.reap();
        assert!(fake.kid("S").exited() && s.pool.is_empty());
        let _ = a.ask(&mut s, turn("S"));
        assert_eq!(fake.kids().len(), 2, "a new CLI");
    }

    #[test]
    fn a_shim_hanging_up_has_the_wal_folded_once_not_while_it_runs() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let (tx, rx) = std::sync::mpsc::channel();
        s.checkpoints = Checkpoints::to(tx);
        let mut a = connect(&mut s);
        let (_, pipes) = a.ask(&mut s, turn("S"));
        assert_eq!(a.ask(&mut s, done(true)).0, Reply::Ok);
        drop(pipes);
        // The turn's shim still writes (its run, the lease): not yet.
        s.read_conn(a.id);
        assert!(rx.try_recv().is_err());
        let id = a.id;
        drop(a);
        s.read_conn(id);
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_done_not_waited_for_gives_the_cli_back_before_the_next_turn() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let (_, pipes) = a.ask(&mut s, turn("S"));
        drop(pipes);
        // The shim says it is done and exits at once; its caller's next
        // turn is there before the keeper reads either.
        protocol::send(&a.stream, &done(true), &[]).unwrap();
        drop(a);
        let mut b = connect(&mut s);
        protocol::send(&b.stream, &turn("S"), &[]).unwrap();
        s.read_all();
        let kid = fake.kid("S");
        assert!(!kid.killed() && !kid.stdin_closed());
        let (lent, _pipes) = b.answer().expect("the turn's answer");
        assert!(
            matches!(lent, Reply::Lent { fresh: false, turns: 1, pid, .. } if pid == kid.pid() as i32),
            "{lent:?}"
        );
        assert_eq!(fake.kids().len(), 1);
    }

    #[test]
    fn a_turn_behind_another_builds_hello_is_lent_nothing() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        // A shim sends its turn right behind its hello (`Keeper::connect_for_turn`).
        let hello = Request::Hello {
            build: "another".into(),
        };
        protocol::send(&a.stream, &hello, &[]).unwrap();
        protocol::send(&a.stream, &turn("S"), &[]).unwrap();
        s.read_all();
        assert!(matches!(a.answer().unwrap().0, Reply::Hello { .. }));
        assert_eq!(
            a.answer().unwrap().0,
            Reply::Miss {
                why: Miss::Draining
            }
        );
        assert!(fake.kids().is_empty());
    }

    #[test]
    fn a_caller_gone_mid_turn_kills_its_cli() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let (_, pipes) = a.ask(&mut s, turn("S"));
        let id = a.id;
        drop(a);
        s.read_conn(id);
        assert!(fake.kid("S").killed());
        drop(pipes);
        s.reap();
        assert!(s.pool.is_empty());
    }

    #[test]
    fn a_cli_dying_mid_turn_says_how() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let _pipes = a.ask(&mut s, turn("S")).1;
        // Asked before it ended: the answer waits for its end.
        s.handle(a.id, Request::Ended);
        assert!(a.answer().is_none());
        fake.kid("S").exit(3);
        s.reap();
        let ended = Reply::Ended {
            code: Some(3),
            signal: None,
        };
        assert_eq!(a.answer().unwrap().0, ended);
        assert_eq!(a.ask(&mut s, Request::Ended).0, ended);
        assert!(s.pool.is_empty());
    }

    #[test]
    fn a_ready_cli_started_after_a_turn_is_reserved_once() {
        let fake = Fake::default();
        let mut s = server(&fake);
        let mut a = connect(&mut s);
        let mut with_ready = turn("S");
        if let Request::Turn { ready, .. } = &mut with_ready {
            let Request::Turn { start, .. } = turn("R") else {
                unreachable!()
            };
            *ready = start;
        }
        let (_, pipes) = a.ask(&mut s, with_ready);
        assert_eq!(fake.kids().len(), 1, "ready only once the turn is done");
        assert_eq!(a.ask(&mut s, done(true)).0, Reply::Ok);
        drop(pipes);
        assert_eq!(fake.kids().len(), 2);
        let ask = || Request::Ready { key: "k".into() };
        assert_eq!(
            a.ask(&mut s, ask()).0,
            Reply::Ready {
                session: "R".into()
            }
        );
        assert_eq!(
            a.ask(&mut s, ask()).0,
            Reply::Miss {
                why: Miss::NoReadyCli
            }
        );
    }
}
