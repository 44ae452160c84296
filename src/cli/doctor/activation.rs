//! Whether the shell that runs `doctor` or `status` reaches the shim, and
//! how: PATH mode (the first `claude` on PATH is the shim) or alias mode
//! (the init script defined a `claude` function; it says so in
//! `CLAUDE_SHIM_MODE`, as a child process cannot see the shell's
//! functions). When it does not, what to do about it, knowing what the rc
//! file already holds. Pure over doctor's facts.

use super::facts::Facts;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    Path,
    Alias,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Activation {
    /// How this shell reaches the shim; None: it does not.
    pub how: Option<How>,
    pub detail: String,
    pub fix: Option<String>,
}

fn active(how: How, detail: String) -> Activation {
    Activation {
        how: Some(how),
        detail,
        fix: None,
    }
}

fn inactive(detail: String, fix: String) -> Activation {
    Activation {
        how: None,
        detail,
        fix: Some(fix),
    }
}

/// The command that makes this shell forget where it found `claude`
/// (bash and zsh remember; fish looks up every time).
fn rehash(shell: &str) -> Option<&'static str> {
    match shell {
        "bash" => Some("`hash -r`"),
        "zsh" => Some("`rehash`"),
        _ => None,
    }
}

pub fn judge(f: &Facts) -> Activation {
    let installed = matches!(f.link.as_str(), "current" | "stale");
    let shim = f.shim_dir.join("claude");
    let first = f.path_claude.as_ref().map_or_else(
        || "no `claude` is on PATH".to_owned(),
        |p| format!("the first `claude` on PATH is {}", p.display()),
    );
    let not_shim = match &f.path_claude {
        Some(_) => format!("{first}, not the shim"),
        None => first.clone(),
    };
    if let Some(p) = f.path_claude.as_ref().filter(|_| f.path_claude_is_shim) {
        let mut detail = format!("PATH mode: {} is the shim", p.display());
        if let Some(cmd) = rehash(&f.shell) {
            detail.push_str(&format!(
                "\na shell that ran `claude` before the shim came first may still run the \
                 old one until {cmd} (or a new shell)"
            ));
        }
        return active(How::Path, detail);
    }
    let rc = f.rc_suggested_file.as_str();
    let line = f.rc_suggested_line.as_str();
    match f.mode.as_deref() {
        Some("alias") => {
            return match &f.claude_shim_on_path {
                Some(cs) => active(
                    How::Alias,
                    format!(
                        "alias mode: `claude` typed in this shell runs {} run; scripts and \
                         IDEs do not ({first})",
                        cs.display()
                    ),
                ),
                None => inactive(
                    "alias mode is set up in this shell, but `claude-shim` is not on PATH, \
                     so `claude` fails"
                        .into(),
                    "put the directory holding claude-shim on PATH (cargo install uses \
                     ~/.cargo/bin), or switch to PATH mode: `claude-shim install`"
                        .into(),
                ),
            };
        }
        Some("path") if !installed => {
            let then = rehash(&f.shell).map_or(String::new(), |cmd| {
                format!(", then {cmd} here (this shell may remember the real claude)")
            });
            return inactive(
                format!(
                    "this shell ran the PATH-mode init script, but {} does not exist",
                    shim.display()
                ),
                format!("run `claude-shim install`{then}"),
            );
        }
        Some("path") => {
            let why = if f.shim_dir_on_path {
                format!("{first}, ahead of the shim ({})", shim.display())
            } else {
                format!(
                    "{first}; the shim directory {} is no longer on PATH",
                    f.shim_dir.display()
                )
            };
            let rc_now = f
                .rc_file
                .as_ref()
                .map_or(rc.to_owned(), |p| p.display().to_string());
            return inactive(
                format!("this shell ran the PATH-mode init script, but {why}"),
                format!(
                    "something after the `claude-shim init` line in {rc_now} changes PATH: move \
                     that line to the end of the file, then open a new shell"
                ),
            );
        }
        _ => {}
    }
    if let (Some(file), Some(rc_line)) = (&f.rc_file, &f.rc_line) {
        return inactive(
            format!(
                "{not_shim}; {} runs `claude-shim init`, but this shell has not run \
                 it (it started before the line was added, or does not read that file)",
                file.display()
            ),
            format!("open a new shell, or run `{rc_line}` in this one"),
        );
    }
    if installed {
        return inactive(
            format!("{not_shim}; no rc file runs `claude-shim init`"),
            format!("add `{line}` to {rc}, then open a new shell"),
        );
    }
    inactive(
        format!("the shim is not set up: {not_shim}"),
        format!(
            "run `claude-shim install`, add `{line}` to {rc}, then open a new shell \
             (or `--mode alias` in the init line for this shell only)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Nothing set up: the real claude first, no link, no marker, no rc line.
    fn bare() -> Facts {
        Facts {
            shim_dir: "/d/bin".into(),
            link: "missing".into(),
            path_claude: Some("/usr/bin/claude".into()),
            shell: "bash".into(),
            rc_suggested_file: "~/.bashrc".into(),
            rc_suggested_line: r#"eval "$(claude-shim init bash)""#.into(),
            ..Facts::default()
        }
    }

    #[test]
    fn table_of_set_ups() {
        type Edit = fn(&mut Facts);
        // (what, edit, how, words in the detail, words in the fix)
        let rows: Vec<(&str, Edit, Option<How>, &str, &str)> = vec![
            (
                "nothing set up",
                |_| {},
                None,
                "not set up",
                "run `claude-shim install`, add `eval",
            ),
            (
                "PATH mode",
                |f| {
                    f.link = "current".into();
                    f.path_claude = Some("/d/bin/claude".into());
                    f.path_claude_is_shim = true;
                },
                Some(How::Path),
                "`hash -r`",
                "",
            ),
            (
                "alias mode",
                |f| {
                    f.mode = Some("alias".into());
                    f.claude_shim_on_path = Some("/c/claude-shim".into());
                },
                Some(How::Alias),
                "/c/claude-shim run",
                "",
            ),
            (
                "alias mode without claude-shim on PATH",
                |f| f.mode = Some("alias".into()),
                None,
                "not on PATH",
                "~/.cargo/bin",
            ),
            (
                "init ran, shim not installed",
                |f| f.mode = Some("path".into()),
                None,
                "/d/bin/claude does not exist",
                "claude-shim install`, then `hash -r`",
            ),
            (
                "init ran, something prepended after it",
                |f| {
                    f.mode = Some("path".into());
                    f.link = "current".into();
                    f.shim_dir_on_path = true;
                    f.rc_file = Some("/h/.bashrc".into());
                },
                None,
                "ahead of the shim",
                "move that line to the end of the file",
            ),
            (
                "rc has the line, this shell is older",
                |f| {
                    f.link = "current".into();
                    f.rc_file = Some("/h/.bashrc".into());
                    f.rc_line = Some(r#"eval "$(claude-shim init bash)""#.into());
                },
                None,
                "/h/.bashrc runs `claude-shim init`",
                "open a new shell, or run `eval",
            ),
            (
                "installed, no rc line",
                |f| f.link = "current".into(),
                None,
                "no rc file runs",
                "add `eval \"$(claude-shim init bash)\"` to ~/.bashrc",
            ),
        ];
        for (what, edit, how, detail, fix) in rows {
            let mut f = bare();
            edit(&mut f);
            let a = judge(&f);
            assert_eq!(a.how, how, "{what}: {a:?}");
            assert!(a.detail.contains(detail), "{what}: {}", a.detail);
            match &a.fix {
                Some(got) => assert!(got.contains(fix), "{what}: {got}"),
                None => assert!(fix.is_empty() && how.is_some(), "{what}: no fix"),
            }
            if how.is_none() {
                assert!(a.fix.is_some(), "{what}: an inactive shim names a fix");
            }
        }
    }

    #[test]
    fn an_rc_that_has_the_line_is_never_told_to_add_it_again() {
        let mut f = bare();
        f.rc_file = Some(PathBuf::from("/h/.bashrc"));
        f.rc_line = Some("eval \"$(claude-shim init bash)\"".into());
        let fix = judge(&f).fix.unwrap();
        assert!(!fix.contains("add `"), "{fix}");
    }

    #[test]
    fn fish_has_no_command_hash_to_forget() {
        let mut f = bare();
        f.shell = "fish".into();
        f.path_claude_is_shim = true;
        assert!(!judge(&f).detail.contains("hash"));
    }
}
