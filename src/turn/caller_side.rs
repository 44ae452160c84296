//! An Agent SDK caller's side of a warm turn (see `relay`): its lines
//! counted as they pass on to the live process, and whether a cold CLI
//! would have ended by now.

use crate::events::Event;

/// An Agent SDK caller's side of the turn: everything it writes goes on to
/// the process, which serves it as a cold one would — permission answers,
/// hook answers, interrupts, further messages. A cold CLI ends when its
/// input has ended and it is idle: so does the turn (the process lives on).
#[derive(Default)]
pub(super) struct CallerSide {
    /// The caller's input ended.
    pub(super) ended: bool,
    /// The start of a line not yet complete.
    pub(super) partial: Vec<u8>,
    /// User messages written, results printed.
    pub(super) messages: usize,
    pub(super) results: usize,
    /// The process's last reported session state (a CLI that reports it).
    state: Option<String>,
    /// What the caller wrote after its message (read ahead and since),
    /// kept while a cold run may still follow (see [`Relayed`]).
    pub(super) kept: Vec<u8>,
    /// It sent a control request, or a permission answer that changes the
    /// process for the turns after it.
    pub(super) controlled: bool,
}

impl CallerSide {
    /// A caller that has written its (first) message.
    pub(super) fn after_its_message() -> CallerSide {
        CallerSide {
            messages: 1,
            ..Default::default()
        }
    }

    /// Complete lines among `bytes`, counted.
    /// `cold_may_run`: nothing has reached the caller for good, so a cold
    /// run may still follow and needs what the caller wrote (after that it
    /// is not kept: a long session does not pile it up).
    pub(super) fn took(&mut self, bytes: &[u8], cold_may_run: bool) {
        match cold_may_run {
            true => self.kept.extend_from_slice(bytes),
            false => self.kept = Vec::new(),
        }
        self.partial.extend_from_slice(bytes);
        while let Some(nl) = memchr::memchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            match Event::parse(&line) {
                Some(Event::User(_)) => self.messages += 1,
                Some(Event::ControlRequest(_)) => self.controlled = true,
                // A permission answer that adds rules or changes the mode
                // changes the process for the turns after it.
                Some(Event::ControlResponse(_)) if changes_permissions(&line) => {
                    self.controlled = true
                }
                _ => {}
            }
        }
    }

    /// The caller's input ended: a last line without its newline is
    /// completed, as a cold CLI reads it at the end of its input (the bytes
    /// to write).
    pub(super) fn end(&mut self) -> Option<&'static [u8]> {
        self.ended = true;
        if self.partial.is_empty() {
            return None;
        }
        let n = self.kept.len();
        self.took(b"\n", true);
        self.kept.truncate(n);
        Some(b"\n")
    }

    /// A line the process printed.
    pub(super) fn printed(&mut self, line: &[u8]) {
        if memchr::memmem::find(line, b"session_state_changed").is_some() {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) {
                if v["subtype"] == "session_state_changed" {
                    self.state = v["state"].as_str().map(str::to_owned);
                }
            }
        }
    }

    /// Whether a cold CLI would have ended by now.
    pub(super) fn done(&self) -> bool {
        self.ended
            && self.results >= self.messages
            && self.state.as_deref().is_none_or(|s| s == "idle")
    }
}

/// Whether a caller's answer to a permission prompt adds permission rules
/// or changes the permission mode (`updatedPermissions`).
fn changes_permissions(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"updatedPermissions").is_some()
        && serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| {
            v["response"]["response"]["updatedPermissions"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &[u8] = br#"{"type":"user","message":{"role":"user","content":"more"}}"#;

    #[test]
    fn an_sdk_callers_turn_ends_when_its_input_ended_and_each_message_has_its_result() {
        let mut side = CallerSide {
            messages: 1,
            ..Default::default()
        };
        // A second message, written in two pieces.
        side.took(&USER[..10], true);
        assert_eq!(side.messages, 1, "a line is counted once it is whole");
        side.took(&[&USER[10..], b"\n"].concat(), true);
        assert_eq!(side.messages, 2);
        side.results = 1;
        assert!(!side.done(), "input still open");
        assert_eq!(side.end(), None, "nothing partial to complete");
        assert!(!side.done(), "a message still waits for its result");
        side.results = 2;
        assert!(side.done());
        // A CLI that reports its state: done only once it is idle.
        side.printed(br#"{"type":"system","subtype":"session_state_changed","state":"running"}"#);
        assert!(!side.done());
        side.printed(br#"{"type":"system","subtype":"session_state_changed","state":"idle"}"#);
        assert!(side.done());
    }

    #[test]
    fn a_last_line_without_its_newline_is_completed_and_counted() {
        let mut side = CallerSide::default();
        side.took(USER, true);
        assert_eq!((side.messages, side.kept.len()), (0, USER.len()));
        assert_eq!(side.end(), Some(&b"\n"[..]));
        assert_eq!(side.messages, 1);
        assert_eq!(
            side.kept, USER,
            "the newline is the shim's, not the caller's"
        );
    }

    #[test]
    fn what_the_caller_wrote_is_kept_only_while_a_cold_run_may_follow() {
        let mut side = CallerSide::default();
        side.took(b"a\n", true);
        side.took(b"b\n", true);
        assert_eq!(side.kept, b"a\nb\n");
        side.took(b"c\n", false);
        assert!(side.kept.is_empty(), "a long session does not pile it up");
    }

    #[test]
    fn control_requests_and_permission_changes_mark_the_process_as_the_callers() {
        let mut side = CallerSide::default();
        let plain_answer = br#"{"type":"control_response","response":{"subtype":"success","request_id":"1","response":{"behavior":"allow"}}}"#;
        side.took(&[&plain_answer[..], b"\n"].concat(), true);
        assert!(!side.controlled, "an answer that changes nothing");
        let rules = br#"{"type":"control_response","response":{"subtype":"success","request_id":"2","response":{"behavior":"allow","updatedPermissions":[{"type":"addRules"}]}}}"#;
        side.took(&[&rules[..], b"\n"].concat(), true);
        assert!(side.controlled);
        let request = br#"{"type":"control_request","request_id":"3","request":{"subtype":"set_model","model":"m"}}"#;
        let mut side = CallerSide::default();
        side.took(&[&request[..], b"\n"].concat(), true);
        assert!(side.controlled);
    }
}
