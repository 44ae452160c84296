//! Where the caller's prompt is and how to put a rewritten one back: the
//! positional argument, stdin text, or the first stream-json user message
//! (after any control_request lines). Reading is the only effect here; the
//! splice functions are pure.

use crate::argv::ParsedArgs;
use crate::events::Event;
use crate::invocation::InputFormat;
use nix::sys::stat::SFlag;
use serde_json::Value;
use std::borrow::Cow;
use std::ffi::OsString;
use std::io::{IsTerminal, Read};
use std::time::Duration;

/// The prompt as found, with what is needed to replay the input untouched.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// `args[index]` is the prompt; stdin is left to the CLI.
    Positional { index: usize, text: String },
    /// All of stdin (text input format), shared: each attempt replays it.
    Stdin { bytes: bytes::Bytes },
    /// stream-json input: `before` (control lines) was read ahead of the
    /// user line, `more` are user lines that arrived with it (a client
    /// replaying one line per prior message), `after` is input already read
    /// past them; the rest of stdin is forwarded live.
    StreamJson {
        before: Vec<u8>,
        line: Vec<u8>,
        /// The text of `line`, read when it was parsed (see [`stream_text`]).
        text: Option<String>,
        more: Vec<Vec<u8>>,
        after: Vec<u8>,
    },
    /// stream-json input whose control lines came first and then nothing:
    /// an Agent SDK waiting for the answer to `initialize` before it sends
    /// the user message. `before[..complete]` are complete lines.
    Waiting { before: Vec<u8>, complete: usize },
    /// Nothing the shim can read: stdin is a terminal (`inherit`), or
    /// stream-json input ended before a user message; `bytes` is what was
    /// consumed.
    None { bytes: Vec<u8>, inherit: bool },
    /// Text on stdin that did not start coming within [`STDIN_PATIENCE`]:
    /// the CLI would have gone on without it. Nothing was read.
    Late,
}

impl Prompt {
    /// The prompt text, when it is UTF-8 text the dialects can parse.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Prompt::Positional { text, .. } => Some(Cow::Borrowed(text)),
            Prompt::Stdin { bytes } => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            Prompt::StreamJson { text, more, .. } if more.is_empty() => {
                text.as_deref().map(Cow::Borrowed)
            }
            Prompt::StreamJson { .. }
            | Prompt::Waiting { .. }
            | Prompt::None { .. }
            | Prompt::Late => None,
        }
    }

    /// Size of the prompt as the caller sent it.
    pub fn len(&self) -> usize {
        match self {
            Prompt::Positional { text, .. } => text.len(),
            Prompt::Stdin { bytes } => bytes.len(),
            Prompt::StreamJson { line, more, .. } => {
                line.len() + more.iter().map(Vec::len).sum::<usize>()
            }
            Prompt::Waiting { before: bytes, .. } | Prompt::None { bytes, .. } => bytes.len(),
            Prompt::Late => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The positional prompt: the first positional argument (commander takes
/// the first operand as `[prompt]`).
pub fn positional(args: &ParsedArgs) -> Option<(usize, String)> {
    args.positionals.first().map(|p| (p.index, p.value.clone()))
}

/// Read the prompt from where this invocation carries it.
pub fn read(args: &ParsedArgs, input: InputFormat) -> std::io::Result<Prompt> {
    read_knowing(args, input, &mut |_| false)
}

/// [`read`]; `answered` says of the control lines read so far whether the
/// shim can answer them itself: then the caller is not given the silence
/// that tells a caller waiting for an answer ([`Prompt::Waiting`]) at once.
pub fn read_knowing(
    args: &ParsedArgs,
    input: InputFormat,
    answered: &mut dyn FnMut(&[u8]) -> bool,
) -> std::io::Result<Prompt> {
    let stdin = std::io::stdin();
    if input == InputFormat::StreamJson {
        return scan(&mut RawStdin, Vec::new(), 0, true, &mut |_| {}, answered);
    }
    if let Some((index, text)) = positional(args) {
        return Ok(Prompt::Positional { index, text });
    }
    if stdin.is_terminal() {
        return Ok(Prompt::None {
            bytes: Vec::new(),
            inherit: true,
        });
    }
    // The CLI waits for piped text's first byte (or its end) this long, then
    // goes on without it; data that comes later is the CLI's to refuse.
    if !stdin_begins() {
        return Ok(Prompt::Late);
    }
    // Sized up front: from nothing, `read_to_end` starts at 32 bytes and
    // doubles, twenty reads and as many copies for a 1 MiB prompt.
    let mut bytes = Vec::with_capacity(stdin_size_hint());
    stdin.lock().read_to_end(&mut bytes)?;
    Ok(Prompt::Stdin {
        bytes: bytes.into(),
    })
}

/// How long after it starts the CLI takes piped text that has not begun
/// to come: it waits 3 s for the first byte once started (`no stdin data
/// received in 3s`, 2.1.302 to 2.1.332), and starts that wait about 0.3 s
/// after its exec on this kind of machine. Counted from the shim's start.
pub const STDIN_PATIENCE: Duration = Duration::from_millis(3_300);

/// Whether stdin's data (or its end) comes before [`STDIN_PATIENCE`] has
/// passed since the shim started; an interrupted wait goes on.
fn stdin_begins() -> bool {
    loop {
        let left = STDIN_PATIENCE.saturating_sub(crate::timeline::elapsed());
        match stdin_within(left) {
            Ok(true) => return true,
            Ok(false) if left.is_zero() => return false,
            Ok(false) => {
                if crate::timeline::elapsed() >= STDIN_PATIENCE {
                    return false;
                }
            }
            // Not pollable: read it as before.
            Err(_) => return true,
        }
    }
}

/// What a prompt on stdin will likely take: a file's size (and a byte to
/// see its end), or a pipe's worth.
fn stdin_size_hint() -> usize {
    const PIPE: usize = 64 << 10;
    match nix::sys::stat::fstat(0) {
        Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG => {
            usize::try_from(st.st_size).map_or(PIPE, |n| n.saturating_add(1).min(MAX_HINT))
        }
        _ => PIPE,
    }
}

/// A file's size is a hint only up to this (it may be a sparse giant).
const MAX_HINT: usize = 64 << 20;

/// How long to wait for the user message once control lines came first.
/// The TypeScript Agent SDK writes both at once (0.1 ms apart); the Python
/// one waits for the CLI's answer to `initialize` first, so past this the
/// turn starts a CLI to answer it (see `turn::handshake`).
pub const CONTROL_PATIENCE: Duration = Duration::from_millis(25);

/// A source of input chunks that can wait with a time limit.
pub trait Chunks {
    /// `Ok(None)` on timeout, `Ok(Some(empty))` at EOF.
    fn chunk(&mut self, patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>>;
}

/// Our stdin, read raw (never through std's buffer, so nothing is stranded
/// there when the forwarder takes over).
#[derive(Default)]
pub struct RawStdin;

/// Whether input (or its end) comes on stdin within `patience`; nothing is
/// read. A signal that interrupts the wait counts as no input yet.
fn stdin_within(patience: Duration) -> nix::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    // SAFETY: fd 0 outlives this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let ms = PollTimeout::try_from(patience.as_millis().min(i32::MAX as u128) as i32)
        .unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    match poll(&mut fds, ms) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e),
    }
}

/// [`stdin_within`], an error taken as no input.
pub fn stdin_ready_within(patience: Duration) -> bool {
    stdin_within(patience).unwrap_or(false)
}

impl Chunks for RawStdin {
    fn chunk(&mut self, patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(p) = patience {
            if !stdin_within(p)? {
                return Ok(None);
            }
        }
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match nix::unistd::read(0, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(Some(buf));
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Input already in memory (for `explain`): all of it at once, then EOF.
pub struct SliceChunks<'a>(pub &'a [u8]);

impl Chunks for SliceChunks<'_> {
    fn chunk(&mut self, _patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>> {
        Ok(Some(std::mem::take(&mut self.0).to_vec()))
    }
}

/// Read stream-json lines until the first user message. Control lines
/// followed by silence end it early: [`Prompt::Waiting`].
pub fn read_stream_json(input: &mut impl Chunks) -> std::io::Result<Prompt> {
    scan(input, Vec::new(), 0, true, &mut |_| {}, &mut |_| false)
}

/// Go on reading after [`Prompt::Waiting`], as long as the caller takes:
/// `forward` gets each further complete line that is not a user message, as
/// it arrives (the handshake passes them to the CLI answering them).
pub fn read_after_waiting(
    input: &mut impl Chunks,
    before: Vec<u8>,
    complete: usize,
    forward: &mut dyn FnMut(&[u8]),
) -> std::io::Result<Prompt> {
    scan(input, before, complete, false, forward, &mut |_| false)
}

/// Read on after `buf[..complete]` until one more whole line is there (or
/// input ends): whether that line is a user message. A caller that answered
/// `initialize` is waited on may send another control request first (a
/// model, a permission mode) and wait for its answer before its message.
pub fn next_line_is_user(
    input: &mut impl Chunks,
    buf: &mut Vec<u8>,
    complete: usize,
) -> std::io::Result<bool> {
    let mut searched = complete;
    loop {
        if let Some(nl) = memchr::memchr(b'\n', &buf[searched..]) {
            return Ok(user_line(&buf[complete..=searched + nl]).is_some());
        }
        searched = buf.len();
        match input.chunk(None)? {
            Some(bytes) if !bytes.is_empty() => buf.extend_from_slice(&bytes),
            _ => return Ok(false),
        }
    }
}

/// `buf[..scanned]` is complete non-user lines already seen.
fn scan(
    input: &mut impl Chunks,
    mut buf: Vec<u8>,
    mut scanned: usize,
    patient: bool,
    forward: &mut dyn FnMut(&[u8]),
    answered: &mut dyn FnMut(&[u8]) -> bool,
) -> std::io::Result<Prompt> {
    // `buf[scanned..searched]` holds no newline (a long line arriving in
    // many reads is searched once, not once per read).
    let mut searched = scanned;
    loop {
        while let Some(nl) = memchr::memchr(b'\n', &buf[searched..]) {
            let end = searched + nl + 1;
            searched = end;
            if let Some(text) = user_line(&buf[scanned..end]) {
                let mut after = buf.split_off(end);
                let line = buf.split_off(scanned);
                let more = take_ready_user_lines(input, &mut after)?;
                return Ok(Prompt::StreamJson {
                    before: buf,
                    line,
                    text,
                    more,
                    after,
                });
            }
            forward(&buf[scanned..end]);
            scanned = end;
        }
        searched = buf.len();
        let patience = (patient && scanned > 0).then_some(CONTROL_PATIENCE);
        // Nothing more yet after lines the shim can answer: no need to wait
        // and see whether the caller waits (the Python Agent SDK does).
        let known = patience.is_some() && scanned == buf.len() && answered(&buf[..scanned]);
        let next = match known {
            true => input.chunk(Some(Duration::ZERO))?,
            false => input.chunk(patience)?,
        };
        match next {
            None => {
                return Ok(Prompt::Waiting {
                    before: buf,
                    complete: scanned,
                })
            }
            Some(c) if c.is_empty() => {
                // EOF: a last line without a newline still counts.
                let last = (scanned < buf.len()).then(|| user_line(&buf[scanned..]));
                if let Some(Some(text)) = last {
                    let line = buf.split_off(scanned);
                    return Ok(Prompt::StreamJson {
                        before: buf,
                        line,
                        text,
                        more: Vec::new(),
                        after: Vec::new(),
                    });
                }
                return Ok(Prompt::None {
                    bytes: buf,
                    inherit: false,
                });
            }
            Some(c) => buf.extend_from_slice(&c),
        }
    }
}

/// How long to wait for the rest of a user line that is already arriving.
const LINE_PATIENCE: Duration = Duration::from_millis(200);

/// User lines that arrived together with the first one: input already
/// buffered or immediately readable, never waiting for new writes (a client
/// that keeps stdin open for later messages must not be delayed). Leaves
/// everything from the first non-user line on in `rest`.
fn take_ready_user_lines(
    input: &mut impl Chunks,
    rest: &mut Vec<u8>,
) -> std::io::Result<Vec<Vec<u8>>> {
    let mut lines = Vec::new();
    // `rest[..start]` is taken as lines (removed once, at the end: removing
    // each line as it is found would copy the rest every time);
    // `rest[start..searched]` holds no newline.
    let mut start = 0;
    let mut searched = 0;
    let done = loop {
        match rest[searched..].iter().position(|&b| b == b'\n') {
            Some(nl) => {
                let end = searched + nl + 1;
                if user_line(&rest[start..end]).is_none() {
                    break Ok(());
                }
                lines.push(rest[start..end].to_vec());
                (start, searched) = (end, end);
                continue;
            }
            None => searched = rest.len(),
        }
        // Partial line: wait briefly for its end; nothing pending: only take
        // what is readable right now.
        let patience = if start == rest.len() {
            Duration::ZERO
        } else {
            LINE_PATIENCE
        };
        match input.chunk(Some(patience)) {
            Err(e) => break Err(e),
            Ok(Some(c)) if !c.is_empty() => rest.extend_from_slice(&c),
            // EOF: a last user line without a newline still counts.
            Ok(Some(_)) if start < rest.len() && user_line(&rest[start..]).is_some() => {
                lines.push(rest[start..].to_vec());
                start = rest.len();
                break Ok(());
            }
            _ => break Ok(()),
        }
    };
    rest.drain(..start);
    done.map(|()| lines)
}

/// Messages of the user lines, for the stream-lines dialect.
pub fn user_line_messages(lines: &[&[u8]]) -> Option<Vec<Value>> {
    lines
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_slice(l).ok()?;
            v.get("message").cloned()
        })
        .collect()
}

/// `Some` for a stream-json user line, with its text when it has exactly one
/// text part (a string content or one text block; other shapes are not
/// rewritten). The line is parsed once.
fn user_line(line: &[u8]) -> Option<Option<String>> {
    match Event::parse(line)? {
        // Several text blocks read as one text, a blank line between them
        // (a client may send a preamble block, then a block per turn). With
        // an image or another block among them, which message that block
        // belongs to is not known: a resume would send it again, or keep one
        // the caller took out. No text then: the turn runs as asked.
        Event::User(u) => Some(match u.message.content.texts()[..] {
            [] => None,
            [only] => Some(only.to_owned()),
            [_, _, ..] if u.message.content.others() > 0 => None,
            ref several => Some(several.join("\n\n")),
        }),
        _ => None,
    }
}

/// The text of a stream-json user line (see [`user_line`]).
pub fn stream_text(line: &[u8]) -> Option<String> {
    user_line(line).flatten()
}

/// The same user line with its text replaced; every other field and block
/// is kept as it was, and the line ending is preserved.
pub fn replace_stream_text(line: &[u8], text: &str) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(line).ok()?;
    let content = v.pointer_mut("/message/content")?;
    if content.is_string() {
        *content = Value::String(text.to_owned());
    } else {
        // The first text block carries the text; other text blocks go (they
        // were read as part of it), other blocks stay.
        let blocks = content.as_array_mut()?;
        let is_text = |b: &Value| b.get("type").and_then(Value::as_str) == Some("text");
        let first = blocks.iter().position(is_text)?;
        blocks[first]["text"] = Value::String(text.to_owned());
        let mut i = 0;
        blocks.retain(|b| {
            i += 1;
            i - 1 == first || !is_text(b)
        });
    }
    let mut out = serde_json::to_vec(&v).ok()?;
    if line.ends_with(b"\n") {
        out.push(b'\n');
    }
    Some(out)
}

/// argv with the positional prompt at `index` replaced, and where the prompt
/// now is. A text that starts with `-` would read as an option (`error:
/// unknown option '---…'`) where the caller's did not: unless option parsing
/// already ended before it, it goes right after a `--` then — the one that
/// is there, or one added at the end (it is the only positional).
pub fn replace_positional(args: &[OsString], index: usize, text: &str) -> (Vec<OsString>, usize) {
    let mut out = args.to_vec();
    let Some(slot) = out.get_mut(index) else {
        return (out, index);
    };
    *slot = OsString::from(text);
    if !text.starts_with('-') {
        return (out, index);
    }
    let parsed = crate::argv::parse(args).ok();
    let ours = parsed
        .as_ref()
        .and_then(|p| p.positionals.iter().find(|p| p.index == index));
    match (parsed.as_ref(), ours) {
        (Some(p), Some(ours)) if !ours.after_dashdash && p.positionals.len() == 1 => {
            let prompt = out.remove(index);
            let at = match p.dashdash {
                // `--` came after the prompt: the prompt goes right after it.
                Some(d) => d,
                None => {
                    out.push(OsString::from("--"));
                    out.len()
                }
            };
            out.insert(at, prompt);
            (out, at)
        }
        // After `--` already, or a call the parser does not read as one
        // positional (it is not managed then): as it was.
        _ => (out, index),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripted input: each item is a chunk, `None` a pause past patience.
    struct Script(std::collections::VecDeque<Option<&'static [u8]>>);

    impl Chunks for Script {
        fn chunk(&mut self, patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>> {
            match self.0.pop_front() {
                Some(Some(c)) => Ok(Some(c.to_vec())),
                Some(None) if patience.is_some() => Ok(None),
                Some(None) => self.chunk(patience),
                None => Ok(Some(Vec::new())),
            }
        }
    }

    const CONTROL: &[u8] =
        b"{\"type\":\"control_request\",\"request\":{\"subtype\":\"initialize\"}}\n";
    const USER: &[u8] = b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";

    #[test]
    fn stream_json_reads_past_control_lines_only() {
        let mut s = Script(
            vec![
                Some(CONTROL),
                Some(&USER[..10]),
                Some(&USER[10..]),
                None,
                Some(b"{\"more\""),
            ]
            .into(),
        );
        let p = read_stream_json(&mut s).unwrap();
        let Prompt::StreamJson {
            before,
            line,
            more,
            after,
            ..
        } = &p
        else {
            panic!("{p:?}")
        };
        assert_eq!((&before[..], &line[..]), (CONTROL, USER));
        assert_eq!(p.text().as_deref(), Some("hi"));
        assert!(
            after.is_empty() && more.is_empty(),
            "nothing read past the user line: {after:?}"
        );
        // Input that arrived in the same chunk as the user line is kept.
        let both = [USER, b"{\"x\":1}\n"].concat().leak();
        let p = read_stream_json(&mut Script(vec![Some(&*both)].into())).unwrap();
        let Prompt::StreamJson { after, .. } = &p else {
            panic!("{p:?}")
        };
        assert_eq!(after, b"{\"x\":1}\n");
    }

    #[test]
    fn stream_json_takes_user_lines_that_came_together() {
        const A: &[u8] =
            b"{\"type\":\"user\",\"message\":{\"role\":\"assistant\",\"content\":\"yo\"}}\n";
        const U2: &[u8] =
            b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"again\"}}\n";
        let all = [USER, A, &U2[..20]].concat().leak();
        let mut s = Script(vec![Some(&*all), Some(&U2[20..]), None, Some(b"late\n")].into());
        let p = read_stream_json(&mut s).unwrap();
        let Prompt::StreamJson {
            line, more, after, ..
        } = &p
        else {
            panic!("{p:?}")
        };
        assert_eq!(line, USER);
        assert_eq!(more, &[A.to_vec(), U2.to_vec()]);
        assert!(after.is_empty());
        assert_eq!(p.text(), None, "several lines are not one text");
        let msgs = user_line_messages(&[line, &more[0], &more[1]]).unwrap();
        assert_eq!(msgs[1]["role"], "assistant");
    }

    /// Records the patience of each read.
    struct Patient(Script, Vec<Option<Duration>>);

    impl Chunks for Patient {
        fn chunk(&mut self, patience: Option<Duration>) -> std::io::Result<Option<Vec<u8>>> {
            self.1.push(patience);
            self.0.chunk(patience)
        }
    }

    #[test]
    fn control_lines_the_shim_answers_are_not_waited_on() {
        let mut input = Patient(Script(vec![Some(CONTROL), None].into()), Vec::new());
        let p = scan(&mut input, Vec::new(), 0, true, &mut |_| {}, &mut |l| {
            l == CONTROL
        })
        .unwrap();
        assert!(matches!(p, Prompt::Waiting { .. }), "{p:?}");
        assert_eq!(input.1, [None, Some(Duration::ZERO)]);
        // Lines it cannot answer: the caller gets the time to send its message.
        let mut input = Patient(Script(vec![Some(CONTROL), None].into()), Vec::new());
        let p = scan(&mut input, Vec::new(), 0, true, &mut |_| {}, &mut |_| false).unwrap();
        assert!(matches!(p, Prompt::Waiting { .. }), "{p:?}");
        assert_eq!(input.1, [None, Some(CONTROL_PATIENCE)]);
    }

    #[test]
    fn stream_json_says_when_control_lines_are_followed_by_silence() {
        // An SDK waiting for the initialize response: no deadlock; the
        // handshake reads on, forwarding what comes before the user line.
        let mut input = Script(vec![Some(CONTROL), None, Some(CONTROL), Some(USER)].into());
        let p = read_stream_json(&mut input).unwrap();
        assert_eq!(
            p,
            Prompt::Waiting {
                before: CONTROL.to_vec(),
                complete: CONTROL.len()
            }
        );
        let mut forwarded = Vec::new();
        let p = read_after_waiting(&mut input, CONTROL.to_vec(), CONTROL.len(), &mut |l| {
            forwarded.push(l.to_vec())
        })
        .unwrap();
        assert_eq!(forwarded, [CONTROL.to_vec()]);
        let Prompt::StreamJson { before, line, .. } = &p else {
            panic!("{p:?}")
        };
        assert_eq!(
            (&before[..], &line[..]),
            (&[CONTROL, CONTROL].concat()[..], USER)
        );
        // Without control lines the shim waits as the CLI would.
        let p = read_stream_json(&mut Script(vec![None, Some(USER)].into())).unwrap();
        assert!(matches!(p, Prompt::StreamJson { .. }));
        // EOF before a user line; a user line without newline at EOF.
        let p = read_stream_json(&mut Script(vec![Some(CONTROL)].into())).unwrap();
        assert!(matches!(p, Prompt::None { .. }));
        let p = read_stream_json(&mut Script(vec![Some(&USER[..USER.len() - 1])].into())).unwrap();
        assert_eq!(p.text().as_deref(), Some("hi"));
    }

    #[test]
    fn stream_text_shapes() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"type":"user","message":{"role":"user","content":"a"}}"#,
                Some("a"),
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"b"}]}}"#,
                Some("b"),
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"image","source":{}},{"type":"text","text":"c"}]}}"#,
                Some("c"),
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}}"#,
                Some("x\n\ny"),
            ),
            // Several texts and an image: whose image is not known.
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"x"},{"type":"image","source":{}},{"type":"text","text":"y"}]}}"#,
                None,
            ),
            (r#"{"type":"user","message":{"content":[]}}"#, None),
            ("not json", None),
        ];
        for (line, want) in cases {
            assert_eq!(stream_text(line.as_bytes()).as_deref(), *want, "{line}");
        }
    }

    /// A new prompt that starts with `-` goes after a `--`, where the CLI
    /// reads it as the prompt and not as an unknown option.
    #[test]
    fn a_positional_that_reads_as_an_option_goes_after_dashes() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        // (argv, the prompt's index, the new text, argv after, its index)
        type Case<'a> = (&'a [&'a str], usize, &'a str, &'a [&'a str], usize);
        let cases: &[Case] = &[
            (&["-p", "old"], 1, "new", &["-p", "new"], 1),
            (
                &["-p", "old", "--model", "m"],
                1,
                "---\nq",
                &["-p", "--model", "m", "--", "---\nq"],
                4,
            ),
            (&["old"], 0, "-q", &["--", "-q"], 1),
            (
                &["-p", "old", "--", "x"],
                1,
                "-q",
                &["-p", "-q", "--", "x"],
                1,
            ),
            (&["-p", "--", "old"], 2, "-q", &["-p", "--", "-q"], 2),
            (&["-p", "old", "--"], 1, "-q", &["-p", "--", "-q"], 2),
        ];
        for (args, index, text, want, at) in cases {
            let (got, i) = replace_positional(&os(args), *index, text);
            assert_eq!((got, i), (os(want), *at), "{args:?} with {text:?}");
        }
    }

    #[test]
    fn replace_keeps_other_blocks_and_fields() {
        let line = br#"{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"image","source":{"data":"AAA"}},{"type":"text","text":"old"}]},"parent_tool_use_id":null}
"#;
        let out = replace_stream_text(line, "new").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["message"]["content"][0]["source"]["data"], "AAA");
        assert_eq!(v["message"]["content"][1]["text"], "new");
        assert_eq!(v["session_id"], "");
        assert!(v["parent_tool_use_id"].is_null());
        assert!(out.ends_with(b"\n"));
        // Several text blocks: the text in the first, the others gone.
        let line = br#"{"type":"user","message":{"content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}}"#;
        let v: Value = serde_json::from_slice(&replace_stream_text(line, "new").unwrap()).unwrap();
        assert_eq!(
            v["message"]["content"],
            serde_json::json!([{"type":"text","text":"new"},{"type":"image","source":{}}])
        );
    }
}
