//! Hostile input at scale: argv, every dialect parser, the stream-json input
//! reader and the output observer take arbitrary bytes without panicking,
//! allocate at most a small multiple of their input, and do work linear in
//! it (instructions counted by callgrind at two sizes: ×8 the input may cost
//! at most ×16 the instructions; a rescan per line or read costs ×64);
//! prompts that are not UTF-8 reach the CLI byte for byte.
//!
//! Allocation is counted per thread by this binary's global allocator (peak
//! bytes live above the level before the call). `PROPTEST_CASES` scales the
//! property tests (default here: 2,000 per property; 64 for the ones that
//! start processes).

use crate::support::clients::LINES_ARGS;
use crate::support::process::{assert_same, both, reader, run, Input};
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
use std::time::Duration;

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

/// Peak bytes allocated (live at once) by `f` on this thread.
fn measure<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get) - base;
    (peak.max(0) as usize, out)
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
        let (peak, ()) = measure(|| parse_argv(&args));
        within("argv", len, peak);
    }

    #[test]
    fn dialects_never_panic_and_stay_small(text in hostile_text()) {
        let (peak, ()) = measure(|| parse_text(&text));
        within("dialects", text.len(), peak);
    }

    #[test]
    fn dialects_take_any_unicode(text in "\\PC{0,2000}") {
        let (peak, ()) = measure(|| parse_text(&text));
        within("dialects (unicode)", text.len(), peak);
    }

    #[test]
    fn observer_never_panics_and_stays_small(bytes in hostile_output(), chunk in 1usize..300) {
        let (peak, ()) = measure(|| observe(&bytes, chunk));
        within("observer", bytes.len(), peak);
    }

    #[test]
    fn stream_json_reader_never_panics_and_stays_small(bytes in hostile_input(), chunk in 1usize..300) {
        let (peak, _) = measure(|| read_stream(&bytes, chunk));
        within("stream-json reader", bytes.len(), peak);
    }

    #[test]
    fn reply_normalisation_never_panics(text in "(<thinking>|</thinking>|\\PC){0,300}") {
        let (peak, _) = measure(|| claude_shim::identity::ReplyHash::of(&text));
        within("reply hash", text.len(), peak);
    }
}

// ---- scaling: large adversarial inputs ---------------------------------------------
//
// Work is counted, not timed: callgrind counts the instructions `f` executes
// on an input and on one ×8 as large. The count is the same on an idle and a
// loaded machine; linear code takes ×8 (a little more where buffers double),
// a rescan of the whole input per line or per read ×64. Each scaling test
// runs itself again under `valgrind --tool=callgrind` (HOSTILE_PROBE set: it
// only calls `counted_work` on each input, which callgrind dumps one by one)
// and compares the counts; allocation is checked natively as everywhere here.

/// The most ×8 the input may cost in instructions.
const MAX_RATIO: f64 = 16.0;

type Call = Box<dyn Fn()>;
/// Builds the input of size n: (its bytes, `f` on it).
type Prepare = Box<dyn Fn(usize) -> (usize, Call)>;

/// The cases of one scaling test.
struct Scaling {
    /// The test's name, to run it again (`--exact`).
    test: &'static str,
    cases: Vec<(String, usize, Prepare)>,
}

/// The default size of the smaller input (`HOSTILE_BASE`): 32 KiB, and 4 KiB
/// in a debug build, whose code runs some 20× slower under callgrind too.
fn base() -> usize {
    std::env::var("HOSTILE_BASE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            4 << 10
        } else {
            32 << 10
        })
}

/// What callgrind counts: everything `f` runs, and nothing else.
#[inline(never)]
fn counted_work(f: &dyn Fn()) {
    f();
    std::hint::black_box(());
}

impl Scaling {
    fn new(test: &'static str) -> Scaling {
        Scaling {
            test,
            cases: Vec::new(),
        }
    }

    /// `f` on `make(n)` (of `len` bytes) at n = `base` and ×8.
    fn case<I: 'static>(
        &mut self,
        what: &str,
        base: usize,
        make: impl Fn(usize) -> I + 'static,
        len: impl Fn(&I) -> usize + 'static,
        f: impl Fn(&I) + Clone + 'static,
    ) {
        let prepare = move |n: usize| {
            let input = make(n);
            let bytes = len(&input);
            let f = f.clone();
            (bytes, Box::new(move || f(&input)) as Call)
        };
        self.cases.push((what.to_owned(), base, Box::new(prepare)));
    }

    fn sizes(base: usize) -> [usize; 2] {
        [base, base * 8]
    }

    /// Under callgrind: each call once, warmed up (lazy set-up is not work
    /// that scales), in order.
    fn probe(&self) {
        for (_, base, prepare) in &self.cases {
            for n in Self::sizes(*base) {
                let (_, f) = prepare(n);
                f();
                counted_work(&*f);
            }
        }
    }

    fn check(self) {
        if std::env::var_os("HOSTILE_PROBE").is_some() {
            return self.probe();
        }
        let mut lens = Vec::new();
        for (what, base, prepare) in &self.cases {
            for n in Self::sizes(*base) {
                let (bytes, f) = prepare(n);
                f();
                let (peak, ()) = measure(&f);
                within(what, bytes, peak);
                lens.push(bytes);
            }
        }
        let counts = self.instructions();
        assert_eq!(
            counts.len(),
            lens.len(),
            "{}: one callgrind dump per call",
            self.test
        );
        let mut problems = Vec::new();
        for (i, (what, _, _)) in self.cases.iter().enumerate() {
            let (small, large) = (counts[2 * i], counts[2 * i + 1]);
            let ratio = large as f64 / small.max(1) as f64;
            eprintln!(
                "{what:<48} {:>9} B: {small:>13} instr | {:>9} B: {large:>13} instr | ×{ratio:.1}",
                lens[2 * i],
                lens[2 * i + 1]
            );
            if ratio > MAX_RATIO {
                problems.push(format!(
                    "{what}: ×8 the input took ×{ratio:.1} the instructions ({small} → {large})"
                ));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// This test again under callgrind: the instructions of each counted call.
    fn instructions(&self) -> Vec<u64> {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("cg");
        let me = std::env::current_exe().expect("current exe");
        let mut cmd = std::process::Command::new("valgrind");
        cmd.arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg("--collect-atstart=no")
            // Exact names: --dump-after takes no wildcard.
            .arg(concat!(
                "--toggle-collect=",
                module_path!(),
                "::counted_work"
            ))
            .arg(concat!("--dump-after=", module_path!(), "::counted_work"))
            .arg(&me)
            .args(["--exact", self.test, "--nocapture", "--test-threads=1"])
            .env("HOSTILE_PROBE", "1");
        let ran = match cmd.output() {
            Ok(ran) => ran,
            Err(e) => panic!(
                "valgrind: {e}. The scaling checks count instructions with callgrind: \
                 install valgrind (.ci/test does)"
            ),
        };
        assert!(
            ran.status.success(),
            "{} under callgrind: {:?}\n{}",
            self.test,
            ran.status,
            String::from_utf8_lossy(&ran.stderr)
        );
        // cg.1, cg.2, …: one dump per call, in call order.
        let mut dumps: Vec<(u64, u64)> = std::fs::read_dir(dir.path())
            .expect("read dumps")
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n: u64 = name.strip_prefix("cg.")?.parse().ok()?;
                let text = std::fs::read_to_string(e.path()).ok()?;
                let total = text
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("summary:")
                            .or_else(|| l.strip_prefix("totals:"))
                    })?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()?;
                Some((n, total))
            })
            .collect();
        dumps.sort();
        dumps.into_iter().map(|(_, total)| total).collect()
    }
}

fn repeat_to(unit: &str, size: usize) -> String {
    unit.repeat(size / unit.len().max(1) + 1)
}

#[test]
fn dialects_scale_linearly() {
    let mut s = Scaling::new("hostile::dialects_scale_linearly");
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
        s.case(
            &format!("dialects: {name}"),
            base(),
            move |n| repeat_to(unit, n),
            String::len,
            move |t| parse_text(t),
        );
    }
    s.case(
        "dialects: json messages",
        base(),
        move |n| {
            let msg = r#"{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"y"}]},"#;
            format!(
                "[{}{{\"role\":\"user\",\"content\":\"z\"}}]",
                msg.repeat(n / msg.len() + 1)
            )
        },
        String::len,
        move |t| parse_text(t),
    );
    s.case(
        "dialects: json small numbers",
        base(),
        move |n| format!("[{}0]", "0,".repeat(n / 2)),
        String::len,
        move |t| parse_text(t),
    );
    s.check();
}

#[test]
fn observer_scales_linearly() {
    let mut s = Scaling::new("hostile::observer_scales_linearly");
    let event = concat!(
        r#"{"type":"assistant","uuid":"6e8e0435-8e12-4245-aa25-f674ed4e97a7","message":{"content":[{"type":"text","text":"some words"}]}}"#,
        "\n"
    );
    for (name, chunk) in [("64 KiB reads", 64 << 10), ("4 KiB reads", 4 << 10)] {
        s.case(
            &format!("observer: events, {name}"),
            base(),
            move |n| repeat_to(event, n).into_bytes(),
            Vec::len,
            move |b| observe(b, chunk),
        );
        s.case(
            &format!("observer: one long line, {name}"),
            base(),
            move |n| {
                let mut line = br#"{"type":"result","result":""#.to_vec();
                line.extend(std::iter::repeat_n(b'a', n));
                line.extend_from_slice(b"\"}\n");
                line
            },
            Vec::len,
            move |b| observe(b, chunk),
        );
    }
    s.check();
}

/// An Agent SDK user message carrying a large attachment (an image as
/// base64) arrives in pipe-sized reads.
#[test]
fn stream_json_reader_scales_linearly() {
    let mut s = Scaling::new("hostile::stream_json_reader_scales_linearly");
    let user_line = |n: usize| {
        let mut line = br#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","data":""#.to_vec();
        line.extend(std::iter::repeat_n(b'A', n));
        line.extend_from_slice(br#""}},{"type":"text","text":"what is this?"}]}}"#);
        line.push(b'\n');
        line
    };
    for (name, chunk) in [("64 KiB reads", 64 << 10), ("4 KiB reads", 4 << 10)] {
        // 1 MiB and 8 MiB: a rescan of the line per read is a memchr
        // (~1/16 instruction a byte); it shows from a few hundred reads on.
        s.case(
            &format!("stream-json reader: one big line, {name}"),
            base() * 32,
            user_line,
            Vec::len,
            move |b| {
                let p = read_stream(b, chunk);
                assert!(matches!(p, Prompt::StreamJson { .. }));
            },
        );
        s.case(
            &format!("stream-json reader: control lines, {name}"),
            base(),
            move |n| {
                let control = "{\"type\":\"control_request\",\"request_id\":\"1\",\"request\":{\"subtype\":\"initialize\"}}\n";
                let mut b = repeat_to(control, n).into_bytes();
                b.extend_from_slice(&user_line(10));
                b
            },
            Vec::len,
            move |b| {
                let _ = read_stream(b, chunk);
            },
        );
        s.case(
            &format!("stream-json reader: one line per message, {name}"),
            base(),
            move |n| {
                let msg = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"one message\"}}\n";
                repeat_to(msg, n).into_bytes()
            },
            Vec::len,
            move |b| {
                let _ = read_stream(b, chunk);
            },
        );
    }
    s.check();
}

#[test]
fn argv_scales_linearly() {
    let mut s = Scaling::new("hostile::argv_scales_linearly");
    s.case(
        "argv: many flags",
        base(),
        move |n| {
            let unit = ["--allowedTools", "Bash", "Read", "--add-dir", "/x"];
            let per: usize = unit.iter().map(|a| a.len()).sum();
            let mut v: Vec<OsString> = Vec::new();
            for _ in 0..n / per + 1 {
                v.extend(unit.map(OsString::from));
            }
            v.push("-p".into());
            v
        },
        move |v| v.iter().map(|a| a.len() + 8).sum(),
        move |v| parse_argv(v),
    );
    s.case(
        "argv: one huge prompt",
        base(),
        move |n| {
            vec![
                OsString::from("-p"),
                OsString::from("Human: x\n\n".repeat(n / 10)),
            ]
        },
        move |v| v.iter().map(|a| a.len()).sum(),
        move |v| parse_argv(v),
    );
    s.check();
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

/// Run `cmd` with stdin fed `chunks`, `pause` after each: a caller that keeps
/// its input open longer than the shim waits for more (a busy machine's
/// callers do too).
fn paced(mut cmd: std::process::Command, chunks: &[&[u8]], pause: Duration) -> crate::support::Ran {
    use std::io::Write;
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let chunks: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
    let writer = std::thread::spawn(move || {
        for c in chunks {
            let _ = stdin.write_all(&c);
            let _ = stdin.flush();
            std::thread::sleep(pause);
        }
    });
    let (out, err) = (reader(child.stdout.take()), reader(child.stderr.take()));
    let status = child.wait().unwrap();
    writer.join().unwrap();
    crate::support::Ran {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed: start.elapsed(),
    }
}

/// Stream-json lines that are neither a user message nor a control request,
/// from a caller that keeps stdin open past the shim's wait for more
/// (`prompt::CONTROL_PATIENCE`), then ends it: the CLI reads each byte once,
/// as without the shim — the last line too, which has no newline. (Under
/// load, `invalid_utf8_stdin_reaches_the_cli_byte_for_byte` once saw the
/// lines go to the CLI twice.)
#[test]
fn lines_before_a_late_end_of_input_reach_the_cli_once() {
    let w = Sandbox::scripted();
    let chunks: &[&[u8]] = &[
        b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"\xd9\x9d\xe4\xa7\xf2\"}}\n",
        b"{\"type\":\"keep_alive\"}\n",
        b"{\"type\":\"last, without its newline\"}",
    ];
    let pause = prompt::CONTROL_PATIENCE * 4;
    let mut shim = w.shim();
    let mut direct = w.direct(NO_ARGS);
    for cmd in [&mut shim, &mut direct] {
        cmd.args(LINES_ARGS).env("FAKE_ECHO_STDIN", "1");
    }
    let (shim, direct) = (paced(shim, chunks, pause), paced(direct, chunks, pause));
    assert_eq!(direct.stdout, chunks.concat(), "the fake echoes its stdin");
    assert_same(&shim, &direct);
}
