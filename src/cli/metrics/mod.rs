//! `metrics`: the shim's figures for Prometheus. Printed once (for
//! node_exporter's textfile collector, or a cron job), or served at
//! `/metrics` with `--serve ADDR` (or `metrics = "ADDR"` in config.toml)
//! until stopped. Turns' figures come from the store's running totals, so a
//! scrape answers the same with or without a keeper; live CLIs' from the
//! keeper. A scrape only reads: it never holds up a turn. See
//! docs/metrics.md.

pub mod exposition;
pub mod serve;
pub mod setting;
pub mod source;

use super::command::Run;
use anyhow::Result;
use clap::Args;
use std::io::Write;

/// Prometheus metrics: printed once, or served over HTTP with --serve.
#[derive(Args)]
pub struct Metrics {
    /// Serve them at http://ADDR/metrics until stopped (default: the
    /// `metrics = "ADDR"` of config.toml), e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub serve: Option<String>,
    /// The text printed: `prometheus` (what node_exporter's textfile
    /// collector reads) or `openmetrics`. A scrape gets what it asks for.
    #[arg(
        long,
        value_enum,
        default_value = "prometheus",
        conflicts_with = "serve"
    )]
    pub format: exposition::Format,
}

impl Run for Metrics {
    fn run(&self, out: &mut dyn Write) -> Result<()> {
        match &self.serve {
            None => {
                let mut source = source::Source::default();
                let text = exposition::render(&source.snapshot(), self.format);
                out.write_all(text.as_bytes())?;
                Ok(())
            }
            Some(given) => {
                let addr = match given.as_str() {
                    "" => setting::configured()
                        .inspect_err(|e| crate::error!("metrics: {e}"))?
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "no address: give one (`--serve 127.0.0.1:9464`) or set \
                             `metrics = \"127.0.0.1:9464\"` in {}",
                                setting::config_file_hint()
                            )
                        })?,
                    a => setting::parse(a).inspect_err(|e| crate::error!("metrics: {e:#}"))?,
                };
                serve::serve(addr, out)
            }
        }
    }
}
