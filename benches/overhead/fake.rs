//! The fake CLI: this bench binary itself, started with `OVERHEAD_FAKE` set,
//! so no interpreter start-up blurs the figures (the tests' fake,
//! `tests/fixtures/fake-claude`, is Python). It answers the shim's probes,
//! reads all of stdin, and prints what the real CLI would.

use serde_json::json;
use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use crate::{ASSISTANT_UUID, DIRECT_SESSION, FAKE_BYTES_ENV, REPLY_BYTES};

fn reply_text() -> String {
    let mut s = String::from("fake reply:");
    while s.len() < REPLY_BYTES {
        s.push_str(" lorem ipsum dolor sit amet");
    }
    s.truncate(REPLY_BYTES);
    s
}

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let eq = format!("{flag}=");
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(&eq).map(str::to_owned)
        }
    })
}

/// (first part, rest) of what the fake prints for one turn.
fn fake_output(args: &[String]) -> (Vec<u8>, Vec<u8>) {
    let session = flag_value(args, "--resume")
        .or_else(|| flag_value(args, "--session-id"))
        .unwrap_or_else(|| DIRECT_SESSION.to_owned());
    let reply = reply_text();
    if flag_value(args, "--output-format").as_deref() == Some("stream-json") {
        // Keys in the CLI's own order ("type" first): the observer relies on it.
        let text = serde_json::to_string(&reply).expect("json string");
        let init = format!(
            r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session}","tools":[],"model":"fake","uuid":"00000000-0000-4000-8000-0000000000a1"}}"#
        );
        let assistant = format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","model":"fake","content":[{{"type":"text","text":{text}}}],"stop_reason":null}},"parent_tool_use_id":null,"session_id":"{session}","uuid":"{ASSISTANT_UUID}"}}"#
        );
        let result = json!({"type": "result", "subtype": "success", "is_error": false,
            "result": reply, "session_id": session, "total_cost_usd": 0.01,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 375}});
        (
            format!("{init}\n").into_bytes(),
            format!("{assistant}\n{result}\n").into_bytes(),
        )
    } else {
        let (first, rest) = reply.split_at(1);
        (first.as_bytes().to_vec(), format!("{rest}\n").into_bytes())
    }
}

pub fn main(mode: &str) -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    if args.len() == 1 && (args[0] == "--version" || args[0] == "--help") {
        let text = if args[0] == "--version" {
            "2.1.330 (Claude Code)\n"
        } else {
            // One option per line, as the real `--help` (the probe reads the
            // first column); the hidden `--resume-session-at` is found in
            // the binary, which this string puts there.
            "Usage: claude [options] [command] [prompt]\n  -r, --resume [value]  Resume\n  \
             --fork-session  Fork\n  --session-id <uuid>  Use\n  --output-format <format>  \
             Format\n  (hidden: --resume-session-at <id>)\n"
        };
        let _ = out.write_all(text.as_bytes());
        std::process::exit(0);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let _ = stdin.lock().read_to_end(&mut Vec::new());
    }
    match mode {
        "bytes" | "lines" => {
            let total: u64 = std::env::var(FAKE_BYTES_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1 << 30);
            let chunk = if mode == "lines" {
                json_lines_chunk()
            } else {
                text_chunk()
            };
            // write(2) on fd 1, unbuffered: std's line-buffered stdout would
            // rescan every partial pipe write for its last newline.
            // SAFETY: fd 1 is open for the life of the process.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
            let mut left = total;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                let mut part = &chunk[..n];
                while !part.is_empty() {
                    match nix::unistd::write(fd, part) {
                        Ok(w) => part = &part[w..],
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(_) => std::process::exit(1),
                    }
                }
                left -= n as u64;
            }
        }
        _ => {
            let (first, rest) = fake_output(&args);
            let _ = out.write_all(&first);
            let _ = out.flush();
            if mode == "ttfb" {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = out.write_all(&rest);
        }
    }
    let _ = out.flush();
    std::process::exit(0)
}

/// 1 MiB of text in 100-byte lines.
pub fn text_chunk() -> Vec<u8> {
    let mut v = Vec::with_capacity(1 << 20);
    let mut i = 0u32;
    while v.len() < 1 << 20 {
        v.push(if v.len() % 100 == 99 {
            b'\n'
        } else {
            b'a' + (i % 26) as u8
        });
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12345) >> 3;
    }
    v
}

/// ~1 MiB of stream-json `stream_event` lines of ~1 KiB (what
/// `--include-partial-messages` prints, in the CLI's key order), cut at a
/// line end.
pub fn json_lines_chunk() -> Vec<u8> {
    let text = serde_json::to_string(&"lorem ipsum dolor sit amet ".repeat(36)).expect("json");
    let line = format!(
        r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{text}}}}},"session_id":"{DIRECT_SESSION}","parent_tool_use_id":null,"uuid":"00000000-0000-4000-8000-0000000000e1"}}"#
    );
    let mut v = Vec::with_capacity(1 << 20);
    while v.len() + line.len() < 1 << 20 {
        v.extend_from_slice(line.as_bytes());
        v.push(b'\n');
    }
    v
}
