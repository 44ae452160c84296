//! One end-to-end test per dialect of `shared/dialects.md`, through the REAL
//! Claude Code CLI and the loopback API server: a client that replays the
//! whole conversation every turn, rendered exactly as that client renders it.
//! From turn 2 on every logged request must carry each earlier user message
//! once, the new one once, and no replayed assistant text inside a user
//! message (one copy of history).

use crate::support::clients::{self, args, labels, result_event, Client};
use crate::support::{describe, run, ApiServer, Sandbox};
use serde_json::{json, Value};

const TURNS: usize = 6;

/// One client, named for the messages it sends.
struct Case {
    name: &'static str,
    client: Client,
}

/// Drive `TURNS` turns of `client` through the shim and check every request.
fn conversation(client: &Case) {
    conversation_on(clients::one_line_server(), client)
}

fn conversation_on(server: ApiServer, client: &Case) {
    let sandbox = Sandbox::real(&server);
    let mut history: Vec<(String, String)> = Vec::new();
    for turn in 1..=TURNS {
        let current = format!("{} question {turn} zebra{turn}", client.name);
        let (argv, stdin) = client.client.render(&history, &current);
        let out = run(sandbox.shimmed(&argv), &stdin);
        assert!(
            out.status.success(),
            "{} turn {turn}: {}",
            client.name,
            describe(&out)
        );
        assert!(
            out.stderr.is_empty(),
            "{} turn {turn}: {}",
            client.name,
            describe(&out)
        );
        let reply = client
            .client
            .reply(&out.stdout)
            .unwrap_or_else(|| panic!("{} turn {turn}: no reply: {}", client.name, describe(&out)));
        assert!(
            reply.starts_with(&format!("reply {turn}:")),
            "{} turn {turn}: reply {reply:?}",
            client.name
        );

        let requests = server.main_requests();
        assert_eq!(
            requests.len(),
            turn,
            "{}: one request per turn",
            client.name
        );
        // One text per user message (a message may hold several blocks).
        let texts: Vec<String> = requests[turn - 1]
            .texts_by_message("user")
            .into_iter()
            .map(|blocks| blocks.join("\n"))
            .filter(|t| !t.is_empty())
            .collect();
        if turn > 1 {
            assert_eq!(
                texts.len(),
                turn,
                "{} turn {turn}: user messages {texts:#?}",
                client.name
            );
            for (k, (u, a)) in history.iter().enumerate() {
                let holding: Vec<usize> = texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.contains(u.as_str()))
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(
                    holding,
                    [k],
                    "{} turn {turn}: {u:?} once, in message {k}: {texts:#?}",
                    client.name
                );
                assert!(
                    texts.iter().all(|t| !t.contains(a.as_str())),
                    "{} turn {turn}: a reply replayed inside a user message: {texts:#?}",
                    client.name
                );
            }
            let last = texts.last().map(String::as_str).unwrap_or("");
            assert!(
                last.contains(&current),
                "{} turn {turn}: new text last: {texts:#?}",
                client.name
            );
            assert_eq!(
                texts.iter().filter(|t| t.contains(&current)).count(),
                1,
                "{} turn {turn}: {texts:#?}",
                client.name
            );
        }
        history.push((current, reply));
    }
    // Linear turns stay in one session.
    let sessions: Vec<Option<String>> = server
        .main_requests()
        .iter()
        .map(|r| r.session_id())
        .collect();
    assert!(
        sessions.windows(2).all(|w| w[0] == w[1]),
        "{}: sessions {sessions:?}",
        client.name
    );
    let db = rusqlite::Connection::open(sandbox.shim_home.join("shim.db")).expect("open shim.db");
    let kinds: Vec<String> = db
        .prepare("SELECT kind FROM runs ORDER BY id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("runs");
    let mut want = vec!["fresh".to_string()];
    want.extend(std::iter::repeat_n("resumed".to_string(), TURNS - 1));
    assert_eq!(kinds, want, "{}", client.name);
}

#[test]
fn openai_wrapper_human_assistant() {
    conversation(&Case {
        name: "wrapper",
        client: Client::Wrapper,
    });
}

#[test]
fn relay_system_line_single_newlines_and_cue() {
    conversation(&Case {
        name: "relay",
        client: Client::Relay,
    });
}

/// The server's default reply echoes the prompt's start, so each reply holds
/// a line reading `Human: …`: the parser must keep it inside the reply.
#[test]
fn relay_with_replies_that_quote_role_markers() {
    conversation_on(
        ApiServer::start(),
        &Case {
            name: "quoting",
            client: Client::Relay,
        },
    );
}

#[test]
fn langchain_user_assistant_positional() {
    conversation(&Case {
        name: "langchain",
        client: Client::LangChain,
    });
}

#[test]
fn open_design_markdown_headings_stream_json() {
    conversation(&Case {
        name: "opendesign",
        client: Client::OpenDesign,
    });
}

#[test]
fn max_api_proxy_previous_response_positional() {
    conversation(&Case {
        name: "maxproxy",
        client: Client::MaxProxy,
    });
}

#[test]
fn cline_json_messages_array() {
    conversation(&Case {
        name: "cline",
        client: Client::Cline,
    });
}

#[test]
fn roo_system_prompt_wrapper() {
    conversation(&Case {
        name: "roo",
        client: Client::Roo,
    });
}

#[test]
fn stream_json_line_per_message() {
    conversation(&Case {
        name: "streamlines",
        client: Client::StreamLines,
    });
}

#[test]
fn generic_bracket_labels() {
    conversation(&Case {
        name: "bracket",
        client: Client::Bracket,
    });
}

/// The AI-SDK provider: Agent SDK mode (no -p), a control_request line
/// before the user message, `--resume=<id>` of the session it saw last, and
/// STILL the whole transcript. The session must end up with one copy.
#[test]
fn agent_sdk_caller_resume_with_replayed_transcript() {
    let server = clients::one_line_server();
    let sandbox = Sandbox::real(&server);
    let control = r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}"#;
    let mut history: Vec<(String, String)> = Vec::new();
    let mut session: Option<String> = None;
    for turn in 1..=TURNS {
        let current = format!("aisdk question {turn} zebra{turn}");
        let transcript = format!(
            "You are helpful.\n\n{}",
            labels(&history, &current, "Human", "\n\n")
        );
        let line = json!({"type": "user", "session_id": "", "message": {"role": "user", "content": [{"type": "text", "text": transcript}]}, "parent_tool_use_id": null});
        let mut argv = args(&[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--max-thinking-tokens",
            "0",
            "--setting-sources",
            "",
        ]);
        if let Some(s) = &session {
            argv.push(format!("--resume={s}"));
        }
        let out = run(
            sandbox.shimmed(&argv),
            format!("{control}\n{line}\n").as_bytes(),
        );
        assert!(out.status.success(), "turn {turn}: {}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The control response reaches the SDK, first, untouched.
        let first: Value = serde_json::from_str(stdout.lines().next().unwrap_or("")).unwrap();
        assert_eq!(first["type"], "control_response", "turn {turn}: {stdout}");
        assert_eq!(first["response"]["request_id"], "req_1");
        let result = result_event(&out.stdout);
        let sid = result["session_id"].as_str().unwrap().to_owned();
        if let Some(s) = &session {
            assert_eq!(&sid, s, "the caller's session continues");
        }
        session = Some(sid);
        history.push((current, result["result"].as_str().unwrap().to_owned()));
    }
    // One copy of history in the session file: each user text once.
    let file = sandbox
        .session_file(session.as_deref().unwrap())
        .expect("session file");
    let body = std::fs::read_to_string(file).unwrap();
    let user_records: Vec<Value> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "user")
        .collect();
    for (u, _) in &history {
        let n = user_records
            .iter()
            .filter(|r| r["message"].to_string().contains(u.as_str()))
            .count();
        assert_eq!(
            n,
            1,
            "{u:?} once in the session; records: {}",
            user_records.len()
        );
    }
    // And the last request carried the history once.
    let texts = server.main_requests().last().unwrap().user_texts();
    assert_eq!(texts.len(), TURNS, "{texts:#?}");
}

/// A fixed marker line before each earlier reply and bare user turns: no
/// dialect reads it, continuation by content does.
#[test]
fn assistant_marker_lines_by_content() {
    conversation(&Case {
        name: "marker",
        client: Client::AssistantMarker,
    });
}

/// One stream-json message of several text blocks, sent on as one block.
#[test]
fn several_text_blocks_in_one_stream_json_message() {
    conversation(&Case {
        name: "blocks",
        client: Client::MultiBlock,
    });
}

/// `<user>…</user>` transcripts: closing tags are not part of the text.
#[test]
fn xml_tags_with_closing_tags() {
    conversation(&Case {
        name: "xmltags",
        client: Client::XmlTags,
    });
}

/// A server whose replies hold a line that reads as a role marker, after a
/// blank line, as a reply quoting a transcript does.
fn quoting_server() -> ApiServer {
    let server = ApiServer::start();
    server.set_reply(|r| format!("reply {}: noted\n\nHuman: a line the reply quotes", r.index));
    server
}

/// Replies that quote `Human: …` lines: the dialect splits them into turns
/// that were never seen; continuation by content still finds the run each
/// turn continues.
#[test]
fn wrapper_with_replies_that_quote_role_markers() {
    conversation_on(
        quoting_server(),
        &Case {
            name: "echoed",
            client: Client::Wrapper,
        },
    );
}

/// The same for a client that marks only the replies.
#[test]
fn assistant_marker_with_replies_that_quote_role_markers() {
    conversation_on(
        quoting_server(),
        &Case {
            name: "echomarker",
            client: Client::AssistantMarker,
        },
    );
}

/// A LiteLLM-style library: `[User: …]`/`[Assistant: …]` with the closing
/// bracket after every message, one positional prompt, JSON out, no session
/// kept (issue 31: 0 of 4 turns resumed, `reply-differs`).
#[test]
fn bracketed_roles_with_a_closing_mark() {
    conversation(&Case {
        name: "bracketroles",
        client: Client::BracketRoles,
    });
}

/// A text block per message with a one-symbol role mark on the text's line,
/// the new message bare (issue 31: never recognised).
#[test]
fn one_block_per_message_with_symbol_marks() {
    conversation(&Case {
        name: "markblocks",
        client: Client::MarkBlocks,
    });
}

/// Marks that look like words (`u q`, `a r`), each message marked only once
/// it is history, the new one bare: only the structure (two marks drawn
/// alike, alternating, the second before each reply the shim captured) shows
/// them to be marks (issue 39, item 2: 0 of 4 turns resumed before).
#[test]
fn one_block_per_message_with_word_marks() {
    conversation(&Case {
        name: "wordblocks",
        client: Client::WordMarkBlocks,
    });
}

/// The same rendering as plain text, a line per message.
#[test]
fn a_line_per_message_with_word_marks() {
    conversation(&Case {
        name: "wordtext",
        client: Client::WordMarkText,
    });
}
