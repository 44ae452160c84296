//! The caller's later stream-json lines on their way to a live CLI, and the
//! CLI's results on theirs: a message that re-sends the session's
//! transcript goes as its new part only (see [`crate::resend`]). Lines not
//! cut pass byte for byte; once the session is off, bytes pass as they come.

use super::watch::Watch;
use crate::observe::Observation;
use crate::resend::{Line, Session};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

/// One process's session, shared by its stdin feeder and its output.
pub type Live = Arc<Mutex<Session>>;

fn lock(live: &Live) -> std::sync::MutexGuard<'_, Session> {
    live.lock().unwrap_or_else(|p| p.into_inner())
}

/// Told a result, before its bytes reach the caller (so before the caller
/// can send the next message).
pub fn result(live: &Live, obs: &Observation) {
    lock(live).result(obs)
}

/// The caller's bytes, line by line while the session may cut one.
pub struct Lines {
    live: Live,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
}

impl Lines {
    pub fn new(live: Live) -> Lines {
        Lines {
            live,
            partial: Vec::new(),
        }
    }

    /// What the CLI gets of `chunk` now.
    pub fn pass<'a>(&mut self, chunk: &'a [u8]) -> Cow<'a, [u8]> {
        let mut s = lock(&self.live);
        if s.off() && self.partial.is_empty() {
            return Cow::Borrowed(chunk);
        }
        let mut out = Vec::with_capacity(chunk.len());
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.partial.extend_from_slice(&rest[..=nl]);
            rest = &rest[nl + 1..];
            let line = std::mem::take(&mut self.partial);
            match s.input(&line) {
                Line::Pass => out.extend_from_slice(&line),
                Line::Cut(cut) => out.extend_from_slice(&cut),
            }
        }
        self.partial.extend_from_slice(rest);
        if s.off() {
            out.append(&mut self.partial);
        }
        Cow::Owned(out)
    }

    /// At the end of input: a last line without its newline, as it is.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }
}

/// A run's watch that tells the session each result first.
pub struct Watched {
    pub inner: Option<Arc<dyn Watch>>,
    pub live: Live,
}

impl Watch for Watched {
    fn result(&self, obs: &Observation) {
        result(&self.live, obs);
        if let Some(w) = &self.inner {
            w.result(obs)
        }
    }

    fn input_closed(&self) {
        if let Some(w) = &self.inner {
            w.input_closed()
        }
    }

    fn committed(&self) {
        if let Some(w) = &self.inner {
            w.committed()
        }
    }

    fn sealed(&self, obs: &Observation) {
        if let Some(w) = &self.inner {
            w.sealed(obs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_pass_whole_and_raw_once_off() {
        let live: Live = Default::default();
        let mut lines = Lines::new(live.clone());
        // Off from the start: bytes as they come, partial lines too.
        assert!(matches!(lines.pass(b"{\"a\""), Cow::Borrowed(_)));
        let user = |t: &str| {
            format!(
                "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":{}}}}}\n",
                serde_json::json!(t)
            )
        };
        lock(&live).begin(user("s\n\nu1").as_bytes(), true, true);
        let mut obs = Observation::default();
        obs.assistant_texts.push("a1".into());
        obs.results = 1;
        obs.result = Some(crate::observe::ResultEvent {
            subtype: "success".into(),
            text: Some("a1".into()),
            ..Default::default()
        });
        result(&live, &obs);
        let resent = user("s\n\nu1\n\nAssistant: a1\n\nu2");
        let control = "{\"type\":\"control_request\"}\n";
        let all = format!("{control}{resent}");
        for step in [1, 3, 17, all.len()] {
            let mut s = Session::default();
            s.begin(user("s\n\nu1").as_bytes(), true, true);
            s.result(&obs);
            *lock(&live) = s;
            let mut lines = Lines::new(live.clone());
            let mut got = Vec::new();
            for c in all.as_bytes().chunks(step) {
                got.extend_from_slice(&lines.pass(c));
            }
            got.extend(lines.finish());
            let (before, cut) = got.split_at(control.len());
            assert_eq!(before, control.as_bytes(), "step {step}");
            assert_eq!(crate::prompt::stream_text(cut).as_deref(), Some("u2"));
            assert!(cut.ends_with(b"}\n"), "step {step}");
        }
    }
}
