//! A tiny Messages-API server for driving the real Claude Code CLI offline.
//!
//! * `POST /v1/messages` — `"stream": true` → the SSE sequence the CLI accepts
//!   (`message_start`, `content_block_start`, `content_block_delta`, `content_block_stop`,
//!   `message_delta`, `message_stop`); otherwise a JSON `message`.
//! * `POST /v1/messages/count_tokens` → `{"input_tokens": N}`.
//! * anything else → 404 (recorded in [`ApiServer::other_requests`]).
//!
//! Every `/v1/messages` request is logged with its parsed body and a usage figure that
//! models prompt caching on the request's content (see [`CacheModel`]).

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// What a logged `/v1/messages*` request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// A conversation turn: `stream: true` with a non-empty `tools` array. This is what
    /// the CLI sends for every `-p` turn (2.1.330).
    Main,
    /// Any other `/v1/messages` request (non-streaming, or without tools: title generation,
    /// summaries, …; the sub-agent `Warmup` of 2.0.x and 2.1.0). 2.1.330 sends none in
    /// `-p` mode with nonessential traffic disabled.
    Side,
    /// `POST /v1/messages/count_tokens`.
    CountTokens,
}

/// One logged `/v1/messages*` request.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    /// 1-based number among the `/v1/messages` requests this server answered
    /// (count_tokens requests and warm-ups are not numbered: `0`, so a reply's number is
    /// the same whether or not the CLI sent warm-ups before it).
    pub index: usize,
    pub kind: RequestKind,
    /// Request target as sent, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Request headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body (`Value::Null` if it did not parse).
    pub body: Value,
    /// Size of the raw request body in bytes.
    pub bytes: usize,
    /// Bytes of cacheable content (tools → system → messages, normalised).
    pub content_bytes: usize,
    /// Modelled usage, in tokens (bytes / 4, rounded up).
    pub plain: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    /// The reply text the server sent (empty for count_tokens).
    pub reply: String,
    pub output_tokens: u64,
}

impl LoggedRequest {
    /// Whether this is a conversation turn ([`RequestKind::Main`]).
    pub fn is_main(&self) -> bool {
        self.kind == RequestKind::Main
    }

    /// Whether the request asked for SSE streaming.
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// `plain + 1.25 * cache_write + 0.1 * cache_read` (in input-token equivalents).
    pub fn billed_equivalent(&self) -> f64 {
        billed(self.plain, self.cache_write, self.cache_read)
    }

    /// All input tokens, whatever their price.
    pub fn input_tokens_total(&self) -> u64 {
        self.plain + self.cache_write + self.cache_read
    }

    /// A header value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `messages` array (empty if absent).
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Text blocks of each message with `role`, per message, excluding blocks that are
    /// `<system-reminder>`s injected by the CLI. A string `content` counts as one block.
    pub fn texts_by_message(&self, role: &str) -> Vec<Vec<String>> {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .map(message_texts)
            .collect()
    }

    /// The user text blocks of this request, in order, flattened over messages, without
    /// the CLI's `<system-reminder>` blocks. A request that carries every earlier user
    /// message once and the new text once is `[earlier…, new]`.
    pub fn user_texts(&self) -> Vec<String> {
        self.texts_by_message("user")
            .into_iter()
            .flatten()
            .collect()
    }

    /// The assistant text blocks of this request, in order, flattened over messages.
    pub fn assistant_texts(&self) -> Vec<String> {
        self.texts_by_message("assistant")
            .into_iter()
            .flatten()
            .collect()
    }

    /// The last user text block (the new prompt of a turn), if any.
    pub fn last_user_text(&self) -> Option<String> {
        self.user_texts().pop()
    }

    /// `(role, texts)` of each message, `<system-reminder>` blocks excluded; role
    /// "system" entries (the CLI's environment block) included.
    pub fn transcript(&self) -> Vec<(String, Vec<String>)> {
        self.messages()
            .iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                (role.to_string(), message_texts(m))
            })
            .collect()
    }

    /// The Claude Code session id the request was made for: the
    /// `X-Claude-Code-Session-Id` header, else `metadata.user_id`'s `session_id`.
    pub fn session_id(&self) -> Option<String> {
        if let Some(h) = self.header("x-claude-code-session-id") {
            return Some(h.to_string());
        }
        let uid = self.body.pointer("/metadata/user_id")?.as_str()?;
        // Up to 2.1.x early: `user_<hash>_account_<uuid>_session_<uuid>`; later JSON.
        if let Some((_, sid)) = uid.rsplit_once("_session_") {
            return Some(sid.to_string());
        }
        let v: Value = serde_json::from_str(uid).ok()?;
        v.get("session_id")?.as_str().map(str::to_string)
    }

    /// The model the request asked for.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }
}

/// `plain + 1.25 * write + 0.1 * read`.
pub fn billed(plain: u64, write: u64, read: u64) -> f64 {
    plain as f64 + 1.25 * write as f64 + 0.1 * read as f64
}

/// Whether a text block is a `<system-reminder>` the CLI injected.
pub fn is_system_reminder(text: &str) -> bool {
    text.trim_start().starts_with("<system-reminder>")
}

fn message_texts(m: &Value) -> Vec<String> {
    match m.get("content") {
        Some(Value::String(s)) if !is_system_reminder(s) => vec![s.clone()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !is_system_reminder(t))
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Sum of modelled usage over some requests.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UsageTotals {
    pub requests: usize,
    pub plain: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl UsageTotals {
    pub fn billed_equivalent(&self) -> f64 {
        billed(self.plain, self.cache_write, self.cache_read)
    }

    pub fn input_tokens_total(&self) -> u64 {
        self.plain + self.cache_write + self.cache_read
    }
}

/// Tokens for a byte count: bytes / 4 rounded up.
pub fn tokens_for_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// Modelled usage of one request, in tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    pub content_bytes: usize,
    pub plain: u64,
    pub cache_write: u64,
    pub cache_read: u64,
}

/// Prompt caching modelled on request content.
///
/// The cacheable content is serialised block by block in the order tools → system →
/// messages (each block with `cache_control` removed, string contents normalised to a
/// single text block, the role prepended to a message's first block, the model as the
/// seed). Blocks carrying `cache_control` are breakpoints. Like the real API, a lookup at
/// a breakpoint also tries the (up to) 20 block positions before it. For a request:
/// the longest prefix found among those that an earlier request wrote is a cache read;
/// from there to the last breakpoint is a cache write (every breakpoint prefix is
/// recorded); after the last breakpoint is plain input.
///
/// An entry lives 5 minutes from its last write or read (1 hour where its
/// breakpoint says `"ttl": "1h"`), on the model's own clock, which a test moves
/// on ([`CacheModel::advance`]) instead of waiting.
#[derive(Debug, Default)]
pub struct CacheModel {
    /// Prefix hash → when it expires, in seconds on the model's clock.
    seen: HashMap<[u8; 32], u64>,
    /// Seconds the clock was moved on.
    advanced: u64,
    started: Option<std::time::Instant>,
}

/// How many block positions before a breakpoint the API checks for a hit.
pub const CACHE_LOOKBACK_BLOCKS: usize = 20;

impl CacheModel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget every cached prefix.
    pub fn clear(&mut self) {
        self.seen.clear();
    }

    /// Move the model's clock on by `d`: entries idle longer than their
    /// lifetime expire, as the API's do.
    pub fn advance(&mut self, d: Duration) {
        self.advanced += d.as_secs();
    }

    fn now(&mut self) -> u64 {
        self.started
            .get_or_insert_with(std::time::Instant::now)
            .elapsed()
            .as_secs()
            + self.advanced
    }

    /// Compute the usage of `body` and record the prefixes it writes.
    pub fn account(&mut self, body: &Value) -> CacheUsage {
        let now = self.now();
        let lifetime = cache_lifetime(body);
        self.seen.retain(|_, expires| *expires > now);
        let blocks = cacheable_blocks(body);
        let mut hasher = Sha256::new();
        let model = body.get("model").and_then(Value::as_str).unwrap_or("");
        hasher.update(b"model:");
        hasher.update(model.as_bytes());
        hasher.update(b"\n");
        let mut prefix_hash: Vec<[u8; 32]> = Vec::with_capacity(blocks.len());
        let mut cum: Vec<usize> = Vec::with_capacity(blocks.len());
        let mut total = 0usize;
        let mut breakpoints = Vec::new();
        for (i, (bytes, is_bp)) in blocks.iter().enumerate() {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
            prefix_hash.push(hasher.clone().finalize().into());
            total += bytes.len();
            cum.push(total);
            if *is_bp {
                breakpoints.push(i);
            }
        }
        let Some(&last_bp) = breakpoints.last() else {
            return CacheUsage {
                content_bytes: total,
                plain: tokens_for_bytes(total),
                cache_write: 0,
                cache_read: 0,
            };
        };
        // Longest previously written prefix reachable from some breakpoint.
        let mut hit: Option<usize> = None;
        for &bp in &breakpoints {
            let lo = bp.saturating_sub(CACHE_LOOKBACK_BLOCKS - 1);
            if let Some(j) = (lo..=bp)
                .rev()
                .find(|&j| self.seen.contains_key(&prefix_hash[j]))
            {
                hit = Some(hit.map_or(j, |h| h.max(j)));
            }
        }
        let read_bytes = hit.map_or(0, |j| cum[j]);
        let read = tokens_for_bytes(read_bytes);
        let upto_last = tokens_for_bytes(cum[last_bp]);
        let all = tokens_for_bytes(total);
        // A write, or a read, starts the entry's lifetime again.
        for j in breakpoints.iter().copied().chain(hit) {
            self.seen.insert(prefix_hash[j], now + lifetime);
        }
        CacheUsage {
            content_bytes: total,
            plain: all - upto_last,
            cache_write: upto_last - read,
            cache_read: read,
        }
    }
}

/// How long a request's cache entries live, in seconds: an hour where a
/// breakpoint asks for it (`"ttl": "1h"`), else 5 minutes.
fn cache_lifetime(body: &Value) -> u64 {
    let asks_hour = serde_json::to_string(body)
        .map(|s| s.contains("\"ttl\":\"1h\""))
        .unwrap_or(false);
    if asks_hour {
        3600
    } else {
        300
    }
}

/// The cacheable blocks of a request: `(serialised bytes, carries cache_control)`.
pub fn cacheable_blocks(body: &Value) -> Vec<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for t in tools {
            out.push(block_bytes(b"tool:", t));
        }
    }
    match body.get("system") {
        Some(Value::String(s)) => out.push(block_bytes(b"system:", &text_block(s))),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                out.push(block_bytes(b"system:", b));
            }
        }
        _ => {}
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let first = format!("{role}:");
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![text_block(s)],
            Some(Value::Array(a)) => a.clone(),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        for (i, b) in blocks.iter().enumerate() {
            let tag: &[u8] = if i == 0 { first.as_bytes() } else { b"" };
            out.push(block_bytes(tag, b));
        }
    }
    out
}

fn text_block(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

fn block_bytes(tag: &[u8], block: &Value) -> (Vec<u8>, bool) {
    let mut b = block.clone();
    let is_bp = match b.as_object_mut() {
        Some(obj) => obj.remove("cache_control").is_some_and(|v| !v.is_null()),
        None => false,
    };
    let mut bytes = tag.to_vec();
    bytes.extend(serde_json::to_vec(&b).expect("serialise block"));
    (bytes, is_bp)
}

type ReplyFn = dyn Fn(&LoggedRequest) -> String + Send + Sync;
type DelayFn = dyn Fn(&LoggedRequest) -> Duration + Send + Sync;

/// A reply text `TOOL_USE {"name": …, "input": {…}}` is answered as that
/// tool call (`stop_reason: tool_use`) instead of text.
pub const TOOL_USE: &str = "TOOL_USE ";

/// The reply to send for a reply text: a tool call or text.
fn reply_block(text: &str, index: usize) -> (Value, &'static str) {
    if let Some(call) = text
        .strip_prefix(TOOL_USE)
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
    {
        let block = json!({"type": "tool_use", "id": format!("toolu_shimtest_{index:06}"),
                           "name": call["name"], "input": call["input"]});
        return (block, "tool_use");
    }
    (text_block(text), "end_turn")
}
/// An error answer for a request: HTTP status and the error body's message.
type ErrorFn = dyn Fn(&LoggedRequest) -> Option<(u16, String)> + Send + Sync;

struct State {
    log: Vec<LoggedRequest>,
    other: Vec<(String, String)>,
    counter: usize,
    cache: CacheModel,
    reply: Option<Arc<ReplyFn>>,
    error: Option<Arc<ErrorFn>>,
    reply_size: Option<usize>,
    latency: Duration,
    delay: Option<Arc<DelayFn>>,
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A Messages-API server on `127.0.0.1:<ephemeral>`, one thread per connection; it stops
/// accepting when dropped.
pub struct ApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl ApiServer {
    /// Bind `127.0.0.1:0` and start serving.
    pub fn start() -> ApiServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                log: Vec::new(),
                other: Vec::new(),
                counter: 0,
                cache: CacheModel::new(),
                reply: None,
                error: None,
                reply_size: None,
                latency: Duration::ZERO,
                delay: None,
            }),
            stop: AtomicBool::new(false),
        });
        let sh = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(format!("api-server-{}", addr.port()))
            .spawn(move || {
                for conn in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = conn else { continue };
                    let sh = Arc::clone(&sh);
                    let _ = thread::Builder::new()
                        .name("api-conn".into())
                        .spawn(move || {
                            let _ = serve_connection(stream, &sh);
                        });
                }
            })
            .expect("spawn acceptor");
        ApiServer {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every logged `/v1/messages*` request, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.lock().log.clone()
    }

    /// Only the conversation turns ([`RequestKind::Main`]).
    pub fn main_requests(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_main())
            .collect()
    }

    /// Everything that is not a conversation turn (side requests and count_tokens).
    pub fn side_requests(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_main())
            .collect()
    }

    /// The last conversation turn, if any.
    pub fn last_main(&self) -> Option<LoggedRequest> {
        self.main_requests().pop()
    }

    /// `user_texts()` of every conversation turn, in order.
    pub fn user_texts(&self) -> Vec<Vec<String>> {
        self.main_requests()
            .iter()
            .map(|r| r.user_texts())
            .collect()
    }

    /// The last user text of the last conversation turn.
    pub fn last_user_text(&self) -> Option<String> {
        self.last_main().and_then(|r| r.last_user_text())
    }

    /// Requests to anything but `/v1/messages*` (answered 404): `(method, target)`.
    pub fn other_requests(&self) -> Vec<(String, String)> {
        self.shared.lock().other.clone()
    }

    /// Forget logged requests (the reply counter and the cache model are kept).
    pub fn clear_log(&self) {
        let mut st = self.shared.lock();
        st.log.clear();
        st.other.clear();
    }

    /// Forget every cached prefix.
    /// Move the cache model's clock on (see [`CacheModel::advance`]).
    pub fn advance_cache_clock(&self, d: Duration) {
        self.shared.lock().cache.advance(d);
    }

    pub fn clear_cache(&self) {
        self.shared.lock().cache.clear();
    }

    /// Override the reply text. The request passed in has its usage filled in and
    /// `reply` empty.
    pub fn set_reply<F>(&self, f: F)
    where
        F: Fn(&LoggedRequest) -> String + Send + Sync + 'static,
    {
        self.shared.lock().reply = Some(Arc::new(f));
    }

    /// Answer the requests `f` picks with an HTTP error (status, message), as
    /// the API does: `{"type":"error","error":{"type":…,"message":…}}`.
    pub fn set_error<F>(&self, f: F)
    where
        F: Fn(&LoggedRequest) -> Option<(u16, String)> + Send + Sync + 'static,
    {
        self.shared.lock().error = Some(Arc::new(f));
    }

    /// Back to the default reply, `reply {n}: {first 40 chars of the last user text}`.
    pub fn reset_reply(&self) {
        self.shared.lock().reply = None;
    }

    /// Pad every reply to at least `bytes` bytes (`None`: no padding).
    pub fn set_reply_size(&self, bytes: Option<usize>) {
        self.shared.lock().reply_size = bytes;
    }

    /// Wait this long before answering each `/v1/messages` request.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.lock().latency = latency;
    }

    /// Wait as long as `f` says before answering a request (after it is
    /// logged): a stalled API for the requests it picks.
    pub fn set_delay<F>(&self, f: F)
    where
        F: Fn(&LoggedRequest) -> Duration + Send + Sync + 'static,
    {
        self.shared.lock().delay = Some(Arc::new(f));
    }

    /// No per-request delay.
    pub fn clear_delay(&self) {
        self.shared.lock().delay = None;
    }

    /// Usage summed over the conversation turns.
    pub fn main_usage(&self) -> UsageTotals {
        sum_usage(self.main_requests().iter())
    }

    /// Usage summed over every `/v1/messages` request (count_tokens excluded).
    pub fn total_usage(&self) -> UsageTotals {
        sum_usage(
            self.requests()
                .iter()
                .filter(|r| r.kind != RequestKind::CountTokens),
        )
    }
}

fn sum_usage<'a>(it: impl Iterator<Item = &'a LoggedRequest>) -> UsageTotals {
    let mut t = UsageTotals::default();
    for r in it {
        t.requests += 1;
        t.plain += r.plain;
        t.cache_write += r.cache_write;
        t.cache_read += r.cache_read;
        t.output += r.output_tokens;
    }
    t
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

/// The sub-agent warm-up older CLIs (2.0.x, 2.1.0) send after a cold turn: a lone user
/// message `Warmup`, streamed with tools. Not a conversation turn.
fn is_warmup(body: &Value) -> bool {
    let msgs = body.get("messages").and_then(Value::as_array);
    matches!(msgs.map(Vec::as_slice), Some([m]) if message_texts(m) == ["Warmup"])
}

/// The default reply: `reply {n}: {echo}` with echo the first 40 chars of the last user
/// text.
pub fn default_reply(req: &LoggedRequest) -> String {
    let echo: String = req
        .last_user_text()
        .unwrap_or_default()
        .chars()
        .take(40)
        .collect();
    format!("reply {}: {}", req.index, echo)
}

/// Pad `text` with a deterministic filler to at least `size` bytes.
pub fn pad_reply(mut text: String, size: usize) -> String {
    const FILLER: &str = " lorem ipsum dolor sit amet";
    while text.len() < size {
        let need = size - text.len();
        text.push_str(&FILLER[..need.min(FILLER.len())]);
    }
    text
}

struct HttpRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn wants_close(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Some(req) = read_request(&mut reader, &mut writer)? else {
            break;
        };
        let close = req.wants_close();
        handle(&req, &mut writer, shared)?;
        if close {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

fn read_line(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    if r.read_until(b'\n', &mut buf)? == 0 {
        return Ok(None);
    }
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn read_request(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
) -> io::Result<Option<HttpRequest>> {
    // Request line (skip stray empty lines between requests).
    let line = loop {
        match read_line(r)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = line.split_whitespace();
    let method = parts.next().ok_or_else(|| bad("no method"))?.to_string();
    let target = parts.next().ok_or_else(|| bad("no target"))?.to_string();
    let mut headers = Vec::new();
    loop {
        let l = read_line(r)?.ok_or_else(|| bad("eof in headers"))?;
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = HttpRequest {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        w.flush()?;
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let size_line = read_line(r)?.ok_or_else(|| bad("eof in chunk size"))?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers until an empty line.
                while let Some(t) = read_line(r)? {
                    if t.is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = req.body.len();
            req.body.resize(start + size, 0);
            r.read_exact(&mut req.body[start..])?;
            read_line(r)?; // CRLF after the chunk
        }
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        req.body.resize(len, 0);
        r.read_exact(&mut req.body)?;
    }
    Ok(Some(req))
}

fn write_response(
    w: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         request-id: req_shimtest\r\nconnection: keep-alive\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

fn handle(req: &HttpRequest, w: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let path = req.target.split('?').next().unwrap_or("");
    let is_messages = path == "/v1/messages";
    let is_count = path == "/v1/messages/count_tokens";
    if req.method != "POST" || !(is_messages || is_count) {
        shared
            .lock()
            .other
            .push((req.method.clone(), req.target.clone()));
        let body = br#"{"type":"error","error":{"type":"not_found_error","message":"not found"}}"#;
        return write_response(w, "404 Not Found", "application/json", body);
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let warmup = is_warmup(&body);
    // A turn run with `--tools ""` offers none; it still asks for the CLI's
    // full output budget, which side requests never do.
    let full_budget = body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .is_some_and(|m| m >= 32_000);
    let kind = if is_count {
        RequestKind::CountTokens
    } else if stream && (has_tools || full_budget) && !warmup {
        RequestKind::Main
    } else {
        RequestKind::Side
    };

    // Account, number and log under the lock, so concurrent requests get distinct numbers.
    let (mut logged, reply_fn, error_fn, reply_size, latency, delay_fn) = {
        let mut st = shared.lock();
        let usage = if is_count || warmup {
            // Counting tokens writes nothing to the cache; a warm-up is left out of it.
            let bytes: usize = cacheable_blocks(&body).iter().map(|(b, _)| b.len()).sum();
            CacheUsage {
                content_bytes: bytes,
                plain: tokens_for_bytes(bytes),
                ..CacheUsage::default()
            }
        } else {
            st.cache.account(&body)
        };
        let index = if is_count || warmup {
            0
        } else {
            st.counter += 1;
            st.counter
        };
        let logged = LoggedRequest {
            index,
            kind,
            path: req.target.clone(),
            headers: req.headers.clone(),
            body: body.clone(),
            bytes: req.body.len(),
            content_bytes: usage.content_bytes,
            plain: usage.plain,
            cache_write: usage.cache_write,
            cache_read: usage.cache_read,
            reply: String::new(),
            output_tokens: 0,
        };
        (
            logged,
            st.reply.clone(),
            st.error.clone(),
            st.reply_size,
            st.latency,
            st.delay.clone(),
        )
    };

    if is_count {
        shared.lock().log.push(logged.clone());
        let out = json!({"input_tokens": logged.plain});
        return write_response(w, "200 OK", "application/json", out.to_string().as_bytes());
    }

    if let Some((status, message)) = error_fn.as_ref().and_then(|f| f(&logged)) {
        shared.lock().log.push(logged.clone());
        let kind = if status == 400 {
            "invalid_request_error"
        } else {
            "api_error"
        };
        let body = json!({"type": "error", "error": {"type": kind, "message": message}});
        let status_line = format!("{status} Error");
        return write_response(
            w,
            &status_line,
            "application/json",
            body.to_string().as_bytes(),
        );
    }
    let mut text = match &reply_fn {
        Some(f) => f(&logged),
        None => default_reply(&logged),
    };
    if let Some(size) = reply_size {
        text = pad_reply(text, size);
    }
    logged.output_tokens = tokens_for_bytes(text.len()).max(1);
    logged.reply = text.clone();
    shared.lock().log.push(logged.clone());

    if !latency.is_zero() {
        thread::sleep(latency);
    }
    if let Some(f) = &delay_fn {
        thread::sleep(f(&logged));
    }
    let (block, stop_reason) = reply_block(&text, logged.index);

    let model = body.get("model").cloned().unwrap_or(Value::Null);
    let id = format!("msg_shimtest_{:06}", logged.index);
    let usage_in = json!({
        "input_tokens": logged.plain,
        "cache_creation_input_tokens": logged.cache_write,
        "cache_read_input_tokens": logged.cache_read,
    });
    if !stream {
        let mut usage = usage_in;
        usage["output_tokens"] = json!(logged.output_tokens);
        let out = json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block],
            "stop_reason": stop_reason, "stop_sequence": null,
            "usage": usage,
        });
        return write_response(w, "200 OK", "application/json", out.to_string().as_bytes());
    }
    let mut start_usage = usage_in;
    start_usage["output_tokens"] = json!(1);
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": start_usage,
            }}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": match stop_reason {
                "tool_use" => json!({"type": "tool_use", "id": block["id"],
                                     "name": block["name"], "input": {}}),
                _ => json!({"type": "text", "text": ""}),
            }}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": match stop_reason {
                "tool_use" => json!({"type": "input_json_delta",
                                     "partial_json": block["input"].to_string()}),
                _ => json!({"type": "text_delta", "text": text}),
            }}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": logged.output_tokens}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let mut out = Vec::new();
    for (name, data) in events {
        out.extend_from_slice(format!("event: {name}\ndata: {data}\n\n").as_bytes());
    }
    write_response(w, "200 OK", "text/event-stream", &out)
}
