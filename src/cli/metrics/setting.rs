//! `metrics = "ADDR"` in `<data dir>/config.toml`: where `metrics --serve`
//! listens by default, and where `doctor` looks. Turns read only the
//! file's `store`, so a `metrics` value that cannot be used changes nothing
//! about them; a file that is not TOML at all stops them using the store
//! (they run as without the shim), which `doctor` fails on.

use crate::data_dir::DataDir;
use crate::store::backend::CONFIG_FILE;
use anyhow::{anyhow, Context};
use std::net::SocketAddr;

/// What is wrong with the setting.
#[derive(Debug)]
pub enum Problem {
    /// The file as a whole cannot be read (not TOML, not UTF-8): turns
    /// cannot read their `store` either.
    File(anyhow::Error),
    /// The `metrics` value cannot be used.
    Value(anyhow::Error),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::File(e) | Problem::Value(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for Problem {}

/// An address to listen on: `IP:PORT` (`[IPv6]:PORT`), or `localhost:PORT`
/// for 127.0.0.1. No name is looked up: the packages' static binary asks
/// no resolver.
pub fn parse(text: &str) -> anyhow::Result<SocketAddr> {
    let t = text.trim();
    let local = t
        .strip_prefix("localhost:")
        .map(|port| format!("127.0.0.1:{port}"));
    let hint = match t.strip_prefix(':') {
        Some(port) => {
            format!("give an IP too: 127.0.0.1:{port}, or 0.0.0.0:{port} for every interface")
        }
        None => "want IP:PORT, e.g. 127.0.0.1:9464".to_owned(),
    };
    local
        .as_deref()
        .unwrap_or(t)
        .parse()
        .map_err(|e| anyhow!("{t:?} is not an address: {e} ({hint})"))
}

/// `metrics = "…"` from a config file's text: `None` when not set.
pub fn from_config(text: &str) -> Result<Option<String>, Problem> {
    let doc: toml::Table =
        toml::from_str(text).map_err(|e| Problem::File(anyhow!("not TOML: {}", e.message())))?;
    match doc.get("metrics") {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Problem::Value(anyhow!(
            "`metrics` must be a string such as \"127.0.0.1:9464\" (found: {})",
            other.type_str()
        ))),
    }
}

/// The configured address, if set.
pub fn configured() -> Result<Option<SocketAddr>, Problem> {
    match DataDir::existing() {
        Ok(Some(dir)) => configured_in(&dir),
        Ok(None) => Ok(None),
        Err(e) => Err(Problem::File(e.into())),
    }
}

/// As [`configured`], in `dir`; an error names the file.
pub fn configured_in(dir: &DataDir) -> Result<Option<SocketAddr>, Problem> {
    let file = dir.join(CONFIG_FILE);
    let named = |e: anyhow::Error| e.context(format!("reading {}", file.display()));
    let bytes = match dir.read(CONFIG_FILE) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(Problem::File(named(e.into()))),
    };
    let text = String::from_utf8(bytes).map_err(|_| Problem::File(named(anyhow!("not UTF-8"))))?;
    let value = from_config(&text).map_err(|p| match p {
        Problem::File(e) => Problem::File(named(e)),
        Problem::Value(e) => Problem::Value(named(e)),
    })?;
    value
        .map(|v| {
            parse(&v)
                .with_context(|| format!("`metrics` in {}", file.display()))
                .map_err(Problem::Value)
        })
        .transpose()
}

pub fn config_file_hint() -> String {
    crate::data_dir::configured()
        .map(|d| d.join(CONFIG_FILE).display().to_string())
        .unwrap_or_else(|| format!("<data dir>/{CONFIG_FILE}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_and_says_what_is_wrong() {
        assert_eq!(from_config("").unwrap(), None);
        assert_eq!(
            from_config("store = \"sqlite\"\nmetrics = \"127.0.0.1:9464\"\n").unwrap(),
            Some("127.0.0.1:9464".into())
        );
        let e = from_config("metrics = 9464").unwrap_err();
        assert!(matches!(e, Problem::Value(_)), "{e}");
        assert!(e.to_string().contains("must be a string such as"), "{e}");
        // Not TOML: the whole file (turns cannot read their store either).
        let twice = "metrics = \"127.0.0.1:9464\"\nmetrics = \"127.0.0.1:9464\"\n";
        assert!(matches!(from_config(twice), Err(Problem::File(_))));
        assert!(matches!(
            from_config("metrics = 127.0.0.1:9464"),
            Err(Problem::File(_))
        ));
        assert_eq!(parse("127.0.0.1:9464").unwrap().port(), 9464);
        assert_eq!(
            parse("localhost:9464").unwrap().to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(parse("[::1]:9").unwrap().port(), 9);
        let e = parse("localhost").unwrap_err().to_string();
        assert!(e.contains("IP:PORT"), "{e}");
        let e = parse(":9464").unwrap_err().to_string();
        assert!(e.contains("0.0.0.0:9464"), "{e}");
    }
}
