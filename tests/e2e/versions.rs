//! Claude Code releases that lack a flag the shim uses, through the shim, against
//! the loopback API server: what the probe (`src/probe.rs`) finds missing is never
//! passed: a release without `--session-id`, `--fork-session` or `--resume-session-at`
//! has every turn run exactly as the caller asked. (Before 1.0.124, `-p --resume S`
//! continued under a new session id, unseen in text output: resuming there would pin a
//! session that lacks the turn; 1.0.128 is the first release with all four flags.)
//!
//! The releases are real and old (pinned in `.ci/claude-code-versions-extra`,
//! installed by `.ci/install-cli VERSION`; docs/cli-versions.md says what each lacks).
//! The tests fail, never skip, without them.

use crate::support::clients::{labels, text_reply};
use crate::support::{describe, run, ApiServer, LoggedRequest, RealCli, Version, World};

/// A world whose real CLI is an old release.
struct Release {
    w: World,
    version: Version,
}

impl Release {
    fn new(role: &str) -> Release {
        let (version, cli) = RealCli::extra(role);
        let server = ApiServer::start();
        // A reply that quotes no role marker, whatever it answers.
        server.set_reply(|r| format!("reply {}", r.index));
        let mut w = World::with_cli(server, cli);
        // Cold turns: these releases are older than the supported range, and a live
        // 1.0.x CLI drops the first user message from its history on the next turn
        // (docs/cli-versions.md). What is tested here is the probe's part.
        w.sb.set_env("CLAUDE_SHIM_WARM", "0");
        Release { w, version }
    }

    /// One turn of a `Human:`/`Assistant:` client replaying `history` on stdin
    /// (`claude -p`, text): answered as without the shim — exit 0, nothing on
    /// stderr (an unknown option would be), the server's reply on stdout.
    /// Returns the reply and the request that answered it.
    fn turn(&self, history: &[(String, String)], msg: &str) -> (String, LoggedRequest) {
        let w = &self.w;
        let before = w.server.main_requests().len();
        let prompt = labels(history, msg, "Human", "\n\n");
        let out = run(w.sb.shimmed(["-p"]), prompt.as_bytes());
        let ctx = || format!("claude {}: {}\n{}", self.version, describe(&out), w.log());
        assert!(out.status.success(), "{}", ctx());
        assert!(out.stderr.is_empty(), "{}", ctx());
        let requests = w.server.main_requests();
        assert_eq!(requests.len(), before + 1, "one request\n{}", ctx());
        let req = requests[before].clone();
        assert_eq!(text_reply(&out.stdout), req.reply, "{}", ctx());
        (req.reply.clone(), req)
    }

    /// `(kind, why)` of every managed turn, in order.
    fn runs(&self) -> Vec<(String, String)> {
        self.w
            .runs()
            .into_iter()
            .map(|r| (r.kind, r.why_code))
            .collect()
    }
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

/// Three turns, each exactly as the caller sent it: the whole transcript in one
/// message, recorded as unchanged because the release lacks a flag.
fn every_turn_runs_as_the_caller_asked(role: &str) {
    let w = Release::new(role);
    let mut history: Vec<(String, String)> = Vec::new();
    for k in 1..=3 {
        let msg = format!("message {k}");
        let (reply, req) = w.turn(&history, &msg);
        assert_eq!(
            req.user_texts(),
            [labels(&history, &msg, "Human", "\n\n")],
            "turn {k}: as asked"
        );
        history.push((msg, reply));
    }
    let runs = w.runs();
    assert_eq!(runs, vec![pair("unchanged", "no-resume-support"); 3]);
}

/// 1.0.30 has `--resume` but no `--session-id`: the shim can name no session, not
/// even a fresh one (passing the flag would be an unknown option).
#[test]
fn without_session_id_every_turn_runs_as_the_caller_asked() {
    every_turn_runs_as_the_caller_asked("no-session-id");
}

/// 1.0.60 has `--resume` and `--session-id` but no `--fork-session`.
#[test]
fn without_fork_session_every_turn_runs_as_the_caller_asked() {
    every_turn_runs_as_the_caller_asked("no-fork-session");
}

/// 1.0.122 has `--fork-session` but not yet `--resume-session-at` (1.0.128), and still
/// continues a resumed session under a new id (until 1.0.124).
#[test]
fn without_resume_session_at_every_turn_runs_as_the_caller_asked() {
    every_turn_runs_as_the_caller_asked("no-resume-session-at");
}
