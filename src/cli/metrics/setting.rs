//! `metrics = "ADDR"` in `<data dir>/config.toml`: where `metrics --serve`
//! listens by default, and where `doctor` looks. Turns never read it, so a
//! value that cannot be parsed changes nothing about them.

use crate::data_dir::DataDir;
use crate::store::backend::CONFIG_FILE;
use anyhow::{anyhow, Context, Result};
use std::net::SocketAddr;

/// An address to listen on: `IP:PORT` (`[IPv6]:PORT`), or `localhost:PORT`
/// for 127.0.0.1. No name is looked up: the packages' static binary asks
/// no resolver.
pub fn parse(text: &str) -> Result<SocketAddr> {
    let t = text.trim();
    let local = t
        .strip_prefix("localhost:")
        .map(|port| format!("127.0.0.1:{port}"));
    local
        .as_deref()
        .unwrap_or(t)
        .parse()
        .map_err(|e| anyhow!("{t:?} is not an address: {e} (want IP:PORT, e.g. 127.0.0.1:9464)"))
}

/// `metrics = "…"` from a config file's text: `None` when not set.
pub fn from_config(text: &str) -> Result<Option<String>> {
    let doc: toml::Table = toml::from_str(text).context("not TOML")?;
    match doc.get("metrics") {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(anyhow!(
            "`metrics` must be a string such as \"127.0.0.1:9464\" (found: {})",
            other.type_str()
        )),
    }
}

/// The configured address, if set (an error names the file and what is
/// wrong in it).
pub fn configured() -> Result<Option<SocketAddr>> {
    let Some(dir) = DataDir::existing()? else {
        return Ok(None);
    };
    configured_in(&dir).inspect_err(|e| crate::error!("metrics: {e:#}"))
}

pub fn configured_in(dir: &DataDir) -> Result<Option<SocketAddr>> {
    let file = dir.join(CONFIG_FILE);
    let Some(bytes) = dir
        .read(CONFIG_FILE)
        .with_context(|| format!("reading {}", file.display()))?
    else {
        return Ok(None);
    };
    let text =
        String::from_utf8(bytes).map_err(|_| anyhow!("reading {}: not UTF-8", file.display()))?;
    let value = from_config(&text).with_context(|| format!("reading {}", file.display()))?;
    value
        .map(|v| parse(&v).with_context(|| format!("`metrics` in {}", file.display())))
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
        let e = from_config("metrics = 9464").unwrap_err().to_string();
        assert!(e.contains("must be a string such as"), "{e}");
        assert!(from_config("metrics = [").is_err());
        assert_eq!(parse("127.0.0.1:9464").unwrap().port(), 9464);
        assert_eq!(
            parse("localhost:9464").unwrap().to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(parse("[::1]:9").unwrap().port(), 9);
        let e = parse("localhost").unwrap_err().to_string();
        assert!(e.contains("IP:PORT"), "{e}");
    }
}
