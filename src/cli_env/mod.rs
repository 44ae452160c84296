//! The environment variables the real Claude Code CLI reads, each in one
//! class: [`Class::Credential`] (whose account pays, which endpoint serves),
//! [`Class::Shaping`] (what a new session is: models, prompts, tools,
//! memory), [`Class::Inert`] (cannot change a session's content). The scope
//! of a conversation (`identity.rs`) keeps a hash of the credentials and of
//! each shaping variable, and nothing of the rest.
//!
//! # Where the list came from
//!
//! The extraction (`tests/support/bundle.rs`, `names_read_by`) over the linux-x64 platform binary (the package
//! `@anthropic-ai/claude-code-linux-x64`: a native executable with the
//! JavaScript bundle inside) of four releases: 2.1.302 (the oldest
//! supported), 2.1.315, 2.1.330 (the pin, `.ci/claude-code-version`) and
//! 2.1.332 (the newest when this was written). It found 1,454, 1,492, 1,636
//! and 1,658 names, 1,740 in all, every one of them in [`VARS`]. [`VARS`] also
//! holds 56 names those releases read in ways no pattern below follows,
//! found by reading the bundle and marked "read indirectly": the per-model
//! `VERTEX_REGION_*` (a table of another module), and names on the CLI's own
//! lists of variables it knows, allows in settings, or checks as a provider's.
//!
//! The extraction runs over the raw bytes, split at control bytes (a bundled
//! module's source is one run of text; machine code breaks into short runs),
//! and finds, in each module:
//! - `process.env.X`, `process.env?.X`, `process.env["X"]` (any quote), and
//!   `process.env[K]` where the module declares `var K="X"` (and `K` as
//!   nothing else);
//! - the typed registry that recent releases read nearly all their own
//!   variables through (`s.CLAUDE_CODE_X`, a proxy over `process.env`): a
//!   module's `Wr(a,{X:()=>b,…})` whose bindings are mostly `b=H.bool()`,
//!   `H.str()`, `H.int(…)`, `H.triBool()`… (property names, which minifying
//!   keeps). It alone finds 1,373 names of 2.1.330;
//! - `Bun.env.X` and a bare `env.X`; `e=process.env` (a default parameter's
//!   too) then `e.X`; `{X,Y:y}=process.env`;
//! - the module's helpers that read the variable their parameter names
//!   (`function f(e){return process.env[e]}`, `f=(e)=>…`, and those that pass
//!   it on to one), called with a literal, `f("X")`: in that module, or in
//!   the modules that import the helper by its exported name;
//! - literal lists read item by item: `for(let k of["X","Y"])…process.env[k]`,
//!   `["X"].some((k)=>process.env[k])`, or the same over a list the module
//!   declares once (`var L=["X"]`);
//! - the built-in plugins' `env.get("X")` and their manifests'
//!   `env:{reads:["X",…]}`;
//! - OpenTelemetry's `getStringFromEnv("X")` and its siblings, and the AWS
//!   SDK's `environmentVariableSelector:(e)=>e.X` (or `e[K]`).
//!
//! # Updating it
//!
//! Run `tests/e2e/cli_env.rs` against the new release
//! (`CLAUDE_SHIM_TEST_CLI=… cargo test --release --test e2e cli_env`): it
//! names every variable the extraction finds that [`VARS`] lacks. Add each in
//! its sorted place with a class, and a reason where it is not obvious. Keep
//! the names a newer release no longer reads: an older supported one still
//! does. Between shaping and inert, when in doubt, shaping: a needless split
//! costs a cold turn, a missed one resumes a session that differs.
//!
//! The list itself is `vars.tsv` beside this file: one variable a line, its
//! name, its class (`credential`, `shaping`, `inert`) and, where the class is
//! not plain from the name, why — sorted by name. `tests/e2e/cli_env.rs`
//! fails when the pinned CLI reads a name the list has not classified.

/// What a variable can change about a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Whose account pays, which endpoint serves: keys, tokens, base URLs,
    /// the provider and its region, project or profile.
    Credential,
    /// What a new session is: what the model is sent or can do.
    Shaping,
    /// Cannot change a session's content: telemetry, the terminal, timeouts,
    /// transport, the OS and the process around the CLI.
    Inert,
}

impl Class {
    /// The class a table line names (a const fn: the table is read at
    /// compile time).
    const fn parse(word: &[u8]) -> Option<Class> {
        match word {
            b"credential" => Some(Class::Credential),
            b"shaping" => Some(Class::Shaping),
            b"inert" => Some(Class::Inert),
            _ => None,
        }
    }
}

const TABLE: &str = include_str!("vars.tsv");

/// Lines in [`TABLE`] (each ends with a newline).
const LINES: usize = {
    let bytes = TABLE.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            n += 1;
        }
        i += 1;
    }
    n
};

/// `bytes[from..to]`, in a const fn.
const fn within(bytes: &[u8], from: usize, to: usize) -> &[u8] {
    bytes.split_at(to).0.split_at(from).1
}

/// [`TABLE`] read at compile time: a line that does not parse (no class, an
/// unknown one, no final newline) fails the build, naming its number.
static VARS: [(&str, Class); LINES] = {
    let bytes = TABLE.as_bytes();
    let mut out = [("", Class::Inert); LINES];
    let (mut line, mut start) = (0, 0);
    while line < LINES {
        // The name ends at the first tab, the class at the next tab or the
        // line's end.
        let mut tab = start;
        while bytes[tab] != b'\t' && bytes[tab] != b'\n' {
            tab += 1;
        }
        let mut end = tab + 1;
        while bytes[end] != b'\t' && bytes[end] != b'\n' {
            end += 1;
        }
        let Ok(name) = std::str::from_utf8(within(bytes, start, tab)) else {
            panic!("vars.tsv: a name that is not UTF-8");
        };
        let Some(class) = Class::parse(within(bytes, tab + 1, end)) else {
            panic!("vars.tsv: a line without a known class");
        };
        out[line] = (name, class);
        let mut i = end;
        while bytes[i] != b'\n' {
            i += 1;
        }
        start = i + 1;
        line += 1;
    }
    out
};

/// Every variable the CLI reads, sorted by name (byte order), with its class
/// (`vars.tsv`, read when the shim is compiled: a turn classifies its
/// environment against it, and parsing 1,796 lines at run time cost 1.1M
/// instructions a turn).
pub fn vars() -> &'static [(&'static str, Class)] {
    &VARS
}

/// The class of `name`, if Claude Code reads it (see [`vars`]).
pub fn class_of(name: &str) -> Option<Class> {
    let vars = vars();
    vars.binary_search_by(|(n, _)| n.cmp(&name))
        .ok()
        .map(|i| vars[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Class::{Credential, Inert, Shaping};

    #[test]
    fn every_line_of_the_table_is_read() {
        assert_eq!(vars().len(), TABLE.lines().count());
        for line in TABLE.lines() {
            assert!(line.split('\t').count() <= 3, "{line:?}");
        }
    }
    #[test]
    fn the_list_is_sorted_without_duplicates() {
        for pair in vars().windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        for (name, _) in vars() {
            assert!(
                name.bytes().all(|b| b.is_ascii_uppercase()
                    || b.is_ascii_digit()
                    || b == b'_'
                    || b.is_ascii_lowercase()),
                "{name:?} is not a variable's name"
            );
        }
    }

    #[test]
    fn spot_checks() {
        assert_eq!(class_of("ANTHROPIC_API_KEY"), Some(Credential));
        assert_eq!(class_of("ANTHROPIC_BASE_URL"), Some(Credential));
        assert_eq!(class_of("CLAUDE_CODE_USE_BEDROCK"), Some(Credential));
        assert_eq!(class_of("ANTHROPIC_MODEL"), Some(Shaping));
        assert_eq!(class_of("CLAUDE_CODE_DISABLE_AUTO_MEMORY"), Some(Shaping));
        assert_eq!(class_of("MAX_THINKING_TOKENS"), Some(Shaping));
        assert_eq!(class_of("DISABLE_TELEMETRY"), Some(Inert));
        assert_eq!(class_of("HTTP_PROXY"), Some(Inert));
        assert_eq!(class_of("HOME"), Some(Inert));
        assert_eq!(class_of("NOT_A_VARIABLE_CLAUDE_READS"), None);
        assert_eq!(class_of(""), None);
    }
}
