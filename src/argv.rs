//! Claude Code flag grammar.
//!
//! The real CLI parses its argv with the JS `commander` library, so this
//! module mirrors commander's rules rather than clap's: a `<value>` option
//! always swallows the next argument (even `-x` or `--`), an `[optional]` one
//! only takes it when it does not look like an option, and a `<values...>`
//! one takes its first value like `<value>`, then keeps taking arguments
//! until one looks like an option. Only the
//! root command's options are known; anything else is an error so the caller
//! can pass the invocation through untouched.

use std::ffi::OsString;

use Arity::{Flag, One, Optional, Variadic};

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// `--verbose`
    Flag,
    /// `--model <model>`
    One,
    /// `--resume [value]`
    Optional,
    /// `--add-dir <directories...>`
    Variadic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    /// Canonical name, without the leading `--`.
    pub long: &'static str,
    /// Other long spellings, without `--`.
    pub aliases: &'static [&'static str],
    pub short: Option<char>,
    pub arity: Arity,
}

const fn long(long: &'static str, arity: Arity) -> FlagSpec {
    FlagSpec {
        long,
        aliases: &[],
        short: None,
        arity,
    }
}

const fn short(long: &'static str, short: char, arity: Arity) -> FlagSpec {
    FlagSpec {
        long,
        aliases: &[],
        short: Some(short),
        arity,
    }
}

const fn alias(long: &'static str, aliases: &'static [&'static str], arity: Arity) -> FlagSpec {
    FlagSpec {
        long,
        aliases,
        short: None,
        arity,
    }
}

/// Root options of Claude Code 2.1.330 (subcommand options excluded).
static SPECS: &[FlagSpec] = &[
    // Listed by `claude --help`.
    long("add-dir", Variadic),
    long("agent", One),
    long("agents", One),
    long("allow-dangerously-skip-permissions", Flag),
    alias("allowedTools", &["allowed-tools"], Variadic),
    long("append-system-prompt", One),
    long("autocompact", One),
    long("ax-screen-reader", Flag),
    long("bare", Flag),
    long("betas", Variadic),
    alias("bg", &["background"], Flag),
    long("brief", Flag),
    long("chrome", Flag),
    long("cloud", Optional),
    short("continue", 'c', Flag),
    long("dangerously-skip-permissions", Flag),
    short("debug", 'd', Optional),
    long("debug-file", One),
    long("desktop", Flag),
    long("disable-slash-commands", Flag),
    alias("disallowedTools", &["disallowed-tools"], Variadic),
    long("effort", One),
    long("environment", One),
    long("exclude-dynamic-system-prompt-sections", Flag),
    long("fallback-model", One),
    long("file", Variadic),
    long("fork-session", Flag),
    long("forward-subagent-text", Flag),
    long("from-pr", Optional),
    short("help", 'h', Flag),
    long("ide", Flag),
    long("include-hook-events", Flag),
    long("include-partial-messages", Flag),
    long("input-format", One),
    long("json-schema", One),
    long("max-budget-usd", One),
    long("mcp-config", Variadic),
    long("model", One),
    short("name", 'n', One),
    long("no-chrome", Flag),
    long("no-session-persistence", Flag),
    long("output-format", One),
    long("permission-mode", One),
    long("permission-prompts", One),
    long("plugin-dir", One),
    long("plugin-url", One),
    short("print", 'p', Flag),
    long("prompt-suggestions", Optional),
    long("remote-control", Optional),
    long("remote-control-session-name-prefix", One),
    long("replay-user-messages", Flag),
    long("restricted", Flag),
    short("resume", 'r', Optional),
    long("safe-mode", Flag),
    long("session-id", One),
    long("setting-sources", One),
    long("settings", One),
    long("strict-mcp-config", Flag),
    long("system-prompt", One),
    long("system-prompt-snapshot", One),
    long("teleport", Optional),
    long("tmux", Flag),
    long("tools", Variadic),
    long("verbose", Flag),
    short("version", 'v', Flag),
    short("worktree", 'w', Optional),
    // Hidden from `--help` but accepted by the root command.
    long("advisor", One),
    long("agent-color", One),
    long("agent-id", One),
    long("agent-name", One),
    long("agent-type", One),
    long("allow-other-models", Flag),
    long("append-subagent-system-prompt", One),
    long("append-subagent-system-prompt-file", One),
    long("append-system-prompt-file", One),
    long("await-initialize", Flag),
    long("channels", Variadic),
    long("correlation-id", One),
    long("dangerously-load-development-channels", Variadic),
    long("debug-to-stderr", Flag), // also `-d2e`, see MULTI_CHAR_SHORTS
    long("enable-auth-status", Flag),
    long("enable-auto-mode", Flag),
    long("fast-mode", One),
    long("include-unsupported-models", Flag),
    long("init", Flag),
    long("init-only", Flag),
    long("initialize-fields", One),
    long("maintenance", Flag),
    long("managed-settings", One),
    long("managed-settings-in-initialize", Flag),
    long("max-thinking-tokens", One),
    long("max-turns", One),
    long("mcp-debug", Flag),
    long("messaging-socket-path", One),
    long("parent-session-id", One),
    long("permission-prompt-tool", One),
    long("plan-mode-required", Flag),
    long("prefill", One),
    long("prefill-b64", One),
    long("proactivity", One),
    long("rc", Optional),
    long("remote", Optional),
    long("resume-drops-turn", One),
    long("resume-session-at", One),
    long("rewind-files", One),
    long("sdk-url", One),
    long("session-began-as-copy", One),
    long("session-mirror", Flag),
    long("system-prompt-file", One),
    long("task-budget", One),
    long("team-name", One),
    long("teammate-mode", One),
    long("thinking", One),
    long("thinking-display", One),
    long("workload", One),
];

/// Commander matches a short flag by comparing the whole argument, which lets
/// the CLI register `-d2e`; such a flag is only recognised standing alone.
const MULTI_CHAR_SHORTS: &[(&str, &str)] = &[("d2e", "debug-to-stderr")];

/// Looks up a long option (without `--`) by canonical name or alias.
pub fn spec_long(name: &str) -> Option<&'static FlagSpec> {
    SPECS
        .iter()
        .find(|s| s.long == name || s.aliases.contains(&name))
}

pub fn spec_short(c: char) -> Option<&'static FlagSpec> {
    SPECS.iter().find(|s| s.short == Some(c))
}

/// `body` is a short argument without its dash, e.g. `p` or `d2e`.
fn spec_exact_short(body: &str) -> Option<&'static FlagSpec> {
    let mut chars = body.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => spec_short(c),
        _ => MULTI_CHAR_SHORTS
            .iter()
            .find(|(s, _)| *s == body)
            .and_then(|(_, name)| spec_long(name)),
    }
}

/// One occurrence of a flag; `start..end` are indices into the args slice
/// (argv WITHOUT argv[0]) this occurrence occupies (for a cluster `-pc`, both
/// uses share the range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagUse {
    /// Canonical long name, e.g. `allowedTools` for `--allowed-tools`.
    pub name: &'static str,
    pub values: Vec<String>,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Positional {
    pub index: usize,
    pub value: String,
    pub after_dashdash: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedArgs {
    pub flags: Vec<FlagUse>,
    pub positionals: Vec<Positional>,
    /// Index of the `--` that ended option parsing, if any.
    pub dashdash: Option<usize>,
}

impl ParsedArgs {
    pub fn has(&self, name: &str) -> bool {
        self.uses(name).next().is_some()
    }

    /// The last occurrence's last value (commander keeps the last one).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.uses(name)
            .last()
            .and_then(|u| u.values.last())
            .map(String::as_str)
    }

    /// Every value of every occurrence, in argv order.
    pub fn values(&self, name: &str) -> Vec<&str> {
        self.uses(name)
            .flat_map(|u| u.values.iter().map(String::as_str))
            .collect()
    }

    /// Occurrences of `name`, which may be the canonical name or an alias.
    pub fn uses<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a FlagUse> + 'a {
        let canonical = spec_long(name).map(|s| s.long);
        self.flags.iter().filter(move |u| Some(u.name) == canonical)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unknown flag {0}")]
    UnknownFlag(String),
    #[error("flag {0} needs a value")]
    MissingValue(String),
    #[error("flag {0} takes no value")]
    UnexpectedValue(String),
    #[error("argument {0} is not valid UTF-8")]
    NotUtf8(usize),
}

/// Commander's `maybeOption`: a lone `-` is an ordinary argument.
fn looks_like_option(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-')
}

/// Parses `args` (argv without argv[0]) the way the real CLI's root command
/// would.
/// argv without every occurrence of the long flag `name` (one that takes
/// no value and has no short form, so it never shares an argument).
pub fn without(args: &[OsString], parsed: &ParsedArgs, name: &str) -> Vec<OsString> {
    let gone: Vec<std::ops::Range<usize>> = parsed.uses(name).map(|u| u.start..u.end).collect();
    args.iter()
        .enumerate()
        .filter(|(i, _)| !gone.iter().any(|r| r.contains(i)))
        .map(|(_, a)| a.clone())
        .collect()
}

pub fn parse(args: &[OsString]) -> Result<ParsedArgs, ParseError> {
    let args = args
        .iter()
        .enumerate()
        .map(|(i, a)| a.to_str().ok_or(ParseError::NotUtf8(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut parser = Parser {
        args: &args,
        next: 0,
        out: ParsedArgs::default(),
    };
    parser.run()?;
    Ok(parser.out)
}

struct Parser<'a> {
    args: &'a [&'a str],
    /// Index of the next argument not yet consumed.
    next: usize,
    out: ParsedArgs,
}

impl Parser<'_> {
    fn run(&mut self) -> Result<(), ParseError> {
        while let Some(&arg) = self.args.get(self.next) {
            let index = self.next;
            self.next += 1;
            if arg == "--" {
                self.out.dashdash = Some(index);
                for rest in index + 1..self.args.len() {
                    self.positional(rest, true);
                }
                self.next = self.args.len();
            } else if let Some(body) = arg.strip_prefix("--") {
                self.long(index, arg, body)?;
            } else if looks_like_option(arg) {
                self.short_cluster(index, &arg[1..])?;
            } else {
                self.positional(index, false);
            }
        }
        Ok(())
    }

    fn positional(&mut self, index: usize, after_dashdash: bool) {
        self.out.positionals.push(Positional {
            index,
            value: self.args[index].to_owned(),
            after_dashdash,
        });
    }

    fn long(&mut self, start: usize, arg: &str, body: &str) -> Result<(), ParseError> {
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let spec = spec_long(name).ok_or_else(|| ParseError::UnknownFlag(arg.to_owned()))?;
        let values = match inline {
            // `--x=v` gives exactly one value, even for a variadic option.
            Some(_) if spec.arity == Flag => {
                return Err(ParseError::UnexpectedValue(format!("--{name}")))
            }
            Some(value) => vec![value.to_owned()],
            None => self.take_values(spec, &format!("--{name}"))?,
        };
        self.push(spec.long, values, start);
        Ok(())
    }

    /// `-pc`, `-rabc`, `-n NAME`, `-d2e`: booleans peel off one letter at a
    /// time; the first letter that takes a value swallows the rest.
    fn short_cluster(&mut self, start: usize, mut body: &str) -> Result<(), ParseError> {
        let mut names = Vec::new();
        let last = loop {
            if let Some(spec) = spec_exact_short(body) {
                let values = self.take_values(spec, &format!("-{body}"))?;
                break (spec.long, values);
            }
            let mut chars = body.chars();
            let spec = chars
                .next()
                .and_then(spec_short)
                .ok_or_else(|| ParseError::UnknownFlag(format!("-{body}")))?;
            if spec.arity != Flag {
                break (spec.long, vec![chars.as_str().to_owned()]);
            }
            names.push(spec.long);
            body = chars.as_str();
        };
        for name in names {
            self.push(name, Vec::new(), start);
        }
        self.push(last.0, last.1, start);
        Ok(())
    }

    /// Consumes the values following a flag that stood alone as an argument.
    fn take_values(&mut self, spec: &FlagSpec, written: &str) -> Result<Vec<String>, ParseError> {
        let mut values = Vec::new();
        match spec.arity {
            Flag => {}
            Optional => values.extend(self.take_if(|a| !looks_like_option(a))),
            // Commander takes the first value unconditionally, even `--`.
            One | Variadic => {
                let first = self
                    .take_if(|_| true)
                    .ok_or_else(|| ParseError::MissingValue(written.to_owned()))?;
                values.push(first);
                if spec.arity == Variadic {
                    while let Some(value) = self.take_if(|a| !looks_like_option(a)) {
                        values.push(value);
                    }
                }
            }
        }
        Ok(values)
    }

    fn take_if(&mut self, accept: impl Fn(&str) -> bool) -> Option<String> {
        let arg = self.args.get(self.next).filter(|a| accept(a))?;
        self.next += 1;
        Some((*arg).to_owned())
    }

    fn push(&mut self, name: &'static str, values: Vec<String>, start: usize) {
        self.out.flags.push(FlagUse {
            name,
            values,
            start,
            end: self.next,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    /// Splits a command line on spaces; `''` stands for an empty argument.
    fn words(line: &str) -> Vec<OsString> {
        let word = |w| if w == "''" { "" } else { w };
        line.split_whitespace().map(|w| word(w).into()).collect()
    }

    /// Renders a parse as argv-ordered tokens: `name=v1,v2@start-end` for
    /// flags, `'value'@index` for positionals, `--@index` for the separator.
    fn render(result: Result<ParsedArgs, ParseError>) -> String {
        let parsed = match result {
            Ok(parsed) => parsed,
            Err(e) => return format!("ERR {e}"),
        };
        let mut tokens: Vec<(usize, String)> = Vec::new();
        for u in &parsed.flags {
            let values = if u.values.is_empty() {
                String::new()
            } else {
                format!("={}", u.values.join(","))
            };
            tokens.push((u.start, format!("{}{values}@{}-{}", u.name, u.start, u.end)));
        }
        for p in &parsed.positionals {
            assert_eq!(
                p.after_dashdash,
                parsed.dashdash.is_some_and(|d| p.index > d)
            );
            tokens.push((p.index, format!("'{}'@{}", p.value, p.index)));
        }
        if let Some(d) = parsed.dashdash {
            tokens.push((d, format!("--@{d}")));
        }
        tokens.sort_by_key(|(i, _)| *i);
        tokens
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn parse_table() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            // Booleans, and commander rejecting `=` on them.
            ("--verbose", "verbose@0-1"),
            ("--verbose=x", "ERR flag --verbose takes no value"),
            ("-p", "print@0-1"),
            // One value: always the next argument, even if it looks like a flag.
            ("--model M", "model=M@0-2"),
            ("--model=M", "model=M@0-1"),
            ("--model=", "model=@0-1"),
            ("--model --verbose", "model=--verbose@0-2"),
            ("--model --", "model=--@0-2"),
            ("--model", "ERR flag --model needs a value"),
            ("-n x", "name=x@0-2"),
            ("-nx", "name=x@0-1"),
            ("-n", "ERR flag -n needs a value"),
            // Optional value: only if the next argument is not option-like.
            ("-r", "resume@0-1"),
            ("-r abc", "resume=abc@0-2"),
            ("-p -r hello", "print@0-1 resume=hello@1-3"),
            ("-r -p", "resume@0-1 print@1-2"),
            ("-r -", "resume=-@0-2"),
            ("-r -- x", "resume@0-1 --@1 'x'@2"),
            ("--resume=abc", "resume=abc@0-1"),
            ("-rabc", "resume=abc@0-1"),
            ("-r=abc", "resume==abc@0-1"),
            ("--debug api,hooks", "debug=api,hooks@0-2"),
            // Variadic: first value unconditionally, then until option-like.
            ("--add-dir a b -p", "add-dir=a,b@0-3 print@3-4"),
            ("--add-dir a - c", "add-dir=a,-,c@0-4"),
            ("--add-dir a -- b", "add-dir=a@0-2 --@2 'b'@3"),
            ("--add-dir -x b", "add-dir=-x,b@0-3"),
            ("--add-dir=a b", "add-dir=a@0-1 'b'@1"),
            ("--add-dir a --add-dir b", "add-dir=a@0-2 add-dir=b@2-4"),
            ("--add-dir", "ERR flag --add-dir needs a value"),
            // Aliases resolve to the canonical name.
            ("--allowed-tools Bash Edit", "allowedTools=Bash,Edit@0-3"),
            ("--allowedTools=Bash", "allowedTools=Bash@0-1"),
            ("--disallowed-tools Bash", "disallowedTools=Bash@0-2"),
            ("--background", "bg@0-1"),
            // Short clusters.
            ("-pc", "print@0-1 continue@0-1"),
            ("-pcr x", "print@0-2 continue@0-2 resume=x@0-2"),
            ("-pn x", "print@0-2 name=x@0-2"),
            ("-pnx", "print@0-1 name=x@0-1"),
            ("-pz", "ERR unknown flag -z"),
            ("-d2e", "debug-to-stderr@0-1"),
            ("-d2", "debug=2@0-1"),
            ("-pd2e", "print@0-1 debug-to-stderr@0-1"),
            // `--` and positionals.
            ("-", "'-'@0"),
            ("hi -p there", "'hi'@0 print@1-2 'there'@2"),
            ("-p -- -p --x", "print@0-1 --@1 '-p'@2 '--x'@3"),
            ("-- --", "--@0 '--'@1"),
            ("--setting-sources ''", "setting-sources=@0-2"),
            // Unknown flags.
            ("--bogus", "ERR unknown flag --bogus"),
            ("--bogus=1", "ERR unknown flag --bogus=1"),
            ("-x", "ERR unknown flag -x"),
            ("--=x", "ERR unknown flag --=x"),
            ("-p hi -Z", "ERR unknown flag -Z"),
        ];
        for (args, want) in cases {
            assert_eq!(render(parse(&words(args))), *want, "args: {args}");
        }
    }

    #[test]
    fn non_utf8_is_an_error_with_its_index() {
        let args = vec![
            OsString::from("-p"),
            OsString::from_vec(vec![0x66, 0x6f, 0xff]),
        ];
        assert_eq!(parse(&args), Err(ParseError::NotUtf8(1)));
    }

    #[test]
    fn accessors() {
        let parsed = parse(&words("--allowed-tools A B -r x --allowedTools=C -r")).unwrap();
        assert!(parsed.has("allowedTools"));
        assert!(parsed.has("allowed-tools"));
        assert!(!parsed.has("print"));
        assert!(!parsed.has("no-such-flag"));
        assert_eq!(parsed.values("allowed-tools"), ["A", "B", "C"]);
        assert_eq!(parsed.value("allowedTools"), Some("C"));
        // The last `-r` has no value, and the last occurrence decides.
        assert_eq!(parsed.value("resume"), None);
        assert_eq!(parsed.uses("resume").count(), 2);
    }

    #[test]
    fn without_removes_every_occurrence_and_nothing_else() {
        let args = words("-p --no-session-persistence --model m --no-session-persistence -- x");
        let parsed = parse(&args).unwrap();
        let out = without(&args, &parsed, "no-session-persistence");
        assert_eq!(out, words("-p --model m -- x"));
        let reparsed = parse(&out).unwrap();
        assert_eq!(reparsed.positionals[0].value, "x");
    }

    #[test]
    fn spec_lookup() {
        assert_eq!(
            spec_long("allowed-tools").map(|s| s.long),
            Some("allowedTools")
        );
        assert_eq!(spec_long("background").map(|s| s.long), Some("bg"));
        assert_eq!(spec_short('r').map(|s| s.arity), Some(Optional));
        assert_eq!(spec_short('z'), None);
        for (i, s) in SPECS.iter().enumerate() {
            let dup = SPECS[i + 1..]
                .iter()
                .any(|t| t.long == s.long || (s.short.is_some() && t.short == s.short));
            assert!(!dup, "duplicate spec {}", s.long);
        }
    }
}
