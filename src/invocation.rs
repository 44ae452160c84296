//! Classification of a claude invocation: whether the shim may manage its
//! session, or must pass it through untouched (and why).

use std::ffi::OsString;

use crate::argv::{self, ParsedArgs};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    Text,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-p/--print`.
    Print,
    /// No `-p`, but stream-json in and out: how the Agent SDK drives the CLI.
    Sdk,
    /// No `-p`, but stdout is not a terminal: the CLI prints all the same
    /// (2.1.302 to 2.1.332 alike, whatever stdin is), as a plugin that runs
    /// `claude --model M PROMPT` from a program gets it.
    Printed,
}

/// Why an invocation is handed to the real CLI unchanged. Flag names are
/// canonical long names without `--` (as in [`argv::FlagUse::name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassReason {
    Bypass,
    Interactive,
    Subcommand(String),
    Version,
    Help,
    /// The caller picks the session itself, so the shim must not pick one.
    CallerSession(&'static str),
    /// Resuming is meaningless or sessions live somewhere the shim can't see.
    Unsupported(&'static str),
    /// Anything the shim does not understand passes through.
    Unparsed(String),
}

impl PassReason {
    /// One human line, for `claude-shim explain` and logs.
    pub fn describe(&self) -> String {
        match self {
            Self::Bypass => "shim bypass requested".to_owned(),
            Self::Interactive => {
                "interactive session (neither -p/--print nor Agent SDK stream-json, and stdout is a terminal)".to_owned()
            }
            Self::Subcommand(name) => format!("`claude {name}` subcommand"),
            Self::Version => "--version".to_owned(),
            Self::Help => "--help".to_owned(),
            Self::CallerSession(flag) => format!("caller chooses the session itself (--{flag})"),
            Self::Unsupported(flag) => {
                format!("--{flag} makes resuming meaningless or moves the session elsewhere")
            }
            Self::Unparsed(msg) => format!("arguments not understood ({msg})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    pub mode: Mode,
    pub input: InputFormat,
    pub output: OutputFormat,
    pub args: ParsedArgs,
    /// `--resume <uuid>` given by the caller (Agent SDK style): managed only
    /// to strip history the session already holds; argv is kept.
    pub caller_resume: Option<String>,
    /// `--no-session-persistence`: the shim runs the turn with a session of
    /// its own (without the flag) and deletes it once it is of no more use.
    pub ephemeral: bool,
}

/// The user's switches, and the one fact of the call, that change how
/// invocations are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// `CLAUDE_SHIM_BYPASS`: pass everything through.
    pub bypass: bool,
    /// `CLAUDE_SHIM_PERSISTENCE=respect`: pass `--no-session-persistence`
    /// calls through instead of resuming them in ephemeral sessions.
    pub respect_persistence: bool,
    /// stdout is a terminal: a call without `-p` starts the interactive UI
    /// (else the CLI prints, see [`Mode::Printed`]).
    pub stdout_terminal: bool,
}

impl Default for Policy {
    /// No switch on, and stdout a terminal: a call without `-p` is
    /// interactive unless known to print.
    fn default() -> Policy {
        Policy {
            bypass: false,
            respect_persistence: false,
            stdout_terminal: true,
        }
    }
}

impl Policy {
    pub fn from_env() -> Policy {
        Policy {
            bypass: crate::env::bypass(),
            respect_persistence: crate::env::respect_persistence(),
            stdout_terminal: nix::unistd::isatty(1).unwrap_or(false),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    PassThrough(PassReason),
    Managed(Managed),
}

/// Root subcommands, hidden ones and aliases included, of every release the
/// shim supports (2.1.330's hidden ones found by `claude WORD --help`; older
/// releases had `config`, `setup`, `migrate-installer`…). Without `-p` a
/// positional word that names one runs it, even after `--`; `help` is
/// commander's implicit one in older releases.
const SUBCOMMANDS: &[&str] = &[
    "agents",
    "attach",
    "auth",
    "auto-mode",
    "config",
    "design-login",
    "doctor",
    "edit-chrome-settings",
    "edit-hook",
    "edit-memory-settings",
    "edit-permission-rules",
    "edit-sandbox-settings",
    "edit-skill-overrides",
    "gateway",
    "import",
    "import-conversations",
    "install",
    "logs",
    "mcp",
    "plugin",
    "plugins",
    "project",
    "purge",
    "respawn",
    "rm",
    "sandbox",
    "setup-token",
    "stop",
    "kill",
    "ultrareview",
    "update",
    "upgrade",
    "migrate-installer",
    "remote-control",
    "setup",
    "workspace-trust",
    "worktree-hook",
    "help",
];

/// Whether `word`, as a positional argument of a call without `-p`, would
/// run a subcommand instead of being a prompt.
pub fn is_subcommand(word: &str) -> bool {
    SUBCOMMANDS.contains(&word)
}

/// Flags with which the caller already manages which session runs.
const CALLER_SESSION: &[&str] = &[
    "continue",
    "resume",
    "session-id",
    "fork-session",
    "resume-session-at",
    "resume-drops-turn",
    "teleport",
    "from-pr",
    "cloud",
    "remote",
    "sdk-url",
    "rewind-files",
    "session-began-as-copy",
];

/// Flags after which there is no local, resumable session to manage.
const UNSUPPORTED: &[&str] = &[
    "bg",
    "worktree",
    "tmux",
    "init-only",
    "remote-control",
    "rc",
    "desktop",
];

/// `args` is argv without argv[0].
pub fn classify(args: &[OsString], policy: Policy) -> Class {
    match classify_inner(args, policy) {
        Ok(managed) => Class::Managed(managed),
        Err(reason) => Class::PassThrough(reason),
    }
}

fn classify_inner(args: &[OsString], policy: Policy) -> Result<Managed, PassReason> {
    if policy.bypass {
        return Err(PassReason::Bypass);
    }
    let parsed = argv::parse(args).map_err(|e| {
        // Subcommands have options the root grammar doesn't know
        // (`claude mcp add -s user ...`); name the subcommand rather than
        // the flag when it leads, as it almost always does.
        match args.first().and_then(|a| a.to_str()) {
            Some(first) if SUBCOMMANDS.contains(&first) => PassReason::Subcommand(first.to_owned()),
            _ => PassReason::Unparsed(e.to_string()),
        }
    })?;
    if parsed.has("help") {
        return Err(PassReason::Help);
    }
    if parsed.has("version") {
        return Err(PassReason::Version);
    }
    // Without `-p` the CLI runs a subcommand named by the first positional
    // even after `--` (`claude -- doctor | cat`); with `-p` after `--` it is
    // a prompt.
    let print = parsed.has("print");
    if let Some(first) = parsed
        .positionals
        .iter()
        .find(|p| !print || !p.after_dashdash)
    {
        if SUBCOMMANDS.contains(&first.value.as_str()) {
            return Err(PassReason::Subcommand(first.value.clone()));
        }
    }

    let input = parsed.value("input-format");
    let output = parsed.value("output-format");
    let mode = if parsed.has("print") {
        Mode::Print
    } else if input == Some("stream-json") && output == Some("stream-json") {
        Mode::Sdk
    } else if !policy.stdout_terminal {
        Mode::Printed
    } else {
        return Err(PassReason::Interactive);
    };

    // The first such flag in argv order is the one reported.
    let first_of = |names: &[&str]| {
        parsed
            .flags
            .iter()
            .map(|u| u.name)
            .find(|name| names.contains(name))
    };
    let caller_resume = caller_resume(&parsed);
    if let Some(flag) = first_of(CALLER_SESSION) {
        if caller_resume.is_none() {
            return Err(PassReason::CallerSession(flag));
        }
    }
    if let Some(flag) = first_of(UNSUPPORTED) {
        return Err(PassReason::Unsupported(flag));
    }
    // Persistence off: the shim may own the session, unless the caller
    // names one itself (its file must stay as the caller left it).
    let ephemeral = parsed.has("no-session-persistence");
    if ephemeral && (policy.respect_persistence || caller_resume.is_some()) {
        return Err(PassReason::Unsupported("no-session-persistence"));
    }

    let input = match input {
        None | Some("text") => InputFormat::Text,
        Some("stream-json") => InputFormat::StreamJson,
        Some(other) => return Err(invalid_choice("input-format", other)),
    };
    let output = match output {
        None | Some("text") => OutputFormat::Text,
        Some("json") => OutputFormat::Json,
        Some("stream-json") => OutputFormat::StreamJson,
        Some(other) => return Err(invalid_choice("output-format", other)),
    };
    Ok(Managed {
        mode,
        input,
        output,
        args: parsed,
        caller_resume,
        ephemeral,
    })
}

/// A single `--resume <uuid>` and no other session flag: the caller resumes
/// a session by id, which the shim may de-duplicate (it never changes argv).
fn caller_resume(parsed: &ParsedArgs) -> Option<String> {
    let session_flags: Vec<_> = parsed
        .flags
        .iter()
        .filter(|u| CALLER_SESSION.contains(&u.name))
        .collect();
    match session_flags[..] {
        [only] if only.name == "resume" => match &only.values[..] {
            [id] if uuid::Uuid::parse_str(id).is_ok() && id.len() == 36 => Some(id.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The real CLI rejects these too (commander `choices`), so don't touch them.
fn invalid_choice(flag: &str, value: &str) -> PassReason {
    PassReason::Unparsed(format!("invalid --{flag} value '{value}'"))
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

    /// `CallerSession(resume)` for a pass-through, `Print Text Json` for a
    /// managed run.
    fn render(class: &Class) -> String {
        match class {
            Class::PassThrough(reason) => format!("{reason:?}").replace('"', ""),
            Class::Managed(m) => {
                let mut s = format!("{:?} {:?} {:?}", m.mode, m.input, m.output);
                if let Some(id) = &m.caller_resume {
                    s.push_str(&format!(" resume={id}"));
                }
                if m.ephemeral {
                    s.push_str(" ephemeral");
                }
                s
            }
        }
    }

    const M: &str = "claude-sonnet-4";

    #[test]
    fn classify_table() {
        let cases: &[(&str, &str)] = &[
            ("--bogus", "Unparsed(unknown flag --bogus)"),
            ("--verbose=1 -p", "Unparsed(flag --verbose takes no value)"),
            ("-p --model", "Unparsed(flag --model needs a value)"),
            ("-h", "Help"),
            ("-p --help", "Help"),
            ("-v", "Version"),
            ("--version", "Version"),
            ("", "Interactive"),
            ("hello", "Interactive"),
            ("--model claude-sonnet-4 hi", "Interactive"),
            ("--output-format stream-json", "Interactive"),
            ("--input-format stream-json", "Interactive"),
            (
                "--input-format stream-json --output-format json",
                "Interactive",
            ),
            ("-c", "Interactive"),
            // Subcommands, wherever the first positional sits.
            ("mcp list", "Subcommand(mcp)"),
            ("--verbose doctor", "Subcommand(doctor)"),
            ("-p update", "Subcommand(update)"),
            ("help", "Subcommand(help)"),
            ("mcp add -s user x", "Subcommand(mcp)"),
            // ...but not as a prompt after `--`, an option value, or later.
            ("-p -- mcp", "Print Text Text"),
            ("-p --model mcp", "Print Text Text"),
            ("-p hello mcp", "Print Text Text"),
            // Without -p the CLI runs it even after `--`; hidden ones too.
            ("-- doctor", "Subcommand(doctor)"),
            ("--model m -- doctor", "Subcommand(doctor)"),
            ("sandbox", "Subcommand(sandbox)"),
            (
                "--output-format json workspace-trust",
                "Subcommand(workspace-trust)",
            ),
            // Caller-managed sessions, reported by canonical name.
            ("-p -c hi", "CallerSession(continue)"),
            ("-pc", "CallerSession(continue)"),
            ("-p -r hello", "CallerSession(resume)"),
            ("-p --session-id u", "CallerSession(session-id)"),
            ("-p --fork-session", "CallerSession(fork-session)"),
            ("-p --teleport", "CallerSession(teleport)"),
            ("-p --from-pr 12", "CallerSession(from-pr)"),
            ("-p --cloud", "CallerSession(cloud)"),
            ("-p --remote", "CallerSession(remote)"),
            ("-p --sdk-url ws://x", "CallerSession(sdk-url)"),
            ("-p --rewind-files m", "CallerSession(rewind-files)"),
            (
                "-p --resume-session-at m",
                "CallerSession(resume-session-at)",
            ),
            ("-p --bg -r x", "CallerSession(resume)"),
            // Persistence off: the shim owns the session, unless the
            // caller names one.
            ("-p --no-session-persistence", "Print Text Text ephemeral"),
            (
                "-p --no-session-persistence --resume 6e8e0435-8e12-4245-aa25-f674ed4e97a7",
                "Unsupported(no-session-persistence)",
            ),
            // Unsupported, aliases included.
            ("-p --background", "Unsupported(bg)"),
            ("-p -w", "Unsupported(worktree)"),
            ("-p --tmux -w x", "Unsupported(tmux)"),
            ("-p --init-only", "Unsupported(init-only)"),
            ("-p --rc", "Unsupported(rc)"),
            ("-p --remote-control n", "Unsupported(remote-control)"),
            ("-p --desktop", "Unsupported(desktop)"),
            // Format values.
            (
                "-p --output-format yaml",
                "Unparsed(invalid --output-format value 'yaml')",
            ),
            (
                "-p --input-format=json",
                "Unparsed(invalid --input-format value 'json')",
            ),
            ("-p --output-format json hi", "Print Text Json"),
            (
                "-p --output-format=text --input-format text",
                "Print Text Text",
            ),
            (
                "-p --output-format json --output-format stream-json",
                "Print Text StreamJson",
            ),
            ("hi --print", "Print Text Text"),
            // Real client invocations.
            (
                "-p --output-format stream-json --verbose --include-partial-messages \
                 --model claude-sonnet-4 --no-session-persistence",
                "Print Text StreamJson ephemeral",
            ),
            (
                "--print --output-format stream-json --verbose \
                 --include-partial-messages --model claude-sonnet-4 -- prompt",
                "Print Text StreamJson",
            ),
            (
                "--system-prompt SP --verbose --output-format stream-json \
                 --disallowedTools Bash Edit --max-turns 1 --model claude-sonnet-4 -p",
                "Print Text StreamJson",
            ),
            (
                "-p --input-format stream-json --output-format stream-json --verbose \
                 --model claude-sonnet-4 --add-dir a b --permission-mode acceptEdits",
                "Print StreamJson StreamJson",
            ),
            (
                "--output-format stream-json --verbose --input-format stream-json \
                 --max-thinking-tokens 0 --model claude-sonnet-4 \
                 --permission-prompt-tool stdio --setting-sources '' --resume=abc",
                "CallerSession(resume)",
            ),
            (
                "--output-format stream-json --verbose --input-format stream-json \
                 --resume=6e8e0435-8e12-4245-aa25-f674ed4e97a7",
                "Sdk StreamJson StreamJson resume=6e8e0435-8e12-4245-aa25-f674ed4e97a7",
            ),
            (
                "-p --resume 6e8e0435-8e12-4245-aa25-f674ed4e97a7 --fork-session",
                "CallerSession(resume)",
            ),
            ("-p -c", "CallerSession(continue)"),
            (
                "--output-format stream-json --verbose --input-format stream-json \
                 --max-thinking-tokens 0 --model claude-sonnet-4 \
                 --permission-prompt-tool stdio --setting-sources ''",
                "Sdk StreamJson StreamJson",
            ),
        ];
        for (args, want) in cases {
            assert_eq!(
                render(&classify(&words(args), Policy::default())),
                *want,
                "args: {args}"
            );
        }
    }

    #[test]
    fn bypass_wins_over_everything() {
        let bypass = Policy {
            bypass: true,
            ..Policy::default()
        };
        let class = classify(&words("-p --bogus"), bypass);
        assert_eq!(class, Class::PassThrough(PassReason::Bypass));
        let respect = Policy {
            respect_persistence: true,
            ..Policy::default()
        };
        assert_eq!(
            classify(&words("-p --no-session-persistence"), respect),
            Class::PassThrough(PassReason::Unsupported("no-session-persistence"))
        );
    }

    #[test]
    fn managed_keeps_the_parse() {
        let args = words("--print --model claude-sonnet-4 -- prompt");
        let Class::Managed(m) = classify(&args, Policy::default()) else {
            panic!("expected Managed");
        };
        assert_eq!(m.args.value("model"), Some(M));
        assert_eq!(m.args.dashdash, Some(3));
        assert_eq!(m.args.positionals[0].value, "prompt");
        assert!(m.args.positionals[0].after_dashdash);
    }

    #[test]
    fn non_utf8_passes_through() {
        let args = vec![OsString::from("-p"), OsString::from_vec(vec![0xff])];
        assert_eq!(
            classify(&args, Policy::default()),
            Class::PassThrough(PassReason::Unparsed(
                "argument 1 is not valid UTF-8".to_owned()
            ))
        );
    }

    #[test]
    fn every_reason_describes_itself() {
        let reasons = [
            PassReason::Bypass,
            PassReason::Interactive,
            PassReason::Subcommand("mcp".to_owned()),
            PassReason::Version,
            PassReason::Help,
            PassReason::CallerSession("resume"),
            PassReason::Unsupported("bg"),
            PassReason::Unparsed("unknown flag --x".to_owned()),
        ];
        for reason in reasons {
            let line = reason.describe();
            assert!(
                !line.is_empty() && !line.contains('\n'),
                "{reason:?}: {line}"
            );
        }
        assert!(PassReason::CallerSession("resume")
            .describe()
            .contains("--resume"));
    }
}
