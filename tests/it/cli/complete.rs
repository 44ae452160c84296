//! Tab completion that completes: the scripts `claude-shim completions`
//! prints are loaded into real bash, zsh and fish, a command line is
//! completed the way the shell does at a TAB, and the candidates are read
//! back. bash: the completion function with COMP_WORDS/COMP_CWORD set, as
//! readline calls it; zsh: an interactive zsh on a pseudo-terminal (zpty)
//! with `compadd` recording the matches; fish: `complete -C`. Also
//! `completions <shell> --install`: written where the shell looks, and
//! loaded from there.

use crate::support::{ok, run, shell, Input, Ran, Sandbox};
use std::path::Path;
use std::process::Command;

/// Run to completion under the harness's hang guard (a broken set-up would
/// otherwise wait forever for a completion that never comes).
fn run_guarded(cmd: Command) -> Ran {
    run(cmd, Input::Null)
}

fn lines(o: &Ran) -> Vec<String> {
    assert!(
        o.status.success(),
        "{:?}\nstdout: {}\nstderr: {}",
        o.status,
        o.out(),
        o.err()
    );
    o.out().lines().map(str::to_owned).collect()
}

#[track_caller]
fn offers(got: &[String], want: &[&str], line: &str) {
    for w in want {
        assert!(
            got.iter().any(|g| g == w),
            "`{line}<TAB>` should offer {w}; got {got:?}"
        );
    }
}

fn script_file(s: &Sandbox, sh: &str) -> std::path::PathBuf {
    let file = s.root.join(format!("completion.{sh}"));
    std::fs::write(&file, ok(s.cli(&["completions", sh]))).unwrap();
    file
}

/// Source `script` and call the function `complete -F` registered for
/// claude-shim, as readline does for `line` (the cursor at its end).
const BASH_DRIVER: &str = r#"
source "$1"; shift
spec=$(complete -p claude-shim) || exit 3
fn=${spec#*-F }; fn=${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
prev=; (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
"$fn" claude-shim "${COMP_WORDS[COMP_CWORD]}" "$prev"
printf '%s\n' "${COMPREPLY[@]}"
"#;

fn bash_complete(s: &Sandbox, script: &Path, line: &str) -> Vec<String> {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    if line.ends_with(' ') {
        words.push("");
    }
    let mut cmd = Command::new(shell("bash"));
    s.env(&mut cmd);
    cmd.args(["--norc", "--noprofile", "-c", BASH_DRIVER, "driver"])
        .arg(script)
        .args(words);
    lines(&run_guarded(cmd))
}

/// Type `$3` and TAB into an interactive zsh (on a pty, via zpty) whose
/// `$fpath` starts with `$1`; every match `compadd` adds is appended to
/// `$2`. A completion post-function exits the shell, so the loop reading
/// the pty ends once the completion is done.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 3
compdir=$1 out=$2 line=$3
setup=$out.setup
cat > $setup <<SETUP
PS1='' PROMPT='' RPROMPT=''
fpath=(${(q)compdir} \$fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' insert-tab false
bindkey '^I' complete-word
compadd() {
    # Calls that only fill arrays or filter (-O -A -D) add no matches.
    if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
        builtin compadd "\$@"; return
    fi
    local -a hits
    builtin compadd -A hits "\$@"
    (( \$#hits )) && print -rl -- \$hits >> ${(q)out}
    builtin compadd "\$@"
}
__test_done() { print -r -- '--done--' >> ${(q)out}; exit }
comppostfuncs=(__test_done)
SETUP
zpty z zsh -f -i
zpty -w z "source ${(q)setup}"
zpty -w -n z "$line"$'\t'
while zpty -r z chunk; do :; done
zpty -d z
"#;

fn zsh_complete(s: &Sandbox, fpath_dir: &Path, line: &str) -> Vec<String> {
    let out = s.root.join("zsh-matches");
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(shell("zsh"));
    s.env(&mut cmd);
    cmd.args(["-f", "-c", ZSH_DRIVER, "driver"])
        .arg(fpath_dir)
        .arg(&out)
        .arg(line);
    let o = run_guarded(cmd);
    assert!(o.status.success(), "zsh driver: {}", o.err());
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let got: Vec<String> = text.lines().map(str::to_owned).collect();
    assert_eq!(
        got.last().map(String::as_str),
        Some("--done--"),
        "the completion ran to its end: {got:?}"
    );
    got
}

/// `complete -C` in fish, with claude-shim on PATH (fish autoloads a
/// command's completions only for commands it can find).
fn fish_complete(s: &Sandbox, source: Option<&Path>, line: &str) -> Vec<String> {
    let mut cmd = Command::new(shell("fish"));
    s.env(&mut cmd);
    cmd.env("PATH", s.path_with(&[&s.tools]));
    let load = source.map_or(String::new(), |f| format!("source '{}'; ", f.display()));
    cmd.args(["-c", &format!("{load}complete -C '{line}'")]);
    lines(&run_guarded(cmd))
        .into_iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn bash_completes_subcommands_their_values_and_flags() {
    let s = Sandbox::first_use();
    let script = script_file(&s, "bash");
    let cases: &[(&str, &[&str])] = &[
        (
            "claude-shim ",
            &["init", "stats", "log", "status", "doctor"],
        ),
        ("claude-shim in", &["init", "install"]),
        ("claude-shim init ", &["bash", "zsh", "fish"]),
        ("claude-shim init --mode ", &["path", "alias"]),
        ("claude-shim stats --", &["--since", "--cwd", "--json"]),
        (
            "claude-shim log --",
            &["--since", "--cwd", "--limit", "--json"],
        ),
        ("claude-shim status --", &["--json"]),
        ("claude-shim completions ", &["bash", "zsh", "fish"]),
        ("claude-shim completions bash --", &["--install"]),
    ];
    for (line, want) in cases {
        offers(&bash_complete(&s, &script, line), want, line);
    }
    let got = bash_complete(&s, &script, "claude-shim init --mode ");
    assert!(
        !got.iter().any(|g| g == "bash"),
        "--mode takes a mode, not a shell: {got:?}"
    );
    // The hidden keeper is not for people to type.
    let got = bash_complete(&s, &script, "claude-shim ");
    assert!(!got.iter().any(|g| g == "keeper"), "{got:?}");
    let got = bash_complete(&s, &script, "claude-shim k");
    assert!(!got.iter().any(|g| g == "keeper"), "{got:?}");
}

#[test]
fn zsh_completes_subcommands_their_values_and_flags() {
    let s = Sandbox::first_use();
    let dir = s.root.join("zfunc");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("_claude-shim"), ok(s.cli(&["completions", "zsh"]))).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("claude-shim ", &["init", "stats", "log", "status"]),
        ("claude-shim init ", &["bash", "zsh", "fish"]),
        ("claude-shim init --mode=", &["path", "alias"]),
        ("claude-shim stats --", &["--since", "--cwd", "--json"]),
        ("claude-shim log --", &["--limit", "--json"]),
    ];
    for (line, want) in cases {
        offers(&zsh_complete(&s, &dir, line), want, line);
    }
    let got = zsh_complete(&s, &dir, "claude-shim ");
    assert!(!got.iter().any(|g| g == "keeper"), "{got:?}");
}

#[test]
fn fish_completes_subcommands_their_values_and_flags() {
    let s = Sandbox::first_use();
    let script = script_file(&s, "fish");
    let cases: &[(&str, &[&str])] = &[
        ("claude-shim ", &["init", "stats", "log", "status"]),
        ("claude-shim init ", &["bash", "zsh", "fish"]),
        ("claude-shim init --mode ", &["path", "alias"]),
        ("claude-shim stats --", &["--since", "--cwd", "--json"]),
        ("claude-shim completions ", &["bash", "zsh", "fish"]),
    ];
    for (line, want) in cases {
        offers(&fish_complete(&s, Some(&script), line), want, line);
    }
}

#[test]
fn install_writes_each_script_where_its_shell_loads_it() {
    let s = Sandbox::first_use();

    let out = ok(s.cli(&["completions", "bash", "--install"]));
    let bash = s
        .home
        .join(".local/share/bash-completion/completions/claude-shim");
    assert!(out.contains(&bash.display().to_string()), "{out}");
    offers(
        &bash_complete(&s, &bash, "claude-shim init "),
        &["bash", "zsh", "fish"],
        "claude-shim init ",
    );
    let mut xdg = s.cli(&["completions", "bash", "--install"]);
    xdg.env("XDG_DATA_HOME", s.root.join("data"));
    ok(xdg);
    assert!(s
        .root
        .join("data/bash-completion/completions/claude-shim")
        .is_file());

    let out = ok(s.cli(&["completions", "zsh", "--install"]));
    let zfunc = s.home.join(".zfunc");
    assert!(
        out.contains(&zfunc.join("_claude-shim").display().to_string()),
        "{out}"
    );
    assert!(
        out.contains("fpath+=~/.zfunc"),
        "says how to load it: {out}"
    );
    offers(
        &zsh_complete(&s, &zfunc, "claude-shim init "),
        &["bash", "zsh", "fish"],
        "claude-shim init ",
    );
    std::fs::write(s.home.join(".zshrc"), "fpath+=~/.zfunc\n").unwrap();
    let out = ok(s.cli(&["completions", "zsh", "--install"]));
    assert!(out.contains("updated"), "{out}");
    assert!(!out.contains("fpath+="), "already on fpath: {out}");

    let out = ok(s.cli(&["completions", "fish", "--install"]));
    let fish = s.home.join(".config/fish/completions/claude-shim.fish");
    assert!(out.contains(&fish.display().to_string()), "{out}");
    offers(
        &fish_complete(&s, None, "claude-shim init "),
        &["bash", "zsh", "fish"],
        "claude-shim init ",
    );
}
