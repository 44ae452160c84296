//! Identity: which pinned sessions a turn may land in.
//!
//! - [`ScopeParts`] are what binds a conversation to a place: the cwd, the
//!   Claude config dir, the CLI version and every flag that shapes a session.
//!   Their hash is the [`Scope`]; each part is kept with a pin, so a turn that
//!   misses can say which part differed.
//! - A [`Chain`] names a conversation's turns (the user's and the replies
//!   between them) without any scope; a [`Node`] is a chain bound to a scope,
//!   the key pins are looked up by.
//! - [`ReplyHash`]es prove the caller received the reply the session holds.
//! - A [`ConvKey`] is stable over a whole conversation (its first user
//!   message), for routing and for grouping turns in reports.

use crate::argv::ParsedArgs;
use crate::observe::Observation;
use memchr::memmem::Finder;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Who said a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One turn of a conversation, as a dialect reads it from a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub role: Role,
    pub text: String,
}

macro_rules! hash_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// A value read back from the store (trusted as written).
            pub fn from_stored(s: String) -> Self {
                $name(s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

hash_type!(
    /// Hash of a turn's [`ScopeParts`].
    Scope
);
hash_type!(
    /// A conversation's turns, without scope: finds the same conversation
    /// in another directory or with other flags.
    Chain
);
hash_type!(
    /// A [`Chain`] within a [`Scope`]: the key pins are found by.
    Node
);
hash_type!(
    /// A reply as compared for proof of receipt.
    ReplyHash
);
hash_type!(
    /// A preamble (instructions) as last sent to a session.
    PreambleHash
);
hash_type!(
    /// The stable key of a conversation: its first user message.
    ConvKey
);

/// Flags whose value shapes the session (a resume would silently ignore a
/// change to most of them, so a change must mean a new session).
pub const SHAPING_FLAGS: &[&str] = &[
    "model",
    "system-prompt",
    "append-system-prompt",
    "system-prompt-file",
    "append-system-prompt-file",
    "agent",
    "agents",
    "tools",
    "allowedTools",
    "disallowedTools",
    "mcp-config",
    "strict-mcp-config",
    "permission-mode",
    "dangerously-skip-permissions",
    "settings",
    "setting-sources",
];

/// Flags whose values may name files whose contents matter.
const FILE_FLAGS: &[&str] = &[
    "system-prompt-file",
    "append-system-prompt-file",
    "agents",
    "mcp-config",
    "settings",
];

pub struct ScopeInput<'a> {
    pub cwd: &'a str,
    pub config_dir: &'a str,
    /// The CLI's version (not its path: the same version installed elsewhere,
    /// or on another host, writes the same sessions).
    pub binary: &'a str,
    pub args: &'a ParsedArgs,
    /// The environment the CLI gets (only what it reads and what shapes a
    /// session is kept, hashed: see [`crate::cli_env`]).
    pub env: &'a [(String, String)],
}

/// Everything a scope is made of, part by part.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ScopeParts {
    pub cwd: String,
    pub config_dir: String,
    pub binary: String,
    /// Each shaping flag present → a hash of its values (and of the contents
    /// of the files they name).
    pub flags: BTreeMap<String, String>,
    /// A hash of the credentials in use (API key, auth token, base URL,
    /// provider and its region or project): whose account the session
    /// runs on. Never kept in clear. Empty: none in the environment (the
    /// config dir's login).
    #[serde(default)]
    pub credentials: String,
    /// Each environment variable present that shapes a session (models,
    /// feature switches, thinking budgets…) → a hash of its value.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A hash of `CLAUDE_SHIM_SCOPE`, the tenant a multi-user server names
    /// (empty: unset).
    #[serde(default)]
    pub tenant: String,
}

/// Why a conversation seen elsewhere is not this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Seen in that directory.
    Cwd(String),
    /// Seen with that Claude config dir.
    ConfigDir(String),
    /// Seen with that CLI version.
    Binary(String),
    /// This shaping flag was added, removed or changed.
    Flag(String),
    /// Seen with other credentials (another key, endpoint or provider).
    Credentials,
    /// This session-shaping environment variable was set, unset or changed.
    Env(String),
    /// Seen for another tenant (`CLAUDE_SHIM_SCOPE`).
    Tenant,
}

fn hex(d: Sha256) -> String {
    // Into a buffer: `hex::encode` collects a char at a time, and a 1 MiB
    // transcript's chain takes a digest per turn.
    let mut out = [0u8; 64];
    hex::encode_to_slice(d.finalize(), &mut out).expect("64 digits for 32 bytes");
    String::from_utf8_lossy(&out).into_owned()
}

/// The Claude config dir as a part of a turn's scope. On one machine it
/// is one (another config dir holds other sessions, so it is another
/// scope). In a fleet (`shared` store) every host has its own config dir
/// and sessions travel between them: it is left out, and a scope is the
/// cwd path, the CLI version and the session-shaping flags.
pub fn config_dir_in_scope(config_dir: &str, shared: bool) -> &str {
    if shared {
        ""
    } else {
        config_dir
    }
}

/// Length-prefixed field, so concatenations cannot collide.
fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

impl ScopeParts {
    /// The parts of a turn. `read` returns a file's contents (injected for tests).
    pub fn of(input: &ScopeInput<'_>, read: impl Fn(&str) -> Option<Vec<u8>>) -> ScopeParts {
        let mut flags = BTreeMap::new();
        for name in SHAPING_FLAGS {
            if !input.args.has(name) {
                continue;
            }
            let mut h = Sha256::new();
            for value in input.args.values(name) {
                field(&mut h, value.as_bytes());
                if FILE_FLAGS.contains(name) {
                    if let Some(contents) = read(value) {
                        field(&mut h, b"file");
                        field(&mut h, &contents);
                    }
                }
            }
            flags.insert((*name).to_owned(), hex(h)[..16].to_owned());
        }
        let (credentials, env, tenant) = environment_parts(input.env);
        ScopeParts {
            cwd: input.cwd.to_owned(),
            config_dir: input.config_dir.to_owned(),
            binary: input.binary.to_owned(),
            flags,
            credentials,
            env,
            tenant,
        }
    }

    pub fn scope(&self) -> Scope {
        let mut h = Sha256::new();
        field(&mut h, b"claude-shim scope v2");
        field(&mut h, self.cwd.as_bytes());
        field(&mut h, self.config_dir.as_bytes());
        field(&mut h, self.binary.as_bytes());
        for (name, value) in &self.flags {
            field(&mut h, name.as_bytes());
            field(&mut h, value.as_bytes());
        }
        // Tagged apart from the flags; absent parts add nothing, so a pin
        // made before they were parts still matches a call without them.
        if !self.credentials.is_empty() {
            field(&mut h, b"credentials");
            field(&mut h, self.credentials.as_bytes());
        }
        for (name, value) in &self.env {
            field(&mut h, b"env");
            field(&mut h, name.as_bytes());
            field(&mut h, value.as_bytes());
        }
        if !self.tenant.is_empty() {
            field(&mut h, b"tenant");
            field(&mut h, self.tenant.as_bytes());
        }
        Scope(hex(h))
    }

    /// How `then` (where the conversation was seen) differs from this turn.
    pub fn differences(&self, then: &ScopeParts) -> Vec<Difference> {
        let mut out = Vec::new();
        if self.cwd != then.cwd {
            out.push(Difference::Cwd(then.cwd.clone()));
        }
        if self.config_dir != then.config_dir {
            out.push(Difference::ConfigDir(then.config_dir.clone()));
        }
        if self.binary != then.binary {
            out.push(Difference::Binary(then.binary.clone()));
        }
        let names: std::collections::BTreeSet<&String> =
            self.flags.keys().chain(then.flags.keys()).collect();
        for name in names {
            if self.flags.get(name) != then.flags.get(name) {
                out.push(Difference::Flag(name.clone()));
            }
        }
        if self.credentials != then.credentials {
            out.push(Difference::Credentials);
        }
        let vars: std::collections::BTreeSet<&String> =
            self.env.keys().chain(then.env.keys()).collect();
        for name in vars {
            if self.env.get(name) != then.env.get(name) {
                out.push(Difference::Env(name.clone()));
            }
        }
        if self.tenant != then.tenant {
            out.push(Difference::Tenant);
        }
        out
    }
}

/// The environment's share of a scope: the credentials' hash, each shaping
/// variable's hash, the tenant's hash. A variable the CLI does not read, or
/// reads without it shaping a session, is no part of it.
fn environment_parts(env: &[(String, String)]) -> (String, BTreeMap<String, String>, String) {
    use crate::cli_env::{class_of, Class};
    let mut sorted: Vec<&(String, String)> = env.iter().collect();
    sorted.sort();
    let mut creds = Sha256::new();
    let mut any_creds = false;
    let mut shaping = BTreeMap::new();
    let mut tenant = String::new();
    for (name, value) in sorted {
        if name == crate::env::SCOPE {
            let mut h = Sha256::new();
            field(&mut h, b"claude-shim tenant v1");
            field(&mut h, value.as_bytes());
            tenant = hex(h)[..32].to_owned();
            continue;
        }
        match class_of(name) {
            Some(Class::Credential) => {
                any_creds = true;
                field(&mut creds, name.as_bytes());
                field(&mut creds, value.as_bytes());
            }
            Some(Class::Shaping) => {
                let mut h = Sha256::new();
                field(&mut h, value.as_bytes());
                shaping.insert(name.clone(), hex(h)[..16].to_owned());
            }
            Some(Class::Inert) | None => {}
        }
    }
    let credentials = match any_creds {
        true => {
            field(&mut creds, b"claude-shim credentials v1");
            hex(creds)[..32].to_owned()
        }
        false => String::new(),
    };
    (credentials, shaping, tenant)
}

/// A user turn as it is hashed: CRLF→LF, trimmed.
pub fn normalize_turn(text: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = text.trim();
    if trimmed.contains('\r') {
        trimmed.replace("\r\n", "\n").trim().to_owned().into()
    } else {
        trimmed.into()
    }
}

impl Chain {
    /// The chain of no turns.
    pub fn empty() -> Chain {
        let mut h = Sha256::new();
        field(&mut h, b"claude-shim chain v2");
        Chain(hex(h))
    }

    /// The chain of a conversation's turns: user turns and the replies
    /// between them (an edited earlier reply is another conversation, which
    /// the session does not hold).
    pub fn of(turns: &[Turn]) -> Chain {
        turns.iter().fold(Chain::empty(), |c, t| match t.role {
            Role::User => c.user(&t.text),
            Role::Assistant => c.reply(&t.text),
        })
    }

    /// One more user turn.
    pub fn user(&self, text: &str) -> Chain {
        let mut h = Sha256::new();
        field(&mut h, b"user");
        field(&mut h, self.0.as_bytes());
        field(&mut h, normalize_turn(text).as_bytes());
        Chain(hex(h))
    }

    /// One more reply (compared as for proof of receipt).
    pub fn reply(&self, text: &str) -> Chain {
        let mut h = Sha256::new();
        field(&mut h, b"reply");
        field(&mut h, self.0.as_bytes());
        field(&mut h, normalize_reply(text).as_bytes());
        Chain(hex(h))
    }

    /// This chain within `scope`.
    pub fn node(&self, scope: &Scope) -> Node {
        let mut h = Sha256::new();
        field(&mut h, b"node");
        field(&mut h, scope.0.as_bytes());
        field(&mut h, self.0.as_bytes());
        Node(hex(h))
    }
}

/// Reply text as compared for proof of receipt: `<thinking>` blocks removed,
/// whitespace runs collapsed, trimmed. One pass into one buffer, without a
/// branch per word: a replayed 1 MiB transcript puts every earlier reply
/// through here on each turn.
pub fn normalize_reply(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    // memchr's searchers, built once: `str::find` was a tenth of this.
    static OPEN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("<thinking>"));
    static CLOSE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("</thinking>"));
    while let Some(start) = OPEN.find(rest.as_bytes()) {
        collapse_into(&mut out, &rest[..start]);
        match CLOSE.find(&rest.as_bytes()[start..]) {
            Some(end) => rest = &rest[start + end + "</thinking>".len()..],
            None => rest = "",
        }
    }
    collapse_into(&mut out, rest);
    if out.last() == Some(&b' ') {
        out.pop();
    }
    // Only ASCII bytes were changed or dropped: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Append `piece` to `out` with each whitespace run made one space (none at
/// the start of `out`). `out` ends with a space only while a gap is pending:
/// pieces join with no boundary of their own, as `split_whitespace` over
/// their concatenation would see them.
fn collapse_into(out: &mut Vec<u8>, piece: &str) {
    let bytes = piece.as_bytes();
    let base = out.len();
    out.resize(base + bytes.len(), 0);
    let mut j = base;
    // The last byte kept was a space, or nothing was kept yet.
    let mut after_space = out[..base].last().is_none_or(|&b| b == b' ');
    let mut i = 0;
    while i < bytes.len() {
        // Most of prose: eight ASCII bytes with no whitespace but single
        // spaces, which collapsing leaves as they are.
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            if let Some(ends_in_space) = unchanged_by_collapsing(word, after_space) {
                out[j..j + 8].copy_from_slice(chunk);
                j += 8;
                i += 8;
                after_space = ends_in_space;
                continue;
            }
        }
        let b = bytes[i];
        // Rare: the lead byte of a character that may be non-ASCII
        // whitespace, decoded.
        if MAY_BE_WIDE_SPACE[usize::from(b)] {
            if let Some(w) = wide_space_width(piece, i) {
                if !after_space {
                    out[j] = b' ';
                    j += 1;
                }
                after_space = true;
                i += w;
                continue;
            }
        }
        // Arithmetic, not branches: a space every few bytes would be
        // mispredicted as often.
        let space = ASCII_SPACE[usize::from(b)];
        let mask = u8::from(space).wrapping_neg();
        out[j] = (b & !mask) | (b' ' & mask);
        j += usize::from(!(space & after_space));
        after_space = space;
        i += 1;
    }
    out.truncate(j);
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes (little-endian) that collapsing copies as they are, and if
/// so whether the last is a space: all ASCII, no whitespace but spaces, no
/// two spaces in a row, none first after a space. Per-byte flags in each
/// byte's high bit, computed without carries between bytes (SWAR).
fn unchanged_by_collapsing(word: u64, after_space: bool) -> Option<bool> {
    if word & HIGHS != 0 {
        return None;
    }
    // ASCII only from here, so adding up to 0x77 to a byte cannot carry.
    let at_least = |lo: u8| word.wrapping_add(ONES * u64::from(0x80 - lo));
    let tab_to_cr = at_least(0x09) & !at_least(0x0E) & HIGHS;
    let diff = word ^ (ONES * u64::from(b' '));
    let spaces = !(((diff & !HIGHS) + !HIGHS) | diff) & HIGHS;
    let first_is_space = spaces & 0x80 != 0;
    let unchanged =
        tab_to_cr == 0 && spaces & (spaces << 8) == 0 && !(after_space && first_is_space);
    unchanged.then_some(spaces >> 63 != 0)
}

/// The width of the non-ASCII whitespace character (`char::is_whitespace`)
/// starting at byte `i`, if one does.
fn wide_space_width(piece: &str, i: usize) -> Option<usize> {
    piece
        .get(i..)?
        .chars()
        .next()
        .filter(|c| c.is_whitespace())
        .map(char::len_utf8)
}

/// ASCII whitespace as `char::is_whitespace` has it (U+0009..U+000D, U+0020).
static ASCII_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b, 0x09..=0x0D | 0x20);
        b += 1;
    }
    t
};

/// The only lead bytes of non-ASCII whitespace: U+0085 and U+00A0 (0xC2),
/// U+1680 (0xE1), U+2000..U+205F (0xE2), U+3000 (0xE3).
static MAY_BE_WIDE_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3);
        b += 1;
    }
    t
};

impl ReplyHash {
    pub fn of(text: &str) -> ReplyHash {
        let mut h = Sha256::new();
        field(&mut h, b"claude-shim reply v1");
        field(&mut h, normalize_reply(text).as_bytes());
        ReplyHash(hex(h))
    }
}

/// The texts of [`reply_hashes`]: each form once, none empty.
pub fn reply_forms(obs: &Observation) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    if let Some(reply) = obs.reply() {
        forms.push(reply.to_owned());
    }
    if !obs.assistant_texts.is_empty() {
        forms.push(obs.assistant_texts.concat());
        forms.push(obs.assistant_texts.join("\n"));
    }
    forms.retain(|f| !normalize_reply(f).is_empty());
    let mut seen = std::collections::HashSet::new();
    forms.retain(|f| seen.insert(f.clone()));
    forms
}

/// Every form of this run's reply a client may replay: the final result (or
/// printed text), and all assistant text blocks joined with and without
/// separators.
pub fn reply_hashes(obs: &Observation) -> Vec<ReplyHash> {
    let mut hashes: Vec<ReplyHash> = reply_forms(obs).iter().map(|f| ReplyHash::of(f)).collect();
    hashes.sort();
    hashes.dedup();
    hashes
}

impl PreambleHash {
    pub fn of(preamble: Option<&str>) -> Option<PreambleHash> {
        preamble.map(|p| {
            let mut h = Sha256::new();
            field(&mut h, b"claude-shim preamble v1");
            field(&mut h, normalize_turn(p).as_bytes());
            PreambleHash(hex(h))
        })
    }
}

impl ConvKey {
    /// The key of a conversation that starts with `first_user_message`.
    pub fn of(first_user_message: &str) -> ConvKey {
        let mut h = Sha256::new();
        field(&mut h, b"claude-shim conversation v1");
        field(&mut h, normalize_turn(first_user_message).as_bytes());
        ConvKey(hex(h)[..32].to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// The rule as first written (two passes, two buffers): the one-pass
    /// `normalize_reply` must give the same text for every input.
    fn normalize_reply_reference(text: &str) -> String {
        let mut rest = text;
        let mut kept = String::new();
        while let Some(start) = rest.find("<thinking>") {
            kept.push_str(&rest[..start]);
            match rest[start..].find("</thinking>") {
                Some(end) => rest = &rest[start + end + "</thinking>".len()..],
                None => {
                    rest = "";
                    break;
                }
            }
        }
        kept.push_str(rest);
        kept.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    proptest::proptest! {
        #[test]
        fn normalize_reply_is_the_reference_rule(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    "[a-z\u{e9}\u{4e2d}]{0,6}",
                    // Eight bytes and more, the fast path's, with single
                    // spaces and the bytes beside whitespace's ranges.
                    "[a-z \u{8}\u{e}\u{1f}!\u{7f}]{0,20}",
                    "[ \t\n\r\u{b}\u{c}\u{85}\u{a0}\u{2003}\u{2028}\u{3000}]{1,3}",
                    proptest::strategy::Just("<thinking>".to_owned()),
                    proptest::strategy::Just("</thinking>".to_owned()),
                    proptest::strategy::Just("<think".to_owned()),
                ],
                0..24,
            )
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(normalize_reply(&text), normalize_reply_reference(&text));
        }
    }

    #[test]
    fn digests_are_lowercase_hex() {
        let mut h = Sha256::new();
        h.update(b"abc");
        assert_eq!(
            hex(h),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Every byte at every place of an eight-byte word, both ways of
    /// starting, against the rule said plainly.
    #[test]
    fn eight_bytes_are_left_as_they_are_exactly_when_collapsing_would() {
        for byte in 0..=u8::MAX {
            for at in 0..8 {
                for (fill, after_space) in [(b'x', false), (b'x', true), (b' ', false)] {
                    let mut word = [b'a', fill, b'c', b'd', b'e', fill, b'g', b'h'];
                    word[at] = byte;
                    let changed = !word.is_ascii()
                        || word.iter().any(|b| (0x09..=0x0D).contains(b))
                        || word.windows(2).any(|w| w == b"  ")
                        || (after_space && word[0] == b' ');
                    let got = unchanged_by_collapsing(u64::from_le_bytes(word), after_space);
                    assert_eq!(
                        got,
                        (!changed).then_some(word[7] == b' '),
                        "{word:?} after a space: {after_space}"
                    );
                }
            }
        }
    }

    #[test]
    fn normalize_reply_joins_words_across_a_removed_block() {
        assert_eq!(
            normalize_reply(" a<thinking>x y</thinking>b \u{a0}c\n"),
            "ab c"
        );
        assert_eq!(normalize_reply("a <thinking>x</thinking> b"), "a b");
        assert_eq!(
            normalize_reply("a\u{2003}\u{2003}b<thinking>never closed"),
            "a b"
        );
    }

    fn args(list: &[&str]) -> ParsedArgs {
        let v: Vec<OsString> = list.iter().map(OsString::from).collect();
        crate::argv::parse(&v).unwrap()
    }

    fn parts(list: &[&str], cwd: &str) -> ScopeParts {
        let a = args(list);
        let input = ScopeInput {
            cwd,
            config_dir: "/h/.claude",
            binary: "2.1.330",
            args: &a,
            env: &[],
        };
        ScopeParts::of(&input, |p| (p == "sp.txt").then(|| b"file body".to_vec()))
    }

    fn sc(list: &[&str], cwd: &str) -> Scope {
        parts(list, cwd).scope()
    }

    #[test]
    fn scope_changes_with_what_shapes_a_session_only() {
        let base = sc(&["-p", "--verbose"], "/w");
        assert_eq!(
            base,
            sc(&["--verbose", "-p", "--output-format", "json"], "/w")
        );
        for other in [
            sc(&["-p", "--model", "opus"], "/w"),
            sc(&["-p", "--append-system-prompt", "x"], "/w"),
            sc(&["-p", "--permission-mode", "plan"], "/w"),
            sc(&["-p", "--allowedTools", "Bash"], "/w"),
            sc(&["-p"], "/other"),
        ] {
            assert_ne!(base, other);
        }
        assert_ne!(
            sc(&["-p", "--system-prompt-file", "sp.txt"], "/w"),
            sc(&["-p", "--system-prompt-file", "other.txt"], "/w")
        );
    }

    #[test]
    fn in_a_fleet_the_config_dir_is_not_part_of_the_scope() {
        let a = args(&["-p", "--model", "opus"]);
        let scope = |config: &str, shared: bool, cwd: &str, version: &str| {
            ScopeParts::of(
                &ScopeInput {
                    cwd,
                    config_dir: config_dir_in_scope(config, shared),
                    binary: version,
                    args: &a,
                    env: &[],
                },
                |_| None,
            )
            .scope()
        };
        // One machine: another config dir is another scope.
        assert_ne!(
            scope("/a/.claude", false, "/w", "2.1.330"),
            scope("/b/.claude", false, "/w", "2.1.330")
        );
        // A fleet: hosts with their own config dirs share the scope…
        assert_eq!(
            scope("/a/.claude", true, "/w", "2.1.330"),
            scope("/b/.claude", true, "/w", "2.1.330")
        );
        // …but not across another cwd path or CLI version.
        assert_ne!(
            scope("/a/.claude", true, "/w", "2.1.330"),
            scope("/b/.claude", true, "/v", "2.1.330")
        );
        assert_ne!(
            scope("/a/.claude", true, "/w", "2.1.330"),
            scope("/b/.claude", true, "/w", "2.1.331")
        );
    }

    #[test]
    fn differences_name_each_part() {
        let now = parts(&["-p", "--model", "opus", "--tools", "Bash"], "/w");
        let then = parts(&["-p", "--model", "sonnet", "--verbose"], "/v");
        assert_eq!(
            now.differences(&then),
            [
                Difference::Cwd("/v".into()),
                Difference::Flag("model".into()),
                Difference::Flag("tools".into()),
            ]
        );
        assert!(now.differences(&now).is_empty());
        let other_cli = ScopeParts {
            binary: "2.0.0".into(),
            config_dir: "/x".into(),
            ..now.clone()
        };
        assert_eq!(
            now.differences(&other_cli),
            [
                Difference::ConfigDir("/x".into()),
                Difference::Binary("2.0.0".into())
            ]
        );
    }

    fn turn(role: Role, text: &str) -> Turn {
        Turn {
            role,
            text: text.into(),
        }
    }

    #[test]
    fn chain_is_ordered_and_normalised() {
        let users = |list: &[&str]| {
            Chain::of(&list.iter().map(|t| turn(Role::User, t)).collect::<Vec<_>>())
        };
        assert_eq!(users(&["a", "b"]), users(&[" a\r\n", "b\n"]));
        assert_ne!(users(&["a", "b"]), users(&["b", "a"]));
        assert_ne!(users(&["ab"]), users(&["a", "b"]));
        assert_eq!(users(&["a"]).user("b"), users(&["a", "b"]));
        let s = sc(&["-p"], "/w");
        let t = sc(&["-p"], "/v");
        assert_ne!(users(&["a"]).node(&s), users(&["a"]).node(&t));
        // Replies between user turns are part of the chain, normalised.
        let with = |reply: &str| {
            Chain::of(&[
                turn(Role::User, "a"),
                turn(Role::Assistant, reply),
                turn(Role::User, "b"),
            ])
        };
        assert_eq!(with("x  y"), with(" x y\n"));
        assert_ne!(with("x y"), with("x y (edited)"));
        assert_ne!(with("a"), users(&["a", "a", "b"]));
    }

    #[test]
    fn replies_compare_whitespace_and_thinking_insensitively() {
        assert_eq!(
            ReplyHash::of("Hello\n\n  world "),
            ReplyHash::of("Hello world")
        );
        assert_eq!(
            ReplyHash::of("<thinking>hm</thinking>Hello"),
            ReplyHash::of("Hello")
        );
        assert_ne!(ReplyHash::of("Hello"), ReplyHash::of("Hello!"));
        let obs = Observation {
            assistant_texts: vec!["Hel".into(), "lo".into()],
            text: Some("Hello\n".into()),
            ..Default::default()
        };
        let hashes = reply_hashes(&obs);
        assert!(hashes.contains(&ReplyHash::of("Hello")));
        assert!(hashes.contains(&ReplyHash::of("Hel\nlo")));
    }

    #[test]
    fn conversation_key_is_the_first_message() {
        assert_eq!(ConvKey::of(" hi\r\n"), ConvKey::of("hi"));
        assert_ne!(ConvKey::of("hi"), ConvKey::of("hello"));
        assert_eq!(ConvKey::of("hi").as_str().len(), 32);
    }
}
