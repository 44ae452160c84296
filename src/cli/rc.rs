//! The user's shell and its rc files: which file holds the line that runs
//! `claude-shim init`, what that line is, and the line to suggest.

use crate::text::quote;
use std::path::{Path, PathBuf};

/// The user's login shell, for the rc hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RcShell {
    Bash,
    Zsh,
    Fish,
}

impl RcShell {
    pub fn from_env() -> RcShell {
        let shell = crate::env::shell();
        match Path::new(&shell).file_name().and_then(|n| n.to_str()) {
            Some("zsh") => RcShell::Zsh,
            Some("fish") => RcShell::Fish,
            _ => RcShell::Bash,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RcShell::Bash => "bash",
            RcShell::Zsh => "zsh",
            RcShell::Fish => "fish",
        }
    }

    pub fn rc(self) -> &'static str {
        match self {
            RcShell::Bash => "~/.bashrc",
            RcShell::Zsh => "~/.zshrc",
            RcShell::Fish => "~/.config/fish/config.fish",
        }
    }

    /// The files this shell reads at start that could hold the init line,
    /// the usual one first.
    pub fn rc_files(self, home: &Path) -> Vec<PathBuf> {
        let var = crate::env::dir;
        match self {
            RcShell::Bash => [".bashrc", ".bash_profile", ".profile"]
                .iter()
                .map(|f| home.join(f))
                .collect(),
            RcShell::Zsh => {
                let dir = var("ZDOTDIR").unwrap_or_else(|| home.to_path_buf());
                vec![dir.join(".zshrc"), dir.join(".zprofile")]
            }
            RcShell::Fish => {
                let config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
                vec![config.join("fish/config.fish")]
            }
        }
    }

    /// The rc file and the line in it that already run `claude-shim init`.
    pub fn find_init(self) -> Option<(PathBuf, String)> {
        let home = crate::env::dir("HOME")?;
        self.rc_files(Path::new(&home)).into_iter().find_map(|rc| {
            let text = std::fs::read_to_string(&rc).ok()?;
            let line = init_line(&text)?.to_owned();
            Some((rc, line))
        })
    }

    /// The rc line that sources `init` (PATH mode).
    pub fn line(self, exe: &str, dir: Option<&Path>) -> String {
        let (name, q): (&str, fn(&str) -> String) = match self {
            RcShell::Bash => ("bash", quote::posix),
            RcShell::Zsh => ("zsh", quote::posix),
            RcShell::Fish => ("fish", quote::fish),
        };
        let mut cmd = format!("{} init {name}", q(exe));
        if let Some(dir) = dir {
            cmd.push_str(&format!(" --dir {}", q(&dir.to_string_lossy())));
        }
        match self {
            RcShell::Fish => format!("{cmd} | source"),
            _ => format!("eval \"$({cmd})\""),
        }
    }
}

/// The first line of an rc file's text that runs `claude-shim … init`
/// (commented-out lines aside).
pub fn init_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.starts_with('#') && l.contains("claude-shim") && l.contains(" init "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_init_line_but_not_a_commented_one() {
        let rc = "export X=1\n# eval \"$(claude-shim init bash)\"\n  eval \"$(claude-shim init bash --mode alias)\"\n";
        assert_eq!(
            init_line(rc),
            Some(r#"eval "$(claude-shim init bash --mode alias)""#)
        );
        assert_eq!(init_line("# claude-shim init bash\n"), None);
        assert_eq!(
            init_line("/x/claude-shim init fish | source"),
            Some("/x/claude-shim init fish | source")
        );
        assert_eq!(init_line("alias cs=claude-shim\n"), None);
    }

    #[test]
    fn rc_lines_quote_for_their_shell() {
        let dir = Path::new("/a b/it's");
        assert_eq!(
            RcShell::Bash.line("claude-shim", None),
            r#"eval "$(claude-shim init bash)""#
        );
        assert_eq!(
            RcShell::Zsh.line("/x/claude-shim", Some(dir)),
            r#"eval "$(/x/claude-shim init zsh --dir '/a b/it'\''s')""#
        );
        assert_eq!(
            RcShell::Fish.line("claude-shim", Some(dir)),
            r"claude-shim init fish --dir '/a b/it\'s' | source"
        );
    }
}
