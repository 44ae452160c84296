//! How a connection to the shared store starts: connected (here, or by the
//! keeper ahead of a turn: `handoff`), then the schema checked or brought up
//! to date (`migrations`, and a turn's shortcut past the check: `schema`).

use super::conn::{config, Io, Patience, Pg};
use super::{migrations, nss, schema};
use anyhow::Result;
use std::collections::HashSet;
use std::path::PathBuf;
use tokio_postgres::{Client, NoTls};

/// What a new connection does with the schema.
pub enum Schema {
    /// Read its version and bring it up to date.
    Migrate,
    /// As `Migrate`, unless this marker (see [`schema`]) says it was up to
    /// date a moment ago (a turn).
    Marked(PathBuf),
    /// Leave it as it is (`doctor` looks, and changes nothing).
    AsIs,
}

impl Pg {
    /// Connect, bounded by `patience`, and treat the schema as `schema` says.
    pub fn connect(url: &str, patience: Patience, schema: Schema) -> Result<Pg> {
        let config = config(url, patience)?;
        let mut io = Io::new(patience)?;
        nss::builtin_services_only();
        let (client, connection) = io.block_alone("connecting", config.connect(NoTls))?;
        Pg::started(io, client, connection, schema)
    }

    /// A connection's start, wherever it was made (here or in `handoff`).
    pub(super) fn started<S>(
        io: Io,
        client: Client,
        connection: tokio_postgres::Connection<S, tokio_postgres::tls::NoTlsStream>,
        schema: Schema,
    ) -> Result<Pg>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        io.rt.spawn(async move {
            let _ = connection.await;
        });
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "?".into());
        let mut pg = Pg {
            io,
            client,
            held: HashSet::new(),
            manifests: Default::default(),
            holder: format!("{host}:{}", std::process::id()),
            host,
            queued: Vec::new(),
            scan_wanted: None,
            scans: Default::default(),
        };
        match schema {
            Schema::AsIs => {}
            Schema::Marked(m) if schema::trusted(&m, migrations::COUNT) => {
                pg.io.schema_marker = Some(m)
            }
            Schema::Marked(m) => {
                migrations::apply(&mut pg)?;
                schema::remember(&m, migrations::COUNT);
                pg.io.schema_marker = Some(m);
            }
            Schema::Migrate => migrations::apply(&mut pg)?,
        }
        Ok(pg)
    }
}
