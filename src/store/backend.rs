//! Which engine holds the store: the embedded SQLite file in the data dir
//! (one machine, the default), or a PostgreSQL database that several
//! replicas share (a fleet). Chosen by `CLAUDE_SHIM_STORE`, else by
//! `store = "…"` in `<data dir>/config.toml`.

use crate::data_dir::DataDir;
use anyhow::{bail, Context, Result};

pub const CONFIG_FILE: &str = "config.toml";

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `<data dir>/shim.db`.
    Sqlite,
    /// A `postgres://…` / `postgresql://…` URL (or libpq key=value string).
    Postgres(String),
}

impl Location {
    /// The configured location: the environment wins over the config file;
    /// neither means SQLite. A value we cannot read is an error (the turn
    /// then runs as without the shim and says so), never a silent fallback
    /// to a local store that the other replicas would not see.
    /// The file is read only from a private data directory (the type says
    /// so), never through a link, and only if it is ours.
    pub fn configured(data_dir: &DataDir) -> Result<Location> {
        if let Some(v) = crate::env::store() {
            return Location::parse(&v).context(crate::env::STORE);
        }
        let file = data_dir.join(CONFIG_FILE);
        let bytes = match data_dir.read(CONFIG_FILE) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Location::Sqlite),
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        let text = String::from_utf8(bytes)
            .with_context(|| format!("reading {}: not UTF-8", file.display()))?;
        Location::from_config(&text).with_context(|| format!("reading {}", file.display()))
    }

    /// `store = "…"` from a config file's text.
    pub fn from_config(text: &str) -> Result<Location> {
        #[derive(serde::Deserialize)]
        struct Config {
            store: Option<String>,
        }
        let c: Config = toml::from_str(text)?;
        match c.store {
            Some(v) => Location::parse(&v),
            None => Ok(Location::Sqlite),
        }
    }

    pub fn parse(value: &str) -> Result<Location> {
        let v = value.trim();
        if v.is_empty() || v == "sqlite" {
            return Ok(Location::Sqlite);
        }
        if v.starts_with("postgres://") || v.starts_with("postgresql://") {
            return Ok(Location::Postgres(v.to_owned()));
        }
        bail!(
            "unknown store {:?}: want `sqlite` or a postgres:// URL",
            redact(v)
        )
    }

    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

/// A store URL fit for logs and reports: no password.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some((auth, host)) => (auth, host),
        None => return url.to_owned(),
    };
    let user = auth.split_once(':').map_or(auth, |(u, _)| u);
    let query_less = host.split_once('?').map_or(host, |(h, _)| h);
    let masked = if auth.contains(':') { ":***" } else { "" };
    format!("{scheme}://{user}{masked}@{query_less}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_from_env_value_and_config_file() {
        assert_eq!(Location::parse("").unwrap(), Location::Sqlite);
        assert_eq!(Location::parse("sqlite").unwrap(), Location::Sqlite);
        assert_eq!(
            Location::parse(" postgres://u@h/db ").unwrap(),
            Location::Postgres("postgres://u@h/db".into())
        );
        assert!(Location::parse("mysql://h/db").is_err());
        assert_eq!(
            Location::from_config("store = \"postgresql://h:5433/shim\"\n").unwrap(),
            Location::Postgres("postgresql://h:5433/shim".into())
        );
        assert_eq!(
            Location::from_config("# nothing\n").unwrap(),
            Location::Sqlite
        );
        assert!(Location::from_config("store = [").is_err());
    }

    #[test]
    fn redaction_keeps_user_host_and_db_only() {
        assert_eq!(
            redact("postgres://shim:s3cret@db.lan:5432/shim?sslmode=disable"),
            "postgres://shim:***@db.lan:5432/shim"
        );
        assert_eq!(redact("postgres://db.lan/shim"), "postgres://db.lan/shim");
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
    }
}
