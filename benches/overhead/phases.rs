//! In-process timings of the steps of a managed turn (the same library code
//! the shim runs), and the database's WAL states they start from.

use claude_shim::identity;
use claude_shim::store::Store;
use std::time::Instant;

use crate::measure::{ms, quantile};
use crate::setup::{checkpoint, grow_wal, Case, Setup};
use crate::DIRECT_SESSION;

/// Median wall time of `f` over `n` calls, in ms.
pub fn time_ms(n: usize, mut f: impl FnMut()) -> f64 {
    f();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            ms(t.elapsed())
        })
        .collect();
    quantile(&v, 0.5)
}

pub fn wal_bytes(s: &Setup) -> u64 {
    std::fs::metadata(s.shim_home.join("shim.db-wal")).map_or(0, |m| m.len())
}

/// In-process timings of the steps of a managed turn (the same library code
/// the shim runs), to see where the managed overhead goes.
pub fn phases(s: &Setup, cases: &[Case], n: usize) {
    println!("\n### Where the managed time goes (in-process, median of {n} calls, ms)\n");
    println!(
        "| {:<52} | {:>8} | {:>8} | {:>8} |",
        "step", cases[0].label, cases[1].label, cases[2].label
    );
    println!("|{}|{}", "-".repeat(54), "----------|".repeat(3));
    let per_size = |label: &str, f: &dyn Fn(&Case) -> f64| {
        let v: Vec<f64> = cases.iter().map(f).collect();
        println!(
            "| {label:<52} | {:>8.3} | {:>8.3} | {:>8.3} |",
            v[0], v[1], v[2]
        );
    };
    per_size("read the prompt file (stand-in for reading stdin)", &|c| {
        time_ms(n, || {
            std::hint::black_box(std::fs::read(&c.resumed).expect("read"));
        })
    });
    per_size(
        "decide::understand (UTF-8 check, every dialect parses)",
        &|c| {
            let bytes: bytes::Bytes = std::fs::read(&c.resumed).expect("read").into();
            time_ms(n, || {
                let prompt = claude_shim::prompt::Prompt::Stdin {
                    bytes: bytes.clone(),
                };
                std::hint::black_box(claude_shim::turn::understand::understand(&prompt));
            })
        },
    );
    per_size(
        "  of which cloning the prompt once (memcpy + page faults)",
        &|c| {
            let bytes = std::fs::read(&c.resumed).expect("read");
            time_ms(n, || {
                std::hint::black_box(bytes.clone());
            })
        },
    );
    per_size(
        "identity::chain over the user turns (once per lookup/pin)",
        &|c| {
            time_ms(n, || {
                std::hint::black_box(
                    c.users
                        .iter()
                        .fold(identity::Chain::empty(), |ch, u| ch.user(u)),
                );
            })
        },
    );
    // The output observer, alone (what the tee feeds every chunk to).
    for (label, format, chunk) in [
        (
            "observer: text output, GB/s (keeps the start for the hash)",
            claude_shim::invocation::OutputFormat::Text,
            text_chunk(),
        ),
        (
            "observer: stream-json lines of ~1 KiB, GB/s",
            claude_shim::invocation::OutputFormat::StreamJson,
            json_lines_chunk(),
        ),
    ] {
        let rate = |mib: usize| {
            let t = Instant::now();
            let mut o = claude_shim::observe::Observer::new(format);
            for _ in 0..mib {
                for part in chunk.chunks(64 << 10) {
                    o.feed(part);
                }
            }
            std::hint::black_box(o.finish());
            (mib * chunk.len()) as f64 / t.elapsed().as_secs_f64() / 1e9
        };
        let v: Vec<f64> = (0..5).map(|_| rate(64)).collect();
        println!(
            "| {label:<52} | {:>8.2} | {:>8} | {:>8} |",
            quantile(&v, 0.5),
            "″",
            "″"
        );
    }
    // Continuation by content: a prompt no dialect reads, matched against
    // the scope's kept prompts (64, the most a turn tries: 63 of other
    // conversations, whose replies it does not hold, and its own last run).
    per_size(
        "continuation by content: 64 kept prompts, one matches",
        &|c| {
            let (store_place, args, caps, text) = content_case(c.size);
            time_ms(n, || {
                let conv =
                    claude_shim::turn::content::by_content(&store_place, &args, &caps, &text)
                        .expect("lookup");
                assert!(conv.is_some(), "the prompt continues its last run");
            })
        },
    );
    per_size(
        "  of which continuation::continues on the match alone",
        &|c| {
            let (earlier, reply, text, turns) = marker_prompts(c.size);
            let replies = [reply];
            let e = claude_shim::continuation::Earlier {
                prompt: &earlier,
                replies: &replies,
                turns,
            };
            time_ms(n, || {
                assert!(claude_shim::continuation::continues(&text, &e).is_some());
            })
        },
    );
    // The database: opening it is the same for every size.
    let node = identity::Chain::empty()
        .user("no such turn")
        .node(&identity::ScopeParts::default().scope());
    let open_and_find = || {
        let store = Store::open_in(&s.shim_home).expect("open store");
        std::hint::black_box(store.find_pins(&node).expect("find"));
    };
    checkpoint(s);
    let empty = time_ms(n, open_and_find);
    let wal0 = wal_bytes(s);
    grow_wal(s, 480);
    let wal_half = wal_bytes(s);
    let half = time_ms(n, open_and_find);
    checkpoint(s);
    grow_wal(s, 980);
    let wal_full = wal_bytes(s);
    let full = time_ms(n, open_and_find);
    checkpoint(s);
    for (label, t) in [
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal0 as f64 / 1048576.0
            ),
            empty,
        ),
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal_half as f64 / 1048576.0
            ),
            half,
        ),
        (
            format!(
                "Store::open_in + find_pins, WAL {:.1} MiB",
                wal_full as f64 / 1048576.0
            ),
            full,
        ),
    ] {
        println!("| {label:<52} | {t:>8.3} | {:>8} | {:>8} |", "″", "″");
    }
    println!(
        "\nThe shim closes the database without a checkpoint, so the WAL holds up to\n\
         wal_autocheckpoint (1000 pages, ~4 MiB) and the next process, the first to open it,\n\
         rebuilds the WAL index by reading all of it."
    );
}

/// A transcript of about `size` bytes as a client that marks only replies
/// writes it (no dialect reads it): the prompt of the run before, its reply,
/// and the new prompt.
fn marker_prompts(size: usize) -> (String, String, String, usize) {
    let mut history: Vec<(String, String)> = Vec::new();
    let render = |h: &[(String, String)], cur: &str| {
        let mut parts = Vec::new();
        for (u, a) in h {
            parts.push(u.clone());
            parts.push(format!("--- previous reply ---\n{a}"));
        }
        parts.push(cur.to_owned());
        parts.join("\n\n")
    };
    let mut k = 0;
    while render(&history, "x").len() < size {
        k += 1;
        let body = "lorem ipsum dolor sit amet ".repeat(20);
        history.push((
            format!("question {k}: {body}"),
            format!("answer {k}: {body}"),
        ));
    }
    let (last_q, last_a) = history.pop().expect("one turn at least");
    let earlier = render(&history, &last_q);
    let turns = history.len() + 1;
    history.push((last_q, last_a.clone()));
    let text = render(&history, "and the next question?");
    (earlier, last_a, text, turns)
}

/// A store with 64 kept prompts of one scope, the last of them the run
/// `text` continues; and what a turn looks it up with.
fn content_case(
    size: usize,
) -> (
    claude_shim::turn::lookup::Place,
    claude_shim::argv::ParsedArgs,
    claude_shim::probe::Capabilities,
    String,
) {
    use claude_shim::store::pins::{NewPin, Ownership};
    use claude_shim::store::prompts::Kept;
    let dir = std::env::temp_dir();
    let place = claude_shim::turn::lookup::Place {
        store: claude_shim::turn::lookup::SharedStore::new(Store::in_memory().expect("store")),
        config_dir: dir.join("claude-shim-bench-config"),
        cwd: "/bench".into(),
    };
    let args = claude_shim::argv::parse(&["-p".into()]).expect("args");
    let caps = claude_shim::probe::Capabilities {
        version: "2.1.330".into(),
        resume: true,
        fork_session: true,
        session_id: true,
        resume_session_at: true,
    };
    let scope = claude_shim::turn::lookup::scope_of(&place, &args, &caps);
    let (earlier, reply, text, turns) = marker_prompts(size);
    let mut store = place.store.lock();
    for i in 0..64 {
        let mine = i == 63;
        let prompt = match mine {
            true => earlier.clone(),
            false => format!("another conversation {i}: {}", "words ".repeat(150)),
        };
        let replies = vec![match mine {
            true => reply.clone(),
            false => format!("a reply of conversation {i} that this prompt never holds"),
        }];
        let mut pin = NewPin::of_turns(
            "6e8e0435-8e12-4245-aa25-f674ed4e97a7",
            "0b8e0435-8e12-4245-aa25-f674ed4e97a7",
            "/bench",
            &[&prompt],
            &replies[0],
        );
        pin.parts = scope.clone();
        pin.turns = if mine { turns } else { 1 };
        pin.scope = scope.scope();
        let id = store.add_pin(&pin, Ownership::Kept, "/c").expect("pin");
        store
            .keep_prompt(
                id,
                &pin.scope,
                &Kept {
                    prompt: &prompt,
                    replies: &replies,
                    continues: None,
                },
            )
            .expect("keep");
    }
    drop(store);
    (place, args, caps, text)
}

/// 1 MiB of text in 100-byte lines.
fn text_chunk() -> Vec<u8> {
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
fn json_lines_chunk() -> Vec<u8> {
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
