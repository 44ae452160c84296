//! Copy the child's stdout/stderr to ours byte-exactly as bytes arrive, with
//! an optional hold: while a resume attempt is unproven, output is kept back
//! so a refused resume can be discarded and rerun without the caller seeing it.

use super::seal::{Piece, Sealer};
use super::watch::Watch;
use crate::events::Event;
use crate::observe::Observer;
use crate::platform::Spliced;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex};

const CHUNK: usize = 128 << 10;
/// Past this much held output the attempt is committed anyway (memory bound).
const HOLD_CAP: usize = 8 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out = 1,
    Err = 2,
}

/// Held output of both streams, in arrival order per stream.
#[derive(Default)]
pub struct Hold {
    committed: bool,
    /// Nothing more reaches the caller (a child being replaced).
    muted: bool,
    out: Vec<u8>,
    err: Vec<u8>,
    /// Opens the stdin forwarder once the run is committed; dropped on
    /// discard so a retried run gets the caller's later input instead.
    gate: Option<std::sync::mpsc::Sender<()>>,
}

pub type SharedHold = Arc<Mutex<Hold>>;

impl Hold {
    /// A hold (or, with `hold` false, a pass-through) and the gate the stdin
    /// forwarder waits on.
    pub fn new(hold: bool) -> (SharedHold, std::sync::mpsc::Receiver<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = if hold {
            Some(tx)
        } else {
            let _ = tx.send(());
            None
        };
        let h = Hold {
            committed: !hold,
            gate,
            ..Default::default()
        };
        (Arc::new(Mutex::new(h)), rx)
    }
}

fn lock(hold: &SharedHold) -> std::sync::MutexGuard<'_, Hold> {
    hold.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether anything reached the caller yet.
pub fn released(hold: &SharedHold) -> bool {
    lock(hold).committed
}

/// Write out everything held (stderr first: it was the CLI's notice) and pass
/// later output straight through.
pub fn commit(hold: &SharedHold) {
    let mut h = lock(hold);
    if h.committed {
        return;
    }
    h.committed = true;
    if let Some(gate) = h.gate.take() {
        let _ = gate.send(());
    }
    let (out, err) = (std::mem::take(&mut h.out), std::mem::take(&mut h.err));
    if h.muted {
        return;
    }
    // Written under the lock so the other stream cannot overtake its own backlog.
    let _ = write_all(Stream::Err, &err);
    let _ = write_all(Stream::Out, &out);
}

/// Drop whatever is held; the attempt is being retried.
pub fn discard(hold: &SharedHold) {
    let mut h = lock(hold);
    h.out.clear();
    h.err.clear();
    h.gate = None;
}

/// From now on nothing of this child reaches the caller.
pub fn mute(hold: &SharedHold) {
    let mut h = lock(hold);
    h.muted = true;
    h.out.clear();
    h.err.clear();
}

/// The child's first lines that answer control requests the shim watches:
/// answers a caller already had (from another child, or from the shim) are
/// dropped; others pass; each is told to `heard`.
#[derive(Clone, Default)]
pub struct Answers {
    /// Request ids whose answers are dropped from stdout.
    pub drop: Vec<String>,
    /// Request ids whose answers pass as they are.
    pub keep: Vec<String>,
    /// Told each watched answer: the child's pid and the line.
    pub heard: Option<Heard>,
}

/// Told a watched answer: the child's pid and the line.
pub type Heard = Arc<dyn Fn(i32, &[u8]) + Send + Sync>;

/// What reads the bytes on their way: the observer (stdout), the turn's
/// watch, and the answers to watch for.
#[derive(Default)]
pub struct Tap {
    pub observer: Option<Observer>,
    pub watch: Option<Arc<dyn Watch>>,
    pub answers: Answers,
    /// The child's pid (for `answers.heard`).
    pub pid: i32,
    pub proof: super::watch::Proof,
    /// Stream-json in, the caller's format out (line by line).
    pub render: Option<crate::runner::render::Render>,
    /// Results get the call's own cost figures (json and stream-json: whole
    /// lines are passed, each as soon as it is complete).
    pub own_cost: Option<crate::cost::Own>,
    /// The caller reads stream-json: the end of the reply is held until the
    /// watch has recorded the turn (`runner::seal`).
    pub seal: bool,
}

/// Copy `from` to our fd `to` until EOF. When the caller closes our end
/// (EPIPE) stop reading, so the child meets the closed pipe as it would have
/// without us. Returns the observer fed with every byte read.
pub fn copy(
    mut from: impl Read + AsFd,
    to: Stream,
    hold: SharedHold,
    mut tap: Tap,
) -> Option<Observer> {
    // stderr carries little: a small buffer spares a page fault per 4 KiB.
    let mut buf = vec![
        0u8;
        match to {
            Stream::Out => CHUNK,
            Stream::Err => 16 << 10,
        }
    ];
    let mut may_splice = true;
    let mut filter = ResponseFilter::new(std::mem::take(&mut tap.answers), tap.pid);
    if let Some(mut render) = tap.render.take() {
        if let Some(own) = tap.own_cost.take() {
            render.own_cost = Some(own);
        }
        return rendered(from, to, hold, tap, render);
    }
    let mut lines = tap.own_cost.take().map(Lines::new);
    let mut sealer = tap.seal.then(Sealer::default);
    loop {
        // Nothing left to hold, observe or filter: move the bytes in the kernel.
        let wants = tap.observer.as_ref().is_some_and(Observer::wants_bytes)
            || lines.is_some()
            || sealer.is_some();
        if may_splice && released(&hold) && !wants && filter.done() && !lock(&hold).muted {
            // SAFETY: fds 1 and 2 stay open for the life of the process.
            let out = unsafe { BorrowedFd::borrow_raw(to as i32) };
            match crate::platform::splice_all(from.as_fd(), out) {
                Spliced::Done(n) => {
                    if let Some(o) = tap.observer.as_mut() {
                        o.skipped(n);
                    }
                    break;
                }
                Spliced::Unsupported(n) => {
                    if let Some(o) = tap.observer.as_mut() {
                        o.skipped(n);
                    }
                    may_splice = false;
                }
            }
        }
        let n = match from.read(&mut buf) {
            Ok(0) => {
                // A last line without its newline goes as it is; whether
                // the held output goes out is the run's decision, not ours.
                if let Some(rest) = lines.as_mut().map(Lines::finish) {
                    if !rest.is_empty() {
                        sealed_pass(to, &rest, &hold, false, sealer.as_mut(), &tap);
                    }
                }
                if let Some(rest) = sealer.as_mut().map(Sealer::finish) {
                    pass(to, &rest, &hold, false);
                }
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let filtered = filter.pass(&buf[..n]);
        let chunk: &[u8] = match &filtered {
            Some(kept) => kept,
            None => &buf[..n],
        };
        let mut proven = false;
        if let Some(o) = tap.observer.as_mut() {
            let fed = o.feed(chunk);
            if fed.result {
                if let Some(w) = &tap.watch {
                    w.result(o.observation());
                }
            }
            proven = tap.proof.holds(o.observation());
        }
        let was_released = released(&hold);
        let out = match lines.as_mut() {
            Some(l) => std::borrow::Cow::Owned(l.pass(chunk)),
            None => std::borrow::Cow::Borrowed(chunk),
        };
        if !sealed_pass(to, &out, &hold, proven, sealer.as_mut(), &tap) {
            if let Some(o) = tap.observer.as_mut() {
                o.cut();
            }
            break;
        }
        if !was_released && released(&hold) {
            if let Some(w) = &tap.watch {
                w.committed();
            }
        }
    }
    tap.observer
}

/// Output passed on line by line, each result's cost figures made the
/// call's own. A line that says early it is not a result (`{"type":"assistant"…`)
/// is passed on as it comes, so a caller that stops reading meets the
/// child's long reply where it would have without us; other lines (a result
/// names its type last) are held until their newline.
struct Lines {
    own: crate::cost::Own,
    /// The current line's bytes so far.
    line: Vec<u8>,
    /// How many of them the caller has been given.
    sent: usize,
    /// Whether the current line passes as it comes (`None`: not known yet).
    streams: Option<bool>,
}

impl Lines {
    fn new(own: crate::cost::Own) -> Lines {
        Lines {
            own,
            line: Vec::new(),
            sent: 0,
            streams: None,
        }
    }

    /// What the caller gets of `chunk` now.
    fn pass(&mut self, mut chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        while !chunk.is_empty() {
            let (part, ends) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (&chunk[..=i], true),
                None => (chunk, false),
            };
            chunk = &chunk[part.len()..];
            self.line.extend_from_slice(part);
            self.streams = self.streams.or_else(|| streams(&self.line));
            if ends {
                match self.streams {
                    Some(true) => out.extend_from_slice(&self.line[self.sent..]),
                    _ => out.extend_from_slice(&self.own.line(&self.line)),
                }
                self.line.clear();
                self.sent = 0;
                self.streams = None;
            } else if self.streams == Some(true) {
                out.extend_from_slice(&self.line[self.sent..]);
                // Nothing of a streamed line is needed again.
                self.line.clear();
                self.sent = 0;
            }
        }
        out
    }

    /// The rest of a last line without its newline, as it is.
    fn finish(&mut self) -> Vec<u8> {
        let rest = self.line.split_off(self.sent);
        self.line.clear();
        self.sent = 0;
        rest
    }
}

/// Whether a line that starts with `start` passes on as it comes: it names
/// a type other than `result` first. `None`: too short to say.
fn streams(start: &[u8]) -> Option<bool> {
    const TYPED: &[u8] = b"{\"type\":\"";
    const RESULT: &[u8] = b"result\"";
    let n = start.len().min(TYPED.len());
    if start[..n] != TYPED[..n] {
        return Some(false);
    }
    let rest = &start[n..];
    if n < TYPED.len() {
        return None;
    }
    let m = rest.len().min(RESULT.len());
    if rest[..m] != RESULT[..m] {
        return Some(true);
    }
    (m == RESULT.len()).then_some(false)
}

/// [`copy`] for a child whose stream-json is rendered for the caller: each
/// complete line is observed, then rendered; nothing past the turn's result.
fn rendered(
    mut from: impl Read,
    to: Stream,
    hold: SharedHold,
    mut tap: Tap,
    mut render: crate::runner::render::Render,
) -> Option<Observer> {
    let mut buf = vec![0u8; CHUNK];
    let mut sealer = tap.seal.then(Sealer::default);
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        partial.extend_from_slice(&buf[..n]);
        while let Some(nl) = memchr::memchr(b'\n', &partial) {
            let line: Vec<u8> = partial.drain(..=nl).collect();
            let mut proven = false;
            if let Some(o) = tap.observer.as_mut() {
                if o.feed(&line).result {
                    if let Some(w) = &tap.watch {
                        w.result(o.observation());
                    }
                }
                proven = tap.proof.holds(o.observation());
            }
            let out = render.line(&line).out;
            if !sealed_pass(to, &out, &hold, proven, sealer.as_mut(), &tap) {
                if let Some(o) = tap.observer.as_mut() {
                    o.cut();
                }
                return tap.observer;
            }
        }
    }
    if let Some(rest) = sealer.as_mut().map(Sealer::finish) {
        pass(to, &rest, &hold, false);
    }
    tap.observer
}

/// [`pass`], with the end of a streamed reply held until the watch has
/// recorded the turn (see `runner::seal`).
fn sealed_pass(
    to: Stream,
    chunk: &[u8],
    hold: &SharedHold,
    proven: bool,
    sealer: Option<&mut Sealer>,
    tap: &Tap,
) -> bool {
    let Some(sealer) = sealer else {
        return pass(to, chunk, hold, proven);
    };
    for piece in sealer.feed(chunk) {
        match piece {
            Piece::Pass(bytes) => {
                if !pass(to, &bytes, hold, proven) {
                    return false;
                }
            }
            Piece::Sealed => {
                if let (Some(w), Some(o)) = (&tap.watch, &tap.observer) {
                    w.sealed(o.observation());
                }
            }
        }
    }
    true
}

/// Watches the first lines a child prints for the `control_response` lines
/// that answer given request ids (after a replayed handshake, or an
/// `initialize` the shim answered itself). Once each was seen (or another
/// line comes), it lets everything through untouched.
struct ResponseFilter {
    answers: Answers,
    pid: i32,
    partial: Vec<u8>,
}

impl ResponseFilter {
    fn new(answers: Answers, pid: i32) -> ResponseFilter {
        ResponseFilter {
            answers,
            pid,
            partial: Vec::new(),
        }
    }

    fn watching(&self) -> bool {
        !self.answers.drop.is_empty() || !self.answers.keep.is_empty()
    }

    fn done(&self) -> bool {
        !self.watching() && self.partial.is_empty()
    }

    /// `None`: pass the chunk as it is.
    fn pass(&mut self, chunk: &[u8]) -> Option<Vec<u8>> {
        if self.done() {
            return None;
        }
        self.partial.extend_from_slice(chunk);
        let mut kept = Vec::new();
        while self.watching() {
            let Some(nl) = memchr::memchr(b'\n', &self.partial) else {
                return Some(kept);
            };
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            let answered = match Event::parse(&line) {
                Some(Event::ControlResponse(r)) => r.response.request_id.map(|c| c.into_owned()),
                _ => None,
            };
            let a = &mut self.answers;
            let id = answered.as_deref();
            if let Some(at) = id.and_then(|id| a.drop.iter().position(|i| i == id)) {
                a.drop.remove(at);
            } else if let Some(at) = id.and_then(|id| a.keep.iter().position(|i| i == id)) {
                a.keep.remove(at);
                kept.extend_from_slice(&line);
            } else {
                // Anything else ends the watch: it never eats output.
                a.drop.clear();
                a.keep.clear();
                kept.extend_from_slice(&line);
                continue;
            }
            if let Some(heard) = &a.heard {
                heard(self.pid, &line);
            }
        }
        kept.append(&mut self.partial);
        Some(kept)
    }
}

/// Deliver or hold one chunk; false when the caller's end is gone.
pub fn pass(to: Stream, chunk: &[u8], hold: &SharedHold, commit_now: bool) -> bool {
    {
        let mut h = lock(hold);
        if h.muted {
            return true;
        }
        if !h.committed {
            match to {
                Stream::Out => h.out.extend_from_slice(chunk),
                Stream::Err => h.err.extend_from_slice(chunk),
            }
            if !commit_now && h.out.len() + h.err.len() < HOLD_CAP {
                return true;
            }
            drop(h);
            commit(hold);
            return true;
        }
    }
    !matches!(write_all(to, chunk), Err(e) if e.kind() == ErrorKind::BrokenPipe)
}

/// write(2) straight to fd 1/2: no std buffering, so bytes leave at once.
pub fn write_all(to: Stream, mut data: &[u8]) -> std::io::Result<()> {
    if to == Stream::Out && !data.is_empty() {
        crate::timeline::wrote_out();
    }
    // SAFETY: fds 1 and 2 stay open for the life of the process.
    let fd = unsafe { BorrowedFd::borrow_raw(to as i32) };
    while !data.is_empty() {
        match nix::unistd::write(fd, data) {
            Ok(n) => data = &data[n..],
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(ids: &[&str], input: &str, step: usize) -> String {
        let answers = Answers {
            drop: ids.iter().map(|s| s.to_string()).collect(),
            ..Answers::default()
        };
        let mut f = ResponseFilter::new(answers, 1);
        let mut out = Vec::new();
        for c in input.as_bytes().chunks(step) {
            match f.pass(c) {
                Some(kept) => out.extend(kept),
                None => out.extend_from_slice(c),
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn replayed_answers_are_dropped_and_nothing_else() {
        let a = "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"req_1\"}}\n";
        let b = "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"req_2\"}}\n";
        let init = "{\"type\":\"system\",\"subtype\":\"init\"}\n";
        for step in [1, 5, 64, 4096] {
            let all = [a, b, init, a].concat();
            assert_eq!(
                filtered(&["req_1", "req_2"], &all, step),
                [init, a].concat()
            );
            // Something else first: the filter stops and drops nothing.
            let odd = [init, a].concat();
            assert_eq!(filtered(&["req_1"], &odd, step), odd);
            assert_eq!(filtered(&[], &all, step), all);
        }
    }

    #[test]
    fn lines_stream_what_is_not_a_result_and_fix_results_whole() {
        let own = crate::cost::Own {
            base: Some(crate::cost::Base {
                total: 0.25,
                model_usage: serde_json::from_str(r#"{"m":{"inputTokens":10,"costUSD":0.25}}"#)
                    .unwrap(),
            }),
        };
        let reply = "x".repeat(5000);
        let assistant = format!(r#"{{"type":"assistant","message":"{reply}"}}"#);
        let result = format!(
            r#"{{"session_id":"S","total_cost_usd":0.5,"modelUsage":{{"m":{{"inputTokens":20,"costUSD":0.5}}}},"result":"{reply}","type":"result"}}"#
        );
        let fixed = String::from_utf8(own.line(result.as_bytes()).into_owned()).unwrap();
        assert!(fixed.contains(r#""total_cost_usd":0.25,"#), "{fixed}");
        let all = format!("{assistant}\n{result}\n{{\"type\":\"system\"}}\n");
        let want = format!("{assistant}\n{fixed}\n{{\"type\":\"system\"}}\n");
        for step in [1, 7, 100, 4096, all.len()] {
            let mut lines = Lines::new(own.clone());
            let (mut got, mut fed) = (Vec::new(), 0);
            for c in all.as_bytes().chunks(step) {
                got.extend(lines.pass(c));
                fed += c.len();
                // The assistant's line goes on as it comes, once its type is read.
                if (11..=assistant.len()).contains(&fed) {
                    assert_eq!(got.len(), fed, "step {step}");
                }
            }
            got.extend(lines.finish());
            assert_eq!(String::from_utf8(got).unwrap(), want, "step {step}");
        }
        // Half an assistant line is passed on before its newline.
        let mut lines = Lines::new(own.clone());
        let half = &assistant.as_bytes()[..2500];
        assert_eq!(lines.pass(half), half);
        // A result is held until its newline, then fixed.
        let mut lines = Lines::new(own);
        assert!(lines.pass(&result.as_bytes()[..3000]).is_empty());
        let mut got = lines.pass(&result.as_bytes()[3000..]);
        got.extend(lines.pass(b"\n"));
        assert_eq!(got, format!("{fixed}\n").as_bytes());
    }

    #[test]
    fn a_line_streams_once_it_names_a_type_other_than_result() {
        assert_eq!(streams(b"{\"ty"), None);
        assert_eq!(streams(b"{\"type\":\"res"), None);
        assert_eq!(streams(b"{\"type\":\"as"), Some(true));
        assert_eq!(streams(b"{\"type\":\"result\""), Some(false));
        assert_eq!(streams(b"{\"type\":\"resultant\""), Some(true));
        assert_eq!(streams(b"{\"duration_ms\":1"), Some(false));
        assert_eq!(streams(b"plain"), Some(false));
    }
}
