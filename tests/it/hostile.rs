//! Hostile input at scale: argv, every dialect parser, the stream-json input
//! reader and the output observer take arbitrary bytes without panicking,
//! allocate at most a small multiple of their input, and take time linear in
//! it (checked at two sizes: ×8 the input may cost at most ×32 the time);
//! prompts that are not UTF-8 reach the CLI byte for byte.
//!
//! Allocation is counted per thread by this binary's global allocator (peak
//! bytes live above the level before the call). `PROPTEST_CASES` scales the
//! property tests (default here: 2,000 per property; 64 for the ones that
//! start processes).

use crate::support::process::{assert_same, both, run, Input};
use crate::support::sandbox::{Sandbox, NO_ARGS};
use claude_shim::dialect::{self, Detection};
use claude_shim::invocation::OutputFormat;
use claude_shim::observe::Observer;
use claude_shim::prompt::{self, Chunks, Prompt};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::time::{Duration, Instant};

// ---- counting allocator ------------------------------------------------------------

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get() + n as isize;
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|l| l.set(l.get() - n as isize));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are const-initialised thread-locals without destructors.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new);
        if !p.is_null() {
            shrank(layout.size());
            grew(new);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak bytes allocated (live at once) by `f` on this thread, and its time.
fn measure<T>(f: impl FnOnce() -> T) -> (usize, Duration, T) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    let peak = PEAK.with(Cell::get) - base;
    (peak.max(0) as usize, took, out)
}

/// The bound: a small multiple of the input, plus a fixed allowance (buffers
/// of 64 KiB, a serde_json `Value` per JSON token…).
const FACTOR: usize = 40;
const SLACK: usize = 256 << 10;

#[track_caller]
fn within(what: &str, input: usize, peak: usize) {
    assert!(
        peak <= FACTOR * input + SLACK,
        "{what}: {peak} bytes allocated for {input} bytes of input ({:.1}×)",
        peak as f64 / input.max(1) as f64
    );
}

// ---- the parsers, as the shim calls them ------------------------------------------

fn parse_argv(args: &[OsString]) {
    let _ = claude_shim::argv::parse(args);
    let _ = claude_shim::invocation::classify(args, Default::default());
}

fn parse_text(text: &str) {
    let detection = dialect::detect(text, None);
    let _ = detection.conversation(text);
    for name in dialect::names() {
        if let Detection::Recognised(c) = dialect::detect(text, Some(name)) {
            let _ = c.prior_user_turns().count();
        }
    }
    let _ = claude_shim::identity::ReplyHash::of(text);
}

fn observe(bytes: &[u8], chunk: usize) {
    for format in [
        OutputFormat::Text,
        OutputFormat::Json,
        OutputFormat::StreamJson,
    ] {
        let mut o = Observer::new(format);
        for c in bytes.chunks(chunk.max(1)) {
            o.feed(c);
        }
        let obs = o.finish();
        assert_eq!(obs.bytes as usize, bytes.len());
    }
}

/// Input arriving `size` bytes at a time (a pipe gives at most 64 KiB a read).
struct Trickle<'a> {
    data: &'a [u8],
    size: usize,
}

impl Chunks for Trickle<'_> {
    fn chunk(&mut self, _patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>> {
        let n = self.size.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(Some(head.to_vec()))
    }
}

fn read_stream(bytes: &[u8], chunk: usize) -> Prompt {
    let mut input = Trickle {
        data: bytes,
        size: chunk.max(1),
    };
    let p = prompt::read_stream_json(&mut input).expect("in-memory input cannot fail");
    let total = match &p {
        Prompt::StreamJson {
            before,
            line,
            more,
            after,
            ..
        } => before.len() + line.len() + more.iter().map(Vec::len).sum::<usize>() + after.len(),
        Prompt::None { bytes, .. } => bytes.len(),
        other => panic!("{other:?}"),
    };
    assert!(total <= bytes.len(), "bytes appeared from nowhere");
    if let Prompt::StreamJson { line, .. } = &p {
        let _ = prompt::stream_text(line);
        let _ = prompt::replace_stream_text(line, "x");
    }
    p
}

// ---- property tests ----------------------------------------------------------------

fn cases(n: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    ProptestConfig {
        cases: n,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::default()
    }
}

/// Text made of role markers, JSON and XML fragments, newlines and noise.
fn hostile_text() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("Human:".to_string()),
        Just("Assistant:".to_string()),
        Just("User:".to_string()),
        Just("System:".to_string()),
        Just("## user\n".to_string()),
        Just("## assistant\n".to_string()),
        Just("# Instructions (read first)\n".to_string()),
        Just("---\n# User request\n".to_string()),
        Just("<previous_response>".to_string()),
        Just("</previous_response>".to_string()),
        Just("<system>".to_string()),
        Just("</system>".to_string()),
        Just("<thinking>".to_string()),
        Just("[{\"role\":\"user\",\"content\":".to_string()),
        Just("{\"messages\":[".to_string()),
        Just("\"}]".to_string()),
        Just("**User:**".to_string()),
        Just("[Assistant]".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        Just("\r\n".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{feff}".to_string()),
        "\\PC{0,12}",
    ];
    prop::collection::vec(part, 0..200).prop_map(|v| v.concat())
}

/// Claude Code output lines: real event shapes, truncated and mangled.
fn hostile_output() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(br#"{"type":"system","subtype":"init","session_id":"6e8e0435-8e12-4245-aa25-f674ed4e97a7"}"#.to_vec()),
        Just(br#"{"type":"assistant","uuid":"u","message":{"content":[{"type":"text","text":"hi"}]}}"#.to_vec()),
        Just(br#"{"type":"assistant","message":{"content":"not an array"}}"#.to_vec()),
        Just(br#"{"type":"result","is_error":"yes","usage":{"input_tokens":-1},"total_cost_usd":"x"}"#.to_vec()),
        Just(br#"{"type":"result","subtype":"success","result":12,"session_id":null}"#.to_vec()),
        Just(b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[".to_vec()),
        prop::collection::vec(any::<u8>(), 0..80),
    ];
    prop::collection::vec((line, any::<bool>()), 0..40).prop_map(|lines| {
        let mut out = Vec::new();
        for (l, nl) in lines {
            out.extend_from_slice(&l);
            if nl {
                out.push(b'\n');
            }
        }
        out
    })
}

/// Agent SDK input: control lines, user lines of every shape, garbage.
fn hostile_input() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(br#"{"type":"control_request","request_id":"1","request":{"subtype":"initialize"}}"#.to_vec()),
        Just(br#"{"type":"user","message":{"role":"user","content":"Human: a\n\nAssistant: b\n\nHuman: c"}}"#.to_vec()),
        Just(br#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"x"},{"type":"image"}]}}"#.to_vec()),
        Just(br#"{"type":"user","message":{"content":[{"type":"text"}]}}"#.to_vec()),
        Just(br#"{"type":"user","message":null}"#.to_vec()),
        Just(br#"{"type":"user"}"#.to_vec()),
        Just(b"{\"type\":\"user\",\"message\":{\"content\":\"\xff\xfe\"}}".to_vec()),
        prop::collection::vec(any::<u8>(), 0..60),
    ];
    prop::collection::vec((line, any::<bool>()), 0..30).prop_map(|lines| {
        let mut out = Vec::new();
        for (l, nl) in lines {
            out.extend_from_slice(&l);
            if nl {
                out.push(b'\n');
            }
        }
        out
    })
}

fn hostile_argv() -> impl Strategy<Value = Vec<OsString>> {
    let arg = prop_oneof![
        Just(b"-p".to_vec()),
        Just(b"--".to_vec()),
        Just(b"-".to_vec()),
        Just(b"--resume".to_vec()),
        Just(b"--resume=".to_vec()),
        Just(b"-r".to_vec()),
        Just(b"-pr".to_vec()),
        Just(b"--allowedTools".to_vec()),
        Just(b"--output-format".to_vec()),
        Just(b"stream-json".to_vec()),
        Just(b"--input-format=stream-json".to_vec()),
        Just(b"--model=x".to_vec()),
        Just(b"--session-id".to_vec()),
        Just(b"6e8e0435-8e12-4245-aa25-f674ed4e97a7".to_vec()),
        Just(b"--system-prompt-file".to_vec()),
        Just(b"/dev/zero".to_vec()),
        Just(b"mcp".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        prop::collection::vec(any::<u8>().prop_filter("no NUL", |b| *b != 0), 0..12),
    ];
    prop::collection::vec(arg.prop_map(OsString::from_vec), 0..24)
}

proptest! {
    #![proptest_config(cases(2000))]

    #[test]
    fn argv_never_panics_and_stays_small(args in hostile_argv()) {
        let len: usize = args.iter().map(|a| a.len() + 8).sum();
        let (peak, _, ()) = measure(|| parse_argv(&args));
        within("argv", len, peak);
    }

    #[test]
    fn dialects_never_panic_and_stay_small(text in hostile_text()) {
        let (peak, _, ()) = measure(|| parse_text(&text));
        within("dialects", text.len(), peak);
    }

    #[test]
    fn dialects_take_any_unicode(text in "\\PC{0,2000}") {
        let (peak, _, ()) = measure(|| parse_text(&text));
        within("dialects (unicode)", text.len(), peak);
    }

    #[test]
    fn observer_never_panics_and_stays_small(bytes in hostile_output(), chunk in 1usize..300) {
        let (peak, _, ()) = measure(|| observe(&bytes, chunk));
        within("observer", bytes.len(), peak);
    }

    #[test]
    fn stream_json_reader_never_panics_and_stays_small(bytes in hostile_input(), chunk in 1usize..300) {
        let (peak, _, _) = measure(|| read_stream(&bytes, chunk));
        within("stream-json reader", bytes.len(), peak);
    }

    #[test]
    fn reply_normalisation_never_panics(text in "(<thinking>|</thinking>|\\PC){0,300}") {
        let (peak, _, _) = measure(|| claude_shim::identity::ReplyHash::of(&text));
        within("reply hash", text.len(), peak);
    }
}

// ---- scaling: large adversarial inputs ---------------------------------------------

/// `f` on inputs of two sizes (256 KiB and ×8): allocation within the bound
/// at both, time at most ×32 (linear is ×8, up to ×20 measured where the
/// larger input falls out of the caches; quadratic is ×64).
fn scales<I>(what: &str, make: impl Fn(usize) -> I, len: impl Fn(&I) -> usize, f: impl Fn(&I)) {
    let base = std::env::var("HOSTILE_BASE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256 << 10);
    scales_from(base, what, make, len, f)
}

fn scales_from<I>(
    base: usize,
    what: &str,
    make: impl Fn(usize) -> I,
    len: impl Fn(&I) -> usize,
    f: impl Fn(&I),
) {
    let small = make(base);
    let large = make(base * 8);
    f(&small); // warm up
    let (ps, ts, ()) = measure(|| f(&small));
    let (pl, tl, ()) = measure(|| f(&large));
    within(what, len(&small), ps);
    within(what, len(&large), pl);
    let floor = Duration::from_millis(2);
    let ratio = tl.as_secs_f64() / ts.max(floor).as_secs_f64();
    eprintln!(
        "{what:<40} {:>8} B: {ts:>10.2?} {:>5.1}×mem | {:>8} B: {tl:>10.2?} {:>5.1}×mem | time ×{ratio:.1}",
        len(&small),
        ps as f64 / len(&small) as f64,
        len(&large),
        pl as f64 / len(&large) as f64,
    );
    assert!(
        ratio <= 32.0,
        "{what}: ×8 the input took ×{ratio:.1} the time ({ts:?} → {tl:?})"
    );
}

fn repeat_to(unit: &str, size: usize) -> String {
    unit.repeat(size / unit.len().max(1) + 1)
}

#[test]
fn dialects_scale_linearly() {
    let units = [
        ("Human: x\n\nAssistant: y\n\n", "labels, alternating"),
        ("Human: x\n", "labels, one role only"),
        ("Human:\nAssistant:\nUser:\n", "labels, empty turns mixed"),
        ("## user\nx\n\n## assistant\ny\n\n", "markdown"),
        ("x\n<previous_response>\ny\n</previous_response>\n", "xml"),
        ("<previous_response>\n", "xml, unclosed"),
        ("[User]\nx\n[AI]\ny\n", "generic"),
        ("\r\n", "CRLF only"),
        ("<thinking>", "thinking, unclosed"),
    ];
    for (unit, name) in units {
        scales(
            &format!("dialects: {name}"),
            |n| repeat_to(unit, n),
            String::len,
            |t| parse_text(t),
        );
    }
    scales(
        "dialects: json messages",
        |n| {
            let msg = r#"{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"y"}]},"#;
            format!(
                "[{}{{\"role\":\"user\",\"content\":\"z\"}}]",
                msg.repeat(n / msg.len() + 1)
            )
        },
        String::len,
        |t| parse_text(t),
    );
    scales(
        "dialects: json small numbers",
        |n| format!("[{}0]", "0,".repeat(n / 2)),
        String::len,
        |t| parse_text(t),
    );
}

#[test]
fn observer_scales_linearly() {
    let event = concat!(
        r#"{"type":"assistant","uuid":"6e8e0435-8e12-4245-aa25-f674ed4e97a7","message":{"content":[{"type":"text","text":"some words"}]}}"#,
        "\n"
    );
    for (name, chunk) in [("64 KiB reads", 64 << 10), ("4 KiB reads", 4 << 10)] {
        scales(
            &format!("observer: events, {name}"),
            |n| repeat_to(event, n).into_bytes(),
            Vec::len,
            |b| observe(b, chunk),
        );
        scales(
            &format!("observer: one long line, {name}"),
            |n| {
                let mut line = br#"{"type":"result","result":""#.to_vec();
                line.extend(std::iter::repeat_n(b'a', n));
                line.extend_from_slice(b"\"}\n");
                line
            },
            Vec::len,
            |b| observe(b, chunk),
        );
    }
}

/// An Agent SDK user message carrying a large attachment (an image as
/// base64) arrives in pipe-sized reads.
#[test]
fn stream_json_reader_scales_linearly() {
    let user_line = |n: usize| {
        let mut line = br#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","data":""#.to_vec();
        line.extend(std::iter::repeat_n(b'A', n));
        line.extend_from_slice(br#""}},{"type":"text","text":"what is this?"}]}}"#);
        line.push(b'\n');
        line
    };
    for (name, chunk) in [("64 KiB reads", 64 << 10), ("4 KiB reads", 4 << 10)] {
        // 4 MiB and 32 MiB (photos, base64): both well out of the caches,
        // so the time ratio is the algorithm's.
        scales_from(
            4 << 20,
            &format!("stream-json reader: one big line, {name}"),
            user_line,
            Vec::len,
            |b| {
                let p = read_stream(b, chunk);
                assert!(matches!(p, Prompt::StreamJson { .. }));
            },
        );
        scales(
            &format!("stream-json reader: control lines, {name}"),
            |n| {
                let control = "{\"type\":\"control_request\",\"request_id\":\"1\",\"request\":{\"subtype\":\"initialize\"}}\n";
                let mut b = repeat_to(control, n).into_bytes();
                b.extend_from_slice(&user_line(10));
                b
            },
            Vec::len,
            |b| {
                let _ = read_stream(b, chunk);
            },
        );
        scales(
            &format!("stream-json reader: one line per message, {name}"),
            |n| {
                let msg = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"one message\"}}\n";
                repeat_to(msg, n).into_bytes()
            },
            Vec::len,
            |b| {
                let _ = read_stream(b, chunk);
            },
        );
    }
}

#[test]
fn argv_scales_linearly() {
    scales(
        "argv: many flags",
        |n| {
            let unit = ["--allowedTools", "Bash", "Read", "--add-dir", "/x"];
            let per: usize = unit.iter().map(|a| a.len()).sum();
            let mut v: Vec<OsString> = Vec::new();
            for _ in 0..n / per + 1 {
                v.extend(unit.map(OsString::from));
            }
            v.push("-p".into());
            v
        },
        |v| v.iter().map(|a| a.len() + 8).sum(),
        |v| parse_argv(v),
    );
    scales(
        "argv: one huge prompt",
        |n| {
            vec![
                OsString::from("-p"),
                OsString::from("Human: x\n\n".repeat(n / 10)),
            ]
        },
        |v| v.iter().map(|a| a.len()).sum(),
        |v| parse_argv(v),
    );
}

// ---- invalid UTF-8 reaches the CLI byte for byte ----------------------------------

/// Bytes that are not UTF-8: random bytes with at least one invalid sequence,
/// sometimes inside a transcript whose other turns are fine.
fn not_utf8() -> impl Strategy<Value = Vec<u8>> {
    let invalid = prop_oneof![
        Just(b"\xff".to_vec()),
        Just(b"\xc3\x28".to_vec()),
        Just(b"\xe2\x82".to_vec()),
        Just(b"\xed\xa0\x80".to_vec()),
        Just(b"\xf8\x88\x80\x80\x80".to_vec()),
    ];
    (
        prop::collection::vec(any::<u8>().prop_filter("no NUL", |b| *b != 0), 0..200),
        invalid,
        0usize..200,
        any::<bool>(),
    )
        .prop_map(|(mut bytes, bad, at, transcript)| {
            let at = at.min(bytes.len());
            bytes.splice(at..at, bad);
            if transcript {
                let mut t = b"Human: hello\n\nAssistant: hi there\n\nHuman: ".to_vec();
                t.extend_from_slice(&bytes);
                t
            } else {
                bytes
            }
        })
        .prop_filter("not UTF-8", |b| std::str::from_utf8(b).is_err())
}

proptest! {
    #![proptest_config(cases(64))]

    /// On stdin (text and stream-json input): the CLI reads the same bytes.
    #[test]
    fn invalid_utf8_stdin_reaches_the_cli_byte_for_byte(bytes in not_utf8(), stream in any::<bool>()) {
        let w = Sandbox::scripted();
        let input = if stream {
            let mut line = b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"".to_vec();
            line.extend_from_slice(&bytes);
            line.extend_from_slice(b"\"}}\n");
            line
        } else {
            bytes.clone()
        };
        let args: &[&str] = if stream {
            &["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        } else {
            &["-p"]
        };
        let (shim, direct) = both(&w, args, &[("FAKE_ECHO_STDIN", "1")], || {
            Input::Bytes(input.clone())
        });
        prop_assert_eq!(&direct.stdout, &input);
        assert_same(&shim, &direct);
    }

    /// As the positional prompt: argv reaches the CLI unchanged.
    #[test]
    fn invalid_utf8_argument_reaches_the_cli_byte_for_byte(bytes in not_utf8()) {
        let w = Sandbox::scripted();
        let (a_shim, a_direct) = (w.file("argv-shim"), w.file("argv-direct"));
        let prompt = OsString::from_vec(bytes);
        let mut shim = w.shim();
        shim.arg("-p").arg(&prompt).env("FAKE_ARGV_OUT", &a_shim);
        let mut direct = w.direct(NO_ARGS);
        direct.arg("-p").arg(&prompt).env("FAKE_ARGV_OUT", &a_direct);
        let (s, d) = (run(shim, Input::Null), run(direct, Input::Null));
        assert_same(&s, &d);
        prop_assert_eq!(std::fs::read(&a_shim).unwrap(), std::fs::read(&a_direct).unwrap());
    }
}
