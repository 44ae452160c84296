//! The resume loop, end to end: a client replays its whole conversation into `claude -p`
//! every turn, the shim in front of the REAL Claude Code CLI resumes the session that
//! already holds it, and the loopback Messages-API server's logged request bodies prove
//! what the model was really sent: every earlier user message once, as structured history,
//! and the new message once.
//!
//! Two clients, as in `/work/shared/dialects.md`:
//! * [`Client::Wrapper`] (OpenAI-compatible wrapper): `Human: u` / `Assistant: a` joined
//!   with blank lines, the whole transcript on stdin, `claude -p`, text output.
//! * [`Client::LangChain`]: the first turn bare, later `User: u1⏎⏎Assistant: a1⏎⏎User: cur`,
//!   positional after `--`, `claude -p --output-format stream-json --verbose`.
//!
//! Each client replays the reply it actually received (text stdout trimmed; the
//! stream-json `result`). The shim's own record (`runs.kind` in `<shim home>/shim.db`) and
//! its debug log (`CLAUDE_SHIM_LOG`) tell how each turn ran.
//! Needs the real CLI: run `.ci/install-cli` first (the tests fail, not skip, without it).

use std::path::Path;
use std::sync::Barrier;

use crate::support::store::RunRow;
use crate::support::{describe, run, ApiServer, Chat, Client, LoggedRequest, Ran, World};
use serde_json::Value;

// ---- clients ---------------------------------------------------------------------------

/// The reply as `client` reads it, and the session id the output reported
/// (stream-json only). Checks the stream-json output is one clean, successful run.
fn read(client: Client, out: &Ran) -> (String, Option<String>) {
    let stdout = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    match client {
        c if !c.streams() => (stdout.trim().to_string(), None),
        _ => {
            let events: Vec<Value> = stdout
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
                .collect();
            let ctx = || describe(out);
            assert!(events.len() >= 3, "{}", ctx());
            assert_eq!(events[0]["type"], "system", "{}", ctx());
            assert_eq!(events[0]["subtype"], "init", "{}", ctx());
            let inits = events.iter().filter(|e| e["subtype"] == "init").count();
            let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "result").collect();
            assert_eq!(inits, 1, "one init event\n{}", ctx());
            assert_eq!(results.len(), 1, "one result event\n{}", ctx());
            let result = results[0];
            assert_eq!(events.last(), Some(result), "result comes last\n{}", ctx());
            assert_eq!(result["subtype"], "success", "{}", ctx());
            assert_eq!(result["is_error"], false, "{}", ctx());
            let sid = events[0]["session_id"]
                .as_str()
                .expect("init session_id")
                .to_string();
            assert!(
                events.iter().all(|e| e["session_id"] == sid.as_str()),
                "one session id throughout\n{}",
                ctx()
            );
            let reply = result["result"].as_str().expect("result text").to_string();
            (reply, Some(sid))
        }
    }
}

// ---- a world: server, sandbox, shim db -------------------------------------------------

/// The server's reply: `reply {n}: {last line of the last user text}` — what the model
/// was last asked, on one line, so a replayed reply never opens a role marker line.
fn reply_text(req: &LoggedRequest, numbered: bool) -> String {
    let text = req.last_user_text().unwrap_or_default();
    let tail: String = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    if numbered {
        format!("reply {}: {tail}", req.index)
    } else {
        format!("reply: {tail}")
    }
}

/// A world whose server answers `reply_text`; `numbered: false`: replies depend only on
/// the question, not on the request count.
fn world(numbered: bool) -> World {
    let server = ApiServer::start();
    server.set_reply(move |r| reply_text(r, numbered));
    World::with_server(server)
}

// ---- a conversation --------------------------------------------------------------------

/// A conversation of the client model (`Chat`: history, flags, env, cwd) in this world.
struct Conv<'w> {
    w: &'w World,
    chat: Chat,
}

impl std::ops::Deref for Conv<'_> {
    type Target = Chat;
    fn deref(&self) -> &Chat {
        &self.chat
    }
}

impl std::ops::DerefMut for Conv<'_> {
    fn deref_mut(&mut self) -> &mut Chat {
        &mut self.chat
    }
}

/// One finished turn.
struct Turn {
    prompt: String,
    out: Ran,
    reply: String,
    /// Session id in the stream-json output.
    out_session: Option<String>,
    /// Main requests the server got during this turn.
    requests: Vec<LoggedRequest>,
    /// Rows the shim added to `runs`.
    runs: Vec<RunRow>,
    /// Shim log lines written during this turn.
    log: String,
}

impl Turn {
    /// The one request of this turn.
    fn request(&self) -> &LoggedRequest {
        assert_eq!(
            self.requests.len(),
            1,
            "expected one main request in this turn\n{}",
            describe(&self.out)
        );
        &self.requests[0]
    }

    /// The session id the server was asked for.
    fn session(&self) -> String {
        self.request().session_id().expect("request session id")
    }

    /// The one `runs` row of this turn.
    fn run(&self) -> &RunRow {
        assert_eq!(self.runs.len(), 1, "one runs row per turn: {:?}", self.runs);
        &self.runs[0]
    }

    fn kind(&self) -> &str {
        &self.run().kind
    }
}

impl<'w> Conv<'w> {
    /// A new conversation of `client` in `w`.
    fn new(w: &'w World, client: Client) -> Conv<'w> {
        Conv {
            w,
            chat: Chat::new(client),
        }
    }

    /// A second conversation continuing from `history` with the same client, flags, env
    /// and cwd.
    fn branch(&self, history: Vec<(String, String)>) -> Conv<'w> {
        Conv {
            w: self.w,
            chat: self.chat.branch(history),
        }
    }

    fn prompt(&self, text: &str) -> String {
        self.chat.render(text)
    }

    /// The first prompt of this conversation, as turn 1 sent it.
    fn first_prompt(&self) -> String {
        self.client.prompt(&[], &self.history[0].0)
    }

    /// Run the real CLI through the shim for one prompt (no checks).
    fn exec(&self, prompt: &str) -> Ran {
        let mut cmd = self.w.sb.shim();
        let input = self.chat.prepare_prompt(&mut cmd, prompt);
        run(cmd, input)
    }

    /// One turn: the client sends its transcript plus `text`, must get a clean, correct
    /// answer (exit 0, empty stderr, the reply the server gave for this turn's last
    /// request), and keeps that reply in its history.
    fn say(&mut self, text: &str) -> Turn {
        let w = self.w;
        let prompt = self.prompt(text);
        let (reqs0, runs0, log0) = (
            w.server.main_requests().len(),
            w.runs().len(),
            w.log().len(),
        );
        let out = self.exec(&prompt);
        let ctx = || format!("{}\n{}", describe(&out), w.context());
        assert!(out.status.success(), "turn {text:?} failed\n{}", ctx());
        assert!(
            out.stderr.is_empty(),
            "turn {text:?}: stderr not empty\n{}",
            ctx()
        );
        let (reply, out_session) = read(self.client, &out);
        let requests = w.server.main_requests()[reqs0..].to_vec();
        let last = requests
            .last()
            .unwrap_or_else(|| panic!("turn {text:?}: no request reached the server\n{}", ctx()));
        assert_eq!(
            reply,
            last.reply,
            "turn {text:?}: the answer is not the server's reply\n{}",
            ctx()
        );
        if let Some(sid) = &out_session {
            assert_eq!(
                last.session_id().as_ref(),
                Some(sid),
                "turn {text:?}: output session differs from the request's\n{}",
                ctx()
            );
        }
        let runs = w.runs()[runs0..].to_vec();
        let log = w.log()[log0..].to_string();
        self.history.push((text.to_string(), reply.clone()));
        Turn {
            prompt,
            out,
            reply,
            out_session,
            requests,
            runs,
            log,
        }
    }
}

// ---- request assertions ----------------------------------------------------------------

/// The request carries `users` as separate user messages (one text each, in order) and
/// `assistants` as the assistant texts: structured history, nothing replayed as text.
fn assert_history(w: &World, req: &LoggedRequest, users: &[String], assistants: &[String]) {
    let per_message: Vec<Vec<String>> = req
        .texts_by_message("user")
        .into_iter()
        .filter(|m| !m.is_empty())
        .collect();
    let want: Vec<Vec<String>> = users.iter().map(|u| vec![u.clone()]).collect();
    assert_eq!(
        per_message,
        want,
        "request #{}: user messages\n{}",
        req.index,
        w.context()
    );
    assert_eq!(
        req.assistant_texts(),
        assistants,
        "request #{}: assistant texts\n{}",
        req.index,
        w.context()
    );
}

/// The request is a fresh turn carrying the caller's whole transcript as one message.
fn assert_full(w: &World, req: &LoggedRequest, prompt: &str) {
    assert_history(w, req, &[prompt.to_string()], &[]);
}

/// The log of a turn shows this plan.
fn assert_plan(w: &World, turn: &Turn, needle: &str) {
    let plan = turn
        .log
        .lines()
        .find(|l| l.contains("plan: "))
        .unwrap_or_else(|| panic!("no plan line for this turn\n{}", w.context()));
    assert!(
        plan.contains(needle),
        "plan should contain {needle:?}: {plan}\n{}",
        w.context()
    );
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn question(prefix: &str, k: usize) -> String {
    format!("{prefix} question {k:02}")
}

/// Run turns 1..=n of `prefix` questions; returns the turns.
fn say_n(c: &mut Conv<'_>, prefix: &str, n: usize) -> Vec<Turn> {
    (1..=n).map(|k| c.say(&question(prefix, k))).collect()
}

// ---- ten linear turns ------------------------------------------------------------------

fn ten_linear_turns(client: Client) {
    let w = world(true);
    let mut c = Conv::new(&w, client);
    let texts: Vec<String> = (1..=10).map(|k| question("alpha", k)).collect();
    let mut session: Option<String> = None;
    let mut out_sessions = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let t = c.say(text);
        let req = t.request();
        if i == 0 {
            assert_full(&w, req, &t.prompt);
            session = req.session_id();
            assert!(session.is_some());
        } else {
            let mut users = vec![c.first_prompt()];
            users.extend(texts[1..=i].iter().cloned());
            let replies: Vec<String> = c.history[..i].iter().map(|(_, a)| a.clone()).collect();
            assert_history(&w, req, &users, &replies);
            // Every user text so far exactly once among the user texts.
            let user_texts = req.user_texts();
            for u in &texts[..=i] {
                let n: usize = user_texts
                    .iter()
                    .map(|t| t.matches(u.as_str()).count())
                    .sum();
                assert_eq!(n, 1, "{u:?} in request #{}\n{}", req.index, w.context());
            }
            // No replayed transcript anywhere in the request beyond turn 1's own message.
            let body = req.body.to_string();
            for u in &texts[1..=i] {
                for label in ["Human: ", "User: "] {
                    assert!(
                        !body.contains(&format!("{label}{u}")),
                        "request #{} replays {label}{u}\n{}",
                        req.index,
                        w.context()
                    );
                }
            }
            assert!(
                !body.contains("Assistant: reply"),
                "request #{} replays an assistant turn as text\n{}",
                req.index,
                w.context()
            );
        }
        assert_eq!(
            req.session_id(),
            session,
            "turn {} changed session\n{}",
            i + 1,
            w.context()
        );
        if let Some(s) = t.out_session {
            out_sessions.push(s);
        }
    }
    if client == Client::LangChain {
        assert_eq!(out_sessions.len(), 10);
        assert!(
            out_sessions.iter().all(|s| Some(s) == session.as_ref()),
            "{out_sessions:?}"
        );
    }
    let runs = w.runs();
    let kinds: Vec<&str> = runs.iter().map(|r| r.kind.as_str()).collect();
    let mut want = vec!["fresh"];
    want.extend(["resumed"; 9]);
    assert_eq!(kinds, want, "{}", w.context());
    assert!(runs.iter().all(|r| r.session == session), "{runs:?}");
    assert_eq!(w.server.main_requests().len(), 10);
    w.assert_no_shim_errors();
}

#[test]
fn ten_turns_human_assistant_text() {
    ten_linear_turns(Client::Wrapper);
}

#[test]
fn ten_turns_user_assistant_stream_json() {
    ten_linear_turns(Client::LangChain);
}

// ---- correct behaviour -----------------------------------------------------------------

/// Regenerating the last turn (its history sent again) branches at the node: the discarded
/// reply is not in the request, the run is a fork, and the next turn resumes the fork.
/// The original branch stays usable.
#[test]
fn regenerate_last_turn_forks_and_next_turn_resumes_the_fork() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::Wrapper);
    let t = say_n(&mut c, "alpha", 3);
    let original = t[0].session();
    assert_eq!(t[2].session(), original);
    let before_regen = c.history.clone();
    let (_, discarded) = c.history.pop().expect("turn 3");
    let (a1, a2) = (c.history[0].1.clone(), c.history[1].1.clone());

    let regen = c.say(&question("alpha", 3));
    let req = regen.request();
    let p1 = c.first_prompt();
    assert_history(
        &w,
        req,
        &[p1.clone(), question("alpha", 2), question("alpha", 3)],
        &[a1.clone(), a2.clone()],
    );
    assert!(
        !req.body.to_string().contains(&discarded),
        "the discarded reply {discarded:?} was sent\n{}",
        w.context()
    );
    assert_ne!(regen.reply, discarded, "the test needs a different reply");
    let fork = regen.session();
    assert_ne!(fork, original, "a regenerated turn must not run in place");
    assert_eq!(regen.kind(), "forked", "{}", w.context());
    assert_eq!(regen.run().session.as_deref(), Some(fork.as_str()));
    assert_plan(&w, &regen, "ForkAt");

    let next = c.say(&question("alpha", 4));
    assert_history(
        &w,
        next.request(),
        &[
            p1.clone(),
            question("alpha", 2),
            question("alpha", 3),
            question("alpha", 4),
        ],
        &[a1.clone(), a2.clone(), regen.reply.clone()],
    );
    assert_eq!(next.session(), fork, "the next turn resumes the fork");
    assert_eq!(next.kind(), "resumed", "{}", w.context());

    // The first answer's branch still continues, in its own session.
    let mut old = c.branch(before_regen);
    let other = old.say("alpha question 04 on the first branch");
    assert_history(
        &w,
        other.request(),
        &[
            p1,
            question("alpha", 2),
            question("alpha", 3),
            "alpha question 04 on the first branch".into(),
        ],
        &[a1, a2, discarded],
    );
    assert_eq!(other.session(), original);
    assert_eq!(other.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

/// Editing an earlier user message is a different conversation: fresh, the whole edited
/// transcript as one message; the turn after it resumes that new session.
#[test]
fn edited_earlier_message_runs_fresh_with_full_transcript() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::Wrapper);
    let t = say_n(&mut c, "alpha", 3);
    let original = t[0].session();
    let edited = "alpha question 02, edited by the user".to_string();
    c.history[1].0 = edited.clone();

    let t4 = c.say(&question("alpha", 4));
    assert!(t4.prompt.contains(&edited));
    assert_full(&w, t4.request(), &t4.prompt);
    assert!(
        !t4.request()
            .body
            .to_string()
            .contains(&format!("\"{}\"", question("alpha", 2))),
        "the unedited message is in the request\n{}",
        w.context()
    );
    assert_ne!(t4.session(), original);
    assert_eq!(t4.kind(), "fresh", "{}", w.context());
    assert_plan(&w, &t4, "Fresh");

    let t5 = c.say(&question("alpha", 5));
    assert_history(
        &w,
        t5.request(),
        &[t4.prompt.clone(), question("alpha", 5)],
        std::slice::from_ref(&t4.reply),
    );
    assert_eq!(t5.session(), t4.session());
    assert_eq!(t5.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

/// Two conversations interleaved in one cwd keep their own sessions; no request carries
/// the other conversation's texts.
#[test]
fn interleaved_conversations_in_one_cwd_keep_their_sessions() {
    let w = world(true);
    let mut a = Conv::new(&w, Client::Wrapper);
    let mut b = Conv::new(&w, Client::Wrapper);
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for k in 1..=4 {
        for (conv, prefix, other, sessions) in [
            (&mut a, "alpha", "bravo", &mut sa),
            (&mut b, "bravo", "alpha", &mut sb),
        ] {
            let t = conv.say(&question(prefix, k));
            let req = t.request();
            let body = req.body.to_string();
            assert!(
                !body.contains(other),
                "request #{} ({prefix}) carries {other} texts\n{}",
                req.index,
                w.context()
            );
            if k > 1 {
                let mut users = vec![conv.first_prompt()];
                users.extend((2..=k).map(|j| question(prefix, j)));
                let replies: Vec<String> = conv.history[..k - 1]
                    .iter()
                    .map(|(_, r)| r.clone())
                    .collect();
                assert_history(&w, req, &users, &replies);
                assert_eq!(t.kind(), "resumed", "{}", w.context());
            }
            sessions.push(t.session());
        }
    }
    assert!(sa.iter().all(|s| *s == sa[0]), "{sa:?}");
    assert!(sb.iter().all(|s| *s == sb[0]), "{sb:?}");
    assert_ne!(sa[0], sb[0]);
    let mut want = vec!["fresh"; 2];
    want.extend(["resumed"; 6]);
    assert_eq!(w.kinds(), want, "{}", w.context());
    w.assert_no_shim_errors();
}

/// The same conversation (same texts, same replies) in two cwds never shares a session.
#[test]
fn same_conversation_in_two_cwds_never_shares_a_session() {
    let w = world(false);
    let other_cwd = w.sb.root.join("other-work");
    std::fs::create_dir_all(&other_cwd).expect("mkdir other cwd");
    let mut one = Conv::new(&w, Client::Wrapper);
    let mut two = Conv::new(&w, Client::Wrapper);
    two.cwd = Some(other_cwd.clone());
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    for k in 1..=3 {
        let t1 = one.say(&question("alpha", k));
        let t2 = two.say(&question("alpha", k));
        assert_eq!(t1.prompt, t2.prompt, "the test needs identical transcripts");
        assert_eq!(t1.reply, t2.reply, "the test needs identical replies");
        for (conv, t) in [(&one, &t1), (&two, &t2)] {
            if k > 1 {
                let mut users = vec![conv.first_prompt()];
                users.extend((2..=k).map(|j| question("alpha", j)));
                let replies: Vec<String> = conv.history[..k - 1]
                    .iter()
                    .map(|(_, r)| r.clone())
                    .collect();
                assert_history(&w, t.request(), &users, &replies);
                assert_eq!(t.kind(), "resumed", "{}", w.context());
            }
        }
        s1.push(t1.session());
        s2.push(t2.session());
    }
    assert!(s1.iter().all(|s| *s == s1[0]), "{s1:?}");
    assert!(s2.iter().all(|s| *s == s2[0]), "{s2:?}");
    assert_ne!(s1[0], s2[0], "two cwds shared a session");
    // Each session lives in its own cwd's project directory.
    let project = |s: &str| {
        w.sb.session_file(s)
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .expect("session file")
    };
    assert_ne!(project(&s1[0]), project(&s2[0]));
    let runs = w.runs();
    let (work, other) = (
        w.sb.work.to_string_lossy().into_owned(),
        other_cwd.to_string_lossy().into_owned(),
    );
    for (cwd, session) in [(&work, &s1[0]), (&other, &s2[0])] {
        let mine: Vec<&RunRow> = runs.iter().filter(|r| r.cwd == *cwd).collect();
        let kinds: Vec<&str> = mine.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["fresh", "resumed", "resumed"], "{}", w.context());
        assert!(
            mine.iter().all(|r| r.session.as_ref() == Some(session)),
            "{}",
            w.context()
        );
    }
    w.assert_no_shim_errors();
}

/// The system text of a request, flattened.
fn system_text(req: &LoggedRequest) -> String {
    match req.body.get("system") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A changed `--append-system-prompt` is a different conversation: the turn runs fresh and
/// the model sees the new system prompt; the next turn resumes with it.
#[test]
fn changed_append_system_prompt_runs_fresh() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::LangChain);
    let one = "Answer in the style of SYSPROMPT-ONE.";
    let two = "Answer in the style of SYSPROMPT-TWO.";
    c.args = strings(&["--append-system-prompt", one]);
    let t = say_n(&mut c, "alpha", 2);
    let original = t[0].session();
    assert_eq!(t[1].kind(), "resumed", "{}", w.context());
    assert!(system_text(t[1].request()).contains(one));

    c.args = strings(&["--append-system-prompt", two]);
    let t3 = c.say(&question("alpha", 3));
    let req = t3.request();
    assert_full(&w, req, &t3.prompt);
    assert!(system_text(req).contains(two), "{}", system_text(req));
    assert!(!system_text(req).contains(one), "{}", system_text(req));
    assert_ne!(t3.session(), original);
    assert_eq!(t3.kind(), "fresh", "{}", w.context());

    let t4 = c.say(&question("alpha", 4));
    assert_history(
        &w,
        t4.request(),
        &[t3.prompt.clone(), question("alpha", 4)],
        std::slice::from_ref(&t3.reply),
    );
    assert!(system_text(t4.request()).contains(two));
    assert_eq!(t4.session(), t3.session());
    assert_eq!(t4.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

/// A changed `--model` runs fresh, and the request asks for the new model.
#[test]
fn changed_model_runs_fresh_with_the_new_model() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::Wrapper);
    // Two models every supported release knows (docs/cli-versions.md): an unknown
    // one is warned about on stderr.
    c.args = strings(&["--model", "claude-opus-4-5"]);
    let t = say_n(&mut c, "alpha", 2);
    assert_eq!(t[1].kind(), "resumed", "{}", w.context());
    assert!(t
        .iter()
        .all(|t| t.request().model() == Some("claude-opus-4-5")));

    c.args = strings(&["--model", "claude-haiku-4-5"]);
    let t3 = c.say(&question("alpha", 3));
    assert_full(&w, t3.request(), &t3.prompt);
    assert_eq!(t3.request().model(), Some("claude-haiku-4-5"));
    assert_ne!(t3.session(), t[0].session());
    assert_eq!(t3.kind(), "fresh", "{}", w.context());

    let t4 = c.say(&question("alpha", 4));
    assert_eq!(t4.request().model(), Some("claude-haiku-4-5"));
    assert_eq!(t4.session(), t3.session());
    assert_eq!(t4.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

/// A reply the caller altered is not what the session holds: fresh, full transcript.
#[test]
fn altered_reply_runs_fresh_with_full_transcript() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::LangChain);
    let t = say_n(&mut c, "alpha", 2);
    let altered = "An answer the user rewrote by hand.".to_string();
    assert_ne!(c.history[1].1, altered);
    c.history[1].1 = altered.clone();

    let t3 = c.say(&question("alpha", 3));
    assert!(t3.prompt.contains(&altered));
    assert_full(&w, t3.request(), &t3.prompt);
    assert_ne!(t3.session(), t[0].session());
    assert_eq!(t3.kind(), "fresh", "{}", w.context());
    assert_plan(&w, &t3, "ReplyDiffers");
    w.assert_no_shim_errors();
}

// ---- broken sessions -------------------------------------------------------------------

/// The session file deleted between turns: a correct answer, fresh with the full
/// transcript, no error anywhere; the next turn resumes the new session.
fn deleted_session_file(client: Client) {
    let w = world(true);
    let mut c = Conv::new(&w, client);
    let t = say_n(&mut c, "alpha", 2);
    let original = t[1].session();
    let file = w.sb.session_file(&original).expect("session file");
    std::fs::remove_file(&file).expect("delete session file");

    // `say` checks exit 0, empty stderr and that the answer is the server's reply.
    let t3 = c.say(&question("alpha", 3));
    assert_full(&w, t3.request(), &t3.prompt);
    assert_ne!(t3.session(), original);
    assert_eq!(t3.kind(), "fresh", "{}", w.context());
    assert_plan(&w, &t3, "SessionFileGone");
    if client == Client::Wrapper {
        assert_eq!(t3.out.stdout, format!("{}\n", t3.reply).into_bytes());
    }

    let t4 = c.say(&question("alpha", 4));
    assert_history(
        &w,
        t4.request(),
        &[t3.prompt.clone(), question("alpha", 4)],
        std::slice::from_ref(&t3.reply),
    );
    assert_eq!(t4.session(), t3.session());
    assert_eq!(t4.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

#[test]
fn deleted_session_file_text() {
    deleted_session_file(Client::Wrapper);
}

#[test]
fn deleted_session_file_stream_json() {
    deleted_session_file(Client::LangChain);
}

/// How a session file is made unusable so that the CLI answers `No conversation found`.
#[derive(Clone, Copy, Debug)]
enum Damage {
    /// Truncated to zero bytes: the shim sees the node is not the head, plans a fork.
    Truncated,
    /// Only a bare record of the head assistant message is left: the shim still sees the
    /// node as the head and plans an in-place resume, which the CLI refuses.
    HeadOnly,
}

fn last_assistant_uuid(file: &Path) -> String {
    std::fs::read_to_string(file)
        .expect("read session file")
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "assistant")
        .find_map(|v| v["uuid"].as_str().map(str::to_string))
        .expect("an assistant record")
}

/// The CLI refuses the resume: the caller still gets exactly one correct answer, clean
/// stderr, exit 0; the shim ran exactly one extra attempt (one `resume refused`, one
/// `fallback` row), the refused attempt cost at most one request and left no trace on
/// stdout. The next turn resumes the fallback's session.
fn refused_resume(client: Client, damage: Damage) {
    let w = world(true);
    let mut c = Conv::new(&w, client);
    let t = say_n(&mut c, "alpha", 2);
    let original = t[1].session();
    let file = w.sb.session_file(&original).expect("session file");
    let head = last_assistant_uuid(&file);
    let broken = match damage {
        Damage::Truncated => String::new(),
        // With a timestamp, as every real record has: 2.1.0's start-up statistics crash
        // on a record without one.
        Damage::HeadOnly => format!(
            "{{\"type\":\"assistant\",\"uuid\":\"{head}\",\"isSidechain\":false,\
             \"timestamp\":\"2026-01-01T00:00:00.000Z\"}}\n"
        ),
    };
    std::fs::write(&file, broken).expect("damage session file");
    // The damage is one the real CLI refuses.
    let probe = run(w.sb.direct(["-p", "--resume", &original, "probe"]), b"");
    assert!(!probe.status.success(), "{}", describe(&probe));
    assert!(
        String::from_utf8_lossy(&probe.stderr).contains("No conversation found"),
        "{}",
        describe(&probe)
    );
    assert_eq!(
        w.server.main_requests().len(),
        2,
        "the probe sent a request\n{}",
        w.context()
    );
    let damaged = std::fs::read(&file).expect("read damaged file");

    let t3 = c.say(&question("alpha", 3));
    let ctx = || format!("{damage:?}\n{}\n{}", describe(&t3.out), w.context());
    // The refused attempt: at most one request; the last one is the fresh full transcript.
    assert!(
        (1..=2).contains(&t3.requests.len()),
        "{} requests for one turn\n{}",
        t3.requests.len(),
        ctx()
    );
    let fallback = t3.requests.last().expect("fallback request");
    assert_full(&w, fallback, &t3.prompt);
    let fallback_session = fallback.session_id().expect("session id");
    assert_ne!(fallback_session, original);
    // Exactly one extra run, recorded as a fallback.
    assert_eq!(t3.runs.len(), 1, "{}", ctx());
    assert_eq!(t3.kind(), "fallback", "{}", ctx());
    assert_eq!(t3.run().session.as_deref(), Some(fallback_session.as_str()));
    assert_eq!(t3.log.matches("resume refused").count(), 1, "{}", ctx());
    assert_plan(
        &w,
        &t3,
        match damage {
            Damage::Truncated => "ForkAt",
            Damage::HeadOnly => "InPlace",
        },
    );
    // No trace of the refused attempt on stdout.
    let stdout = String::from_utf8_lossy(&t3.out.stdout).into_owned();
    assert!(!stdout.contains("No conversation found"), "{}", ctx());
    assert!(!stdout.contains("error_during_execution"), "{}", ctx());
    assert!(!stdout.contains(&original), "{}", ctx());
    match client {
        c if !c.streams() => assert_eq!(stdout, format!("{}\n", t3.reply), "{}", ctx()),
        _ => {
            // `read` checked: one init, one successful result, one session id.
            assert_eq!(t3.out_session.as_deref(), Some(fallback_session.as_str()));
        }
    }
    // The refused attempt did not touch the damaged file.
    assert_eq!(std::fs::read(&file).expect("read"), damaged, "{}", ctx());

    let t4 = c.say(&question("alpha", 4));
    assert_history(
        &w,
        t4.request(),
        &[t3.prompt.clone(), question("alpha", 4)],
        std::slice::from_ref(&t3.reply),
    );
    assert_eq!(t4.session(), fallback_session);
    assert_eq!(t4.kind(), "resumed", "{}", w.context());
    w.assert_no_shim_errors();
}

#[test]
fn refused_resume_falls_back_once_text() {
    refused_resume(Client::Wrapper, Damage::Truncated);
    refused_resume(Client::Wrapper, Damage::HeadOnly);
}

#[test]
fn refused_resume_falls_back_once_stream_json() {
    refused_resume(Client::LangChain, Damage::Truncated);
    refused_resume(Client::LangChain, Damage::HeadOnly);
}

// ---- CLAUDE_SHIM_FRESH -----------------------------------------------------------------

/// `CLAUDE_SHIM_FRESH=1` on a middle turn sends the full transcript; the next turn resumes
/// the session that fresh turn created.
#[test]
fn forced_fresh_middle_turn_is_resumed_next() {
    let w = world(true);
    let mut c = Conv::new(&w, Client::Wrapper);
    let t = say_n(&mut c, "alpha", 2);
    c.env = vec![("CLAUDE_SHIM_FRESH".into(), "1".into())];
    let t3 = c.say(&question("alpha", 3));
    c.env.clear();
    assert_full(&w, t3.request(), &t3.prompt);
    assert_ne!(t3.session(), t[0].session());
    assert_eq!(t3.kind(), "fresh", "{}", w.context());
    assert_plan(&w, &t3, "Forced");

    let t4 = c.say(&question("alpha", 4));
    assert_history(
        &w,
        t4.request(),
        &[t3.prompt.clone(), question("alpha", 4)],
        std::slice::from_ref(&t3.reply),
    );
    assert_eq!(t4.session(), t3.session());
    assert_eq!(t4.kind(), "resumed", "{}", w.context());
    assert_eq!(w.kinds(), ["fresh", "resumed", "fresh", "resumed"]);
    w.assert_no_shim_errors();
}

// ---- concurrency -----------------------------------------------------------------------

/// Eight turns branching from one node at once: all succeed with correct answers, each
/// request carries the shared history once plus its own message, and at most one of them
/// resumed the session in place (the rest forked, each into its own session).
#[test]
fn eight_concurrent_branches_from_one_node() {
    const N: usize = 8;
    let w = world(true);
    let mut c = Conv::new(&w, Client::LangChain);
    let t = say_n(&mut c, "alpha", 2);
    let original = t[0].session();
    assert_eq!(t[1].session(), original);
    let (p1, a1, a2) = (
        c.first_prompt(),
        c.history[0].1.clone(),
        c.history[1].1.clone(),
    );
    let texts: Vec<String> = (1..=N)
        .map(|k| format!("alpha branch {k} of {N}"))
        .collect();

    let barrier = Barrier::new(N);
    let outputs: Vec<Ran> = std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .iter()
            .map(|text| {
                let (c, barrier) = (&c, &barrier);
                s.spawn(move || {
                    let prompt = c.prompt(text);
                    barrier.wait();
                    c.exec(&prompt)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("turn thread"))
            .collect()
    });

    let requests = w.server.main_requests();
    let mut out_sessions = Vec::new();
    for (text, out) in texts.iter().zip(&outputs) {
        let ctx = || format!("branch {text:?}\n{}\n{}", describe(out), w.context());
        assert!(out.status.success(), "{}", ctx());
        assert!(out.stderr.is_empty(), "{}", ctx());
        let (reply, sid) = read(c.client, out);
        let mine: Vec<&LoggedRequest> = requests
            .iter()
            .filter(|r| r.last_user_text().as_deref() == Some(text.as_str()))
            .collect();
        assert_eq!(mine.len(), 1, "{}", ctx());
        let req = mine[0];
        assert_history(
            &w,
            req,
            &[p1.clone(), question("alpha", 2), text.clone()],
            &[a1.clone(), a2.clone()],
        );
        assert_eq!(reply, req.reply, "{}", ctx());
        assert_eq!(sid, req.session_id(), "{}", ctx());
        out_sessions.push(sid.expect("session id"));
    }
    assert_eq!(requests.len(), 2 + N, "{}", w.context());

    let runs = w.runs()[2..].to_vec();
    assert_eq!(runs.len(), N, "{}", w.context());
    eprintln!(
        "branch kinds: {:?}",
        runs.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>()
    );
    let resumed: Vec<&RunRow> = runs.iter().filter(|r| r.kind == "resumed").collect();
    assert!(
        resumed.len() <= 1,
        "two turns resumed in place at once\n{}",
        w.context()
    );
    assert!(
        runs.iter()
            .all(|r| r.kind == "resumed" || r.kind == "forked"),
        "{}",
        w.context()
    );
    for r in &resumed {
        assert_eq!(r.session.as_deref(), Some(original.as_str()));
    }
    let mut sessions: Vec<String> = runs.iter().filter_map(|r| r.session.clone()).collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), N, "sessions not distinct\n{}", w.context());
    let mut seen = out_sessions.clone();
    seen.sort();
    assert_eq!(seen, sessions, "runs and outputs disagree on sessions");
    let forks_on_original = out_sessions.iter().filter(|s| **s == original).count();
    assert_eq!(forks_on_original, resumed.len());

    // Two of the branches continue, each in its own session.
    for k in [0, N - 1] {
        let mut b = c.branch(c.history.clone());
        let (reply, _) = read(c.client, &outputs[k]);
        b.history.push((texts[k].clone(), reply.clone()));
        let next = b.say(&format!("{} continued", texts[k]));
        assert_history(
            &w,
            next.request(),
            &[
                p1.clone(),
                question("alpha", 2),
                texts[k].clone(),
                format!("{} continued", texts[k]),
            ],
            &[a1.clone(), a2.clone(), reply],
        );
        assert_eq!(next.session(), out_sessions[k]);
        assert_eq!(next.kind(), "resumed", "{}", w.context());
    }
    w.assert_no_shim_errors();
}
