//! Quoting a word for a shell, for the scripts and the lines we print.

/// POSIX sh / bash / zsh: single quotes, a quote inside as `'\''`.
pub fn posix(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// fish: single quotes, where only `\` and `'` are escaped.
pub fn fish(s: &str) -> String {
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
        assert_eq!(fish(r"it's \ $x"), r"'it\'s \\ $x'");
    }
}
