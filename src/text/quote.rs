//! Quoting a word for a shell, for the scripts and the lines we print.

/// A word every shell reads as itself, unquoted.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b))
}

/// POSIX sh / bash / zsh: bare when plain, else single quotes, a quote
/// inside as `'\''`.
pub fn posix(s: &str) -> String {
    if plain(s) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// fish: bare when plain, else single quotes, where only `\` and `'` are
/// escaped.
pub fn fish(s: &str) -> String {
    if plain(s) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes() {
        assert_eq!(posix("/home/u/.local/bin"), "/home/u/.local/bin");
        assert_eq!(posix(""), "''");
        assert_eq!(posix("a b"), "'a b'");
        assert_eq!(posix("it's $x"), r"'it'\''s $x'");
        assert_eq!(fish("a b"), "'a b'");
        assert_eq!(fish("claude-shim"), "claude-shim");
        assert_eq!(fish(r"it's \ $x"), r"'it\'s \\ $x'");
    }
}
