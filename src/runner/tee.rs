//! Copy the child's stdout/stderr to ours byte-exactly as bytes arrive, with
//! an optional hold: while a resume attempt is unproven, output is kept back
//! so a refused resume can be discarded and rerun without the caller seeing it.

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

/// Whether anything reached the caller yet.
pub fn released(hold: &SharedHold) -> bool {
    hold.lock().map(|h| h.committed).unwrap_or(true)
}

/// Write out everything held (stderr first: it was the CLI's notice) and pass
/// later output straight through.
pub fn commit(hold: &SharedHold) {
    let Ok(mut h) = hold.lock() else { return };
    if h.committed {
        return;
    }
    h.committed = true;
    if let Some(gate) = h.gate.take() {
        let _ = gate.send(());
    }
    let (out, err) = (std::mem::take(&mut h.out), std::mem::take(&mut h.err));
    // Written under the lock so the other stream cannot overtake its own backlog.
    let _ = write_all(Stream::Err, &err);
    let _ = write_all(Stream::Out, &out);
}

/// Drop whatever is held; the attempt is being retried.
pub fn discard(hold: &SharedHold) {
    if let Ok(mut h) = hold.lock() {
        h.out.clear();
        h.err.clear();
        h.gate = None;
    }
}

/// Copy `from` to our fd `to` until EOF. When the caller closes our end
/// (EPIPE) stop reading, so the child meets the closed pipe as it would have
/// without us. Returns the observer fed with every byte read.
pub fn copy(
    mut from: impl Read + AsFd,
    to: Stream,
    hold: SharedHold,
    mut observer: Option<Observer>,
    commit_when: impl Fn(&Observer) -> bool,
    on_result: impl Fn(&Observer),
) -> Option<Observer> {
    let mut buf = vec![0u8; CHUNK];
    let mut may_splice = true;
    loop {
        // Nothing left to hold or observe: move the bytes in the kernel.
        if may_splice && released(&hold) && observer.as_ref().is_none_or(|o| !o.wants_bytes()) {
            // SAFETY: fds 1 and 2 stay open for the life of the process.
            let out = unsafe { BorrowedFd::borrow_raw(to as i32) };
            match crate::platform::splice_all(from.as_fd(), out) {
                Spliced::Done(n) => {
                    if let Some(o) = observer.as_mut() {
                        o.skipped(n);
                    }
                    break;
                }
                Spliced::Unsupported(n) => {
                    if let Some(o) = observer.as_mut() {
                        o.skipped(n);
                    }
                    may_splice = false;
                }
            }
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        if let Some(o) = observer.as_mut() {
            if o.feed(chunk).result {
                on_result(o);
            }
        }
        if !pass(
            to,
            chunk,
            &hold,
            observer.as_ref().is_some_and(&commit_when),
        ) {
            break;
        }
    }
    observer
}

/// Deliver or hold one chunk; false when the caller's end is gone.
fn pass(to: Stream, chunk: &[u8], hold: &SharedHold, commit_now: bool) -> bool {
    {
        let Ok(mut h) = hold.lock() else {
            return write_all(to, chunk).is_ok();
        };
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
