//! Colour for people at a terminal, plain text for everyone else: ANSI only
//! when stdout is a terminal and `NO_COLOR` is unset (https://no-color.org).

use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

impl Style {
    #[cfg(test)]
    pub const PLAIN: Style = Style { color: false };

    pub fn for_stdout() -> Style {
        let no_color = crate::env::no_color();
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// The columns to fit: `COLUMNS` when set (as `ls` reads it), else the
/// width of the terminal stdout is; `None` on a pipe (full lines, for
/// scripts; `--json` is the machine format).
pub fn terminal_width() -> Option<usize> {
    use std::os::fd::AsRawFd;
    if let Some(n) = crate::env::columns().filter(|&n| n > 0) {
        return Some(n);
    }
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ only fills the winsize it is given.
    let r = unsafe { nix::libc::ioctl(stdout.as_raw_fd(), nix::libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_adds_nothing() {
        assert_eq!(Style::PLAIN.red("x"), "x");
        assert_eq!(Style { color: true }.red("x"), "\x1b[31mx\x1b[0m");
    }
}
