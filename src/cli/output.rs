//! Where a command's output goes. A reader that stops early (`claude-shim
//! log | head -3`) closes the pipe, and the next write fails with
//! `BrokenPipe`. That is not an error of ours: like ripgrep and zoxide, the
//! command ends quietly with status 0. The writer remembers that the pipe
//! closed, so `main` knows even when a command turned the write error into
//! an error of its own.

use std::io::{self, Write};

pub struct Output<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> Output<W> {
    pub fn new(inner: W) -> Output<W> {
        Output {
            inner,
            closed: false,
        }
    }

    /// Whether the reader went away.
    pub fn closed(&self) -> bool {
        self.closed
    }

    fn note<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.closed = true;
            }
        }
        r
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.note(r)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let r = self.inner.write_all(buf);
        self.note(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn remembers_a_closed_pipe_but_not_other_errors() {
        let mut out = Output::new(Closed);
        assert!(!out.closed());
        assert!(writeln!(out, "x").is_err());
        assert!(out.closed());

        let mut one = [0u8; 1];
        let mut full = Output::new(&mut one[..]);
        assert!(full.write_all(b"too long").is_err());
        assert!(!full.closed(), "a full buffer is not a closed pipe");
    }
}
