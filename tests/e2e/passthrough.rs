//! Putting the shim on PATH changes nothing observable for runs it does not rewrite:
//! same stdout (after masking run-to-run noise), same stderr, same exit status, and the
//! API server sees the same conversation.
//!
//! Every case runs the real CLI twice, each in its own sandbox (own HOME, cwd and API
//! server): once with only the real CLI on PATH, once with the shim ahead of it.
//! Needs the real CLI: run `.ci/install-cli` first (the tests fail, not skip, without it).

use crate::support::Ran;

use crate::support::{describe, run, ApiServer, CacheModel, RealCli, Sandbox};
use serde_json::Value;

/// One run of `claude` in a fresh sandbox with its own server.
struct Run {
    server: ApiServer,
    sandbox: Sandbox,
    output: Ran,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8(self.output.stdout.clone()).expect("stdout is UTF-8")
    }

    fn masked_stdout(&self) -> String {
        self.sandbox.mask(&self.stdout())
    }

    fn masked_stderr(&self) -> String {
        self.sandbox
            .mask(&String::from_utf8_lossy(&self.output.stderr))
    }

    fn json_lines(&self) -> Vec<Value> {
        self.stdout()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }
}

#[derive(Clone, Copy)]
enum Via {
    Direct,
    Shimmed,
}

fn run_one(via: Via, args: &[&str], stdin: &[u8]) -> Run {
    let server = ApiServer::start();
    let sandbox = Sandbox::real(&server);
    let cmd = match via {
        Via::Direct => sandbox.direct(args),
        Via::Shimmed => sandbox.shimmed(args),
    };
    let output = run(cmd, stdin);
    Run {
        server,
        sandbox,
        output,
    }
}

/// Run `args` directly and through the shim; assert nothing observable differs.
/// Returns the direct run for case-specific checks.
fn assert_passthrough(args: &[&str], stdin: &[u8]) -> Run {
    let direct = run_one(Via::Direct, args, stdin);
    let shimmed = run_one(Via::Shimmed, args, stdin);
    assert_same(args, &direct, &shimmed);
    direct
}

fn assert_same(args: &[&str], a: &Run, b: &Run) {
    let ctx = || {
        format!(
            "claude {args:?}\n=== direct ===\n{}\n=== shimmed ===\n{}",
            describe(&a.output),
            describe(&b.output)
        )
    };
    // Each run has its own sandbox: each is masked with its own paths.
    let seen = |r: &Run| Ran {
        status: r.output.status,
        stdout: r.masked_stdout().into_bytes(),
        stderr: r.masked_stderr().into_bytes(),
        elapsed: Default::default(),
    };
    crate::support::assert_seen_same(&seen(b), &seen(a), &|x| x.to_vec(), &ctx);
    assert_eq!(
        a.server.user_texts(),
        b.server.user_texts(),
        "the server saw different user texts\n{}",
        ctx()
    );
    let kinds = |r: &Run| {
        r.server
            .requests()
            .iter()
            .map(|q| (q.kind, q.path.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(a), kinds(b), "different API requests\n{}", ctx());
    assert_eq!(
        a.server.other_requests(),
        b.server.other_requests(),
        "different non-API requests\n{}",
        ctx()
    );
}

fn assert_success(r: &Run) {
    assert!(r.output.status.success(), "{}", describe(&r.output));
    assert!(
        r.output.stderr.is_empty(),
        "unexpected stderr\n{}",
        describe(&r.output)
    );
}

/// One conversation turn carrying exactly `text` as its user text.
fn assert_one_turn(r: &Run, text: &str) {
    assert_eq!(
        r.server.user_texts(),
        vec![vec![text.to_string()]],
        "{}",
        describe(&r.output)
    );
    assert!(
        r.server.side_requests().is_empty(),
        "{:?}",
        r.server.side_requests()
    );
}

#[test]
fn version_is_unchanged() {
    let direct = assert_passthrough(&["--version"], b"");
    assert_success(&direct);
    if RealCli::is_pinned_install() {
        let pinned = RealCli::pinned_version();
        assert_eq!(direct.stdout(), format!("{pinned} (Claude Code)\n"));
    }
    assert!(direct.server.requests().is_empty());
}

#[test]
fn help_is_unchanged() {
    let direct = assert_passthrough(&["--help"], b"");
    assert_success(&direct);
    assert!(
        direct.stdout().contains("Usage: claude"),
        "{}",
        direct.stdout()
    );
    assert!(direct.server.requests().is_empty());
}

#[test]
fn print_text_positional_prompt_is_unchanged() {
    let direct = assert_passthrough(&["-p", "hello"], b"");
    assert_success(&direct);
    assert_eq!(direct.stdout(), "reply 1: hello\n");
    assert_one_turn(&direct, "hello");
}

#[test]
fn print_text_stdin_prompt_is_unchanged() {
    let direct = assert_passthrough(&["-p"], b"hello from stdin\n");
    assert_success(&direct);
    // The CLI sends the stdin bytes verbatim (trailing newline included) and prints the
    // reply with trailing whitespace trimmed.
    assert_eq!(direct.stdout(), "reply 1: hello from stdin\n");
    assert_one_turn(&direct, "hello from stdin\n");
}

#[test]
fn print_text_explicit_format_is_unchanged() {
    let direct = assert_passthrough(&["-p", "--output-format", "text", "hello there"], b"");
    assert_success(&direct);
    assert_eq!(direct.stdout(), "reply 1: hello there\n");
    assert_one_turn(&direct, "hello there");
}

#[test]
fn print_json_is_unchanged() {
    let direct = assert_passthrough(&["-p", "hello", "--output-format", "json"], b"");
    assert_success(&direct);
    let lines = direct.json_lines();
    assert_eq!(lines.len(), 1, "{}", direct.stdout());
    assert_eq!(lines[0]["type"], "result");
    assert_eq!(lines[0]["subtype"], "success");
    assert_eq!(lines[0]["result"], "reply 1: hello");
    assert_one_turn(&direct, "hello");
}

#[test]
fn print_stream_json_is_unchanged() {
    let direct = assert_passthrough(
        &["-p", "hello", "--output-format", "stream-json", "--verbose"],
        b"",
    );
    assert_success(&direct);
    check_stream_json(&direct, "reply 1: hello");
    assert_one_turn(&direct, "hello");
}

#[test]
fn stream_json_input_is_unchanged() {
    let line =
        br#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
    let mut stdin = line.to_vec();
    stdin.push(b'\n');
    let direct = assert_passthrough(
        &[
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "-p",
        ],
        &stdin,
    );
    assert_success(&direct);
    check_stream_json(&direct, "reply 1: hi");
    assert_one_turn(&direct, "hi");
}

/// init → assistant → result, one session id throughout, the reply as the result.
fn check_stream_json(r: &Run, reply: &str) {
    let lines = r.json_lines();
    assert!(lines.len() >= 3, "{}", r.stdout());
    assert_eq!(lines[0]["type"], "system");
    assert_eq!(lines[0]["subtype"], "init");
    let last = lines.last().expect("lines");
    assert_eq!(last["type"], "result");
    assert_eq!(last["result"], reply);
    let sid = &lines[0]["session_id"];
    assert!(sid.is_string());
    assert!(lines.iter().all(|l| &l["session_id"] == sid));
    assert!(lines
        .iter()
        .any(|l| l["type"] == "assistant" && l["message"]["content"][0]["text"] == reply));
    // The session the server was asked for is the one reported.
    let req = r.server.last_main().expect("a main request");
    assert_eq!(req.session_id().as_deref(), sid.as_str());
}

// ---- harness self-checks -------------------------------------------------------------

/// `shimmed` really resolves `claude` to the shim, and `direct` to the real CLI.
#[test]
fn harness_path_resolution() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let resolve = |path| {
        which::which_in("claude", Some(path), &sb.work)
            .expect("claude on PATH")
            .canonicalize()
            .expect("canonicalize")
    };
    let shim = crate::support::shim_exe().canonicalize().expect("shim exe");
    let real = RealCli::path().canonicalize().expect("real cli");
    assert_eq!(resolve(sb.shimmed_path()), shim);
    assert_eq!(resolve(sb.direct_path()), real);
    let cmd = sb.shimmed(["-p", "x"]);
    let envs: Vec<_> = cmd.get_envs().collect();
    assert!(envs
        .iter()
        .any(|(k, v)| *k == "PATH" && *v == Some(sb.shimmed_path().as_os_str())));
    assert_eq!(cmd.get_current_dir(), Some(sb.work.as_path()));
}

/// The masking is enough: two direct runs in different sandboxes compare equal.
#[test]
fn harness_two_direct_runs_compare_equal() {
    for args in [
        &["-p", "hello", "--output-format", "stream-json", "--verbose"][..],
        &["-p", "hello", "--output-format", "json"][..],
    ] {
        let a = run_one(Via::Direct, args, b"");
        let b = run_one(Via::Direct, args, b"");
        assert_same(args, &a, &b);
        // ...and the masking is not vacuous.
        assert_ne!(a.stdout(), b.stdout());
    }
}

/// The masking keeps what matters: a changed reply, key order or id wiring shows up.
#[test]
fn harness_mask_is_not_too_broad() {
    use crate::support::mask_volatile;
    let a = r#"{"type":"result","result":"x","session_id":"s1","uuid":"u1","duration_ms":5}"#;
    let b = r#"{"type":"result","result":"x","session_id":"s2","uuid":"u2","duration_ms":7}"#;
    assert_eq!(mask_volatile(a), mask_volatile(b));
    let reply = r#"{"type":"result","result":"y","session_id":"s2","uuid":"u2","duration_ms":7}"#;
    assert_ne!(mask_volatile(a), mask_volatile(reply));
    let order = r#"{"result":"x","type":"result","session_id":"s2","uuid":"u2","duration_ms":7}"#;
    assert_ne!(mask_volatile(a), mask_volatile(order));
    // Same id in both places vs. two different ids.
    let same = r#"{"session_id":"s","uuid":"s"}"#;
    let diff = r#"{"session_id":"s","uuid":"t"}"#;
    assert_ne!(mask_volatile(same), mask_volatile(diff));
    // Consistent across lines.
    let two_a = "{\"session_id\":\"a\"}\n{\"session_id\":\"a\"}\n";
    let two_b = "{\"session_id\":\"b\"}\n{\"session_id\":\"c\"}\n";
    assert_ne!(mask_volatile(two_a), mask_volatile(two_b));
}

/// The cache model: first request writes, a repeat reads, a grown conversation reads the
/// old prefix (lookback from the new breakpoint) and writes the rest.
#[test]
fn harness_cache_model() {
    use serde_json::json;
    let mut cache = CacheModel::new();
    let sys = json!([{"type": "text", "text": "system prompt ".repeat(50),
                      "cache_control": {"type": "ephemeral"}}]);
    let turn1 = json!({"model": "m", "system": sys, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hello",
                                      "cache_control": {"type": "ephemeral"}}]}]});
    let u1 = cache.account(&turn1);
    assert_eq!(u1.cache_read, 0);
    assert!(u1.cache_write > 0);
    assert_eq!(u1.plain, 0);
    let again = cache.account(&turn1);
    assert_eq!(again.cache_read, u1.cache_write);
    assert_eq!(again.cache_write, 0);
    let turn2 = json!({"model": "m", "system": sys, "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "reply"}]},
        {"role": "user", "content": [{"type": "text", "text": "more",
                                      "cache_control": {"type": "ephemeral"}}]}]});
    let u2 = cache.account(&turn2);
    assert_eq!(
        u2.cache_read, u1.cache_write,
        "string content == one text block"
    );
    assert!(u2.cache_write > 0);
    let other_model = json!({"model": "n", "system": sys, "messages": []});
    assert_eq!(cache.account(&other_model).cache_read, 0);
}

/// The server's modelled usage reaches the CLI's own accounting, and a resumed second
/// turn reads the first turn's cache.
#[test]
fn harness_usage_reaches_cli_and_resume_reads_cache() {
    let server = ApiServer::start();
    let sb = Sandbox::real(&server);
    let first = run(sb.direct(["-p", "hello", "--output-format", "json"]), b"");
    assert!(first.status.success(), "{}", describe(&first));
    let result: Value = serde_json::from_slice(&first.stdout).expect("json");
    let req1 = server.last_main().expect("request");
    assert_eq!(result["usage"]["input_tokens"], req1.plain);
    assert_eq!(
        result["usage"]["cache_creation_input_tokens"],
        req1.cache_write
    );
    assert_eq!(result["usage"]["cache_read_input_tokens"], req1.cache_read);
    assert!(req1.cache_write > 0);
    let sid = result["session_id"]
        .as_str()
        .expect("session_id")
        .to_string();
    assert!(sb.session_file(&sid).is_some(), "{:?}", sb.session_files());

    let second = run(
        sb.direct(["-p", "second", "--resume", &sid, "--output-format", "json"]),
        b"",
    );
    assert!(second.status.success(), "{}", describe(&second));
    let req2 = server.last_main().expect("request");
    assert_eq!(req2.user_texts(), ["hello", "second"]);
    assert_eq!(req2.assistant_texts(), ["reply 1: hello"]);
    assert_eq!(req2.session_id().as_deref(), Some(sid.as_str()));
    assert!(req2.cache_read > 0, "{req2:?}");
    assert_eq!(server.main_requests().len(), 2);
}
