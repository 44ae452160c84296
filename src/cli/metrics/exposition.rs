//! The metrics as OpenMetrics text (`prometheus-client` encodes them): the
//! turns' running totals from the store, the keeper's live CLIs, and what
//! build answers. Pure over a [`Snapshot`], so a test checks the text.

use crate::store::totals::{self, Family, Total, Type};
use crate::warm::protocol::{LiveState, Status};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use std::fmt::Error;

/// What one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The store's totals; `None`: it could not be read.
    pub totals: Option<Vec<Total>>,
    /// The keeper's status; `None`: no keeper runs.
    pub keeper: Option<Status>,
    pub cli_versions: Vec<String>,
}

type Labels = Vec<(String, String)>;

fn labels(text: &str) -> Labels {
    text.split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Which text: OpenMetrics (what Prometheus asks for), or the classic
/// Prometheus text node_exporter's textfile collector reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Prometheus,
    Openmetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::Openmetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// What a scrape's `Accept` header asks for.
    pub fn accepted(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::Openmetrics,
            _ => Format::Prometheus,
        }
    }
}

pub fn render(s: &Snapshot, format: Format) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(Collector(s.clone())));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = match format {
        Format::Openmetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        Format::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        }
    };
    out
}

#[derive(Debug)]
struct Collector(Snapshot);

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), Error> {
        let s = &self.0;
        build_info(&mut e, &s.cli_versions)?;
        gauge(
            &mut e,
            "claude_shim_store_up",
            "Whether the scrape read the store (0: see errors.log and `claude-shim doctor`)",
            &[(vec![], i64::from(s.totals.is_some()))],
        )?;
        // A store that cannot be read shows no turn figures: zeros would
        // read as a counter reset, and its return as every turn anew.
        if let Some(rows) = &s.totals {
            for f in totals::FAMILIES {
                family(&mut e, f, rows)?;
            }
        }
        keeper(&mut e, s.keeper.as_ref())
    }
}

fn build_info(e: &mut DescriptorEncoder, cli_versions: &[String]) -> Result<(), Error> {
    let version = env!("CARGO_PKG_VERSION").to_owned();
    let mut m = e.encode_descriptor(
        "claude_shim_build",
        "The shim's version, one series per Claude Code version its store has seen; data_dir: a hash of the data dir it reports",
        None,
        MetricType::Info,
    )?;
    let seen: Vec<&str> = match cli_versions {
        [] => vec![""],
        v => v.iter().map(String::as_str).collect(),
    };
    for cli in seen {
        let info = Info::new(vec![
            ("version".to_owned(), version.clone()),
            ("cli_version".to_owned(), cli.to_owned()),
            ("data_dir".to_owned(), data_dir_id()),
        ]);
        info.encode(m.encode_family(&Vec::<(String, String)>::new())?)?;
    }
    Ok(())
}

/// One family of the turns' totals. Unlabelled counters and histograms are
/// shown at zero before any turn, and the cache-miss reasons all: a rate
/// over a series that appears late misses its first increase.
fn family(e: &mut DescriptorEncoder, f: &Family, rows: &[Total]) -> Result<(), Error> {
    let mine: Vec<&Total> = rows.iter().filter(|r| r.family == f.name).collect();
    match f.ty {
        Type::Counter => {
            let mut series: Vec<(Labels, f64)> = Vec::new();
            for r in &mine {
                let l = labels(&r.labels);
                match series.iter_mut().find(|(k, _)| *k == l) {
                    Some((_, v)) => *v += r.value,
                    None => series.push((l, r.value)),
                }
            }
            if f.name == totals::CACHE_MISSES {
                for m in crate::cache_miss::CacheMiss::ALL {
                    let l = vec![("reason".to_owned(), m.as_str().to_owned())];
                    if !series.iter().any(|(k, _)| *k == l) {
                        series.push((l, 0.0));
                    }
                }
            }
            if series.is_empty() && !has_labels(f.name) {
                series.push((vec![], 0.0));
            }
            series.sort_by(|a, b| a.0.cmp(&b.0));
            let mut m = e.encode_descriptor(f.name, f.help, None, MetricType::Counter)?;
            for (l, v) in series {
                ConstCounter::new(v.max(0.0)).encode(m.encode_family(&l)?)?;
            }
        }
        Type::Histogram(bounds) => {
            let (buckets, count, sum) = totals::histogram(bounds, &mine);
            let mut m = e.encode_descriptor(f.name, f.help, None, MetricType::Histogram)?;
            m.encode_histogram::<Vec<(String, String)>>(sum, count, &buckets, None)?;
        }
    }
    Ok(())
}

/// Counters whose series all carry a label (none shown before a turn).
fn has_labels(name: &str) -> bool {
    [
        totals::TURNS,
        totals::TURNS_FAILED,
        totals::FALLBACKS,
        totals::TOKENS,
        totals::CACHE_MISSES,
        totals::COLD,
        totals::ERRORS,
    ]
    .contains(&name)
}

fn gauge(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, i64)],
) -> Result<(), Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (l, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(l)?)?;
    }
    Ok(())
}

fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, u64)],
) -> Result<(), Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (l, v) in series {
        ConstCounter::new(*v).encode(m.encode_family(l)?)?;
    }
    Ok(())
}

/// The keeper's figures (zeros where none runs: its CLIs are none).
fn keeper(e: &mut DescriptorEncoder, k: Option<&Status>) -> Result<(), Error> {
    let one = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
    gauge(
        e,
        "claude_shim_keeper_up",
        "Whether the keeper of live CLIs answered the scrape",
        &[(vec![], i64::from(k.is_some()))],
    )?;
    let states = [
        LiveState::Ready,
        LiveState::Idle,
        LiveState::Busy,
        LiveState::Stopping,
    ];
    let live = k.map(|k| k.live.as_slice()).unwrap_or_default();
    let by_state: Vec<(Labels, i64)> = states
        .iter()
        .map(|s| {
            let n = live.iter().filter(|l| l.state == *s).count();
            (one("state", s.as_str()), n as i64)
        })
        .collect();
    gauge(
        e,
        "claude_shim_live_clis",
        "Live CLIs the keeper holds, by state (ready: started ahead of a new conversation)",
        &by_state,
    )?;
    let rss: u64 = live.iter().filter_map(|l| l.rss_bytes).sum();
    gauge(
        e,
        "claude_shim_live_clis_resident_bytes",
        "Resident memory of the live CLIs",
        &[(vec![], rss as i64)],
    )?;
    gauge(
        e,
        "claude_shim_live_clis_memory_budget_bytes",
        "The memory bound of the live CLIs (CLAUDE_SHIM_WARM_MEMORY)",
        &[(vec![], k.map_or(0, |k| k.memory as i64))],
    )?;
    gauge(
        e,
        "claude_shim_live_clis_max",
        "The count bound of the live CLIs (CLAUDE_SHIM_WARM_MAX)",
        &[(vec![], k.map_or(0, |k| k.max as i64))],
    )?;
    let c = k.map(|k| k.counters.clone()).unwrap_or_default();
    counter(
        e,
        "claude_shim_keeper_lends",
        "Live CLIs the keeper lent to a turn, since it started",
        &[(vec![], c.lends)],
    )?;
    let misses: Vec<(Labels, u64)> = c
        .misses
        .iter()
        .map(|(r, n)| (one("reason", r), *n))
        .collect();
    counter(
        e,
        "claude_shim_keeper_misses",
        "Requests the keeper answered without a live CLI (a turn then runs cold), by reason, since it started",
        &misses,
    )?;
    counter(
        e,
        "claude_shim_keeper_clis_started",
        "CLIs the keeper started (live or ready), since it started",
        &[(vec![], c.started)],
    )?;
    let ended: Vec<(Labels, u64)> = c.ended.iter().map(|(r, n)| (one("cause", r), *n)).collect();
    counter(
        e,
        "claude_shim_keeper_clis_ended",
        "CLIs that ended, by cause (ttl, room, fingerprint, unwell, abandoned, stopped, crash, exited), since the keeper started",
        &ended,
    )
}

/// This process's data dir, as a short hash: `claude_shim_build_info`'s
/// `data_dir` label, by which `doctor` tells an endpoint serving another data
/// dir's figures (a service started with another HOME) from its own.
pub fn data_dir_id() -> String {
    let dir = crate::data_dir::configured().unwrap_or_default();
    crate::cache_miss::part([dir.as_os_str().as_encoded_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(family: &str, labels: &str, value: f64) -> Total {
        Total {
            family: family.into(),
            labels: labels.into(),
            value,
        }
    }

    #[test]
    fn totals_keeper_and_build_read_as_openmetrics() {
        let s = Snapshot {
            totals: Some(vec![
                total(totals::TURNS, "kind=resumed,engine=warm", 3.0),
                total(totals::TURNS, "kind=fresh,engine=cold", 1.0),
                total(totals::CACHE_MISSES, "reason=idle", 1.0),
                total(totals::OVERHEAD, "le=0.001", 2.0),
                total(totals::OVERHEAD, "le=0.01", 1.0),
                total(totals::OVERHEAD, "sum", 0.01),
            ]),
            keeper: None,
            cli_versions: vec!["2.1.330".into()],
        };
        let text = render(&s, Format::Openmetrics);
        for want in [
            "claude_shim_turns_total{kind=\"resumed\",engine=\"warm\"} 3.0",
            "claude_shim_turns_total{kind=\"fresh\",engine=\"cold\"} 1.0",
            "claude_shim_cache_misses_total{reason=\"idle\"} 1.0",
            "claude_shim_cache_misses_total{reason=\"tools\"} 0.0",
            "claude_shim_overhead_seconds_count 3",
            "claude_shim_overhead_seconds_bucket{le=\"0.001\"} 2",
            "claude_shim_overhead_seconds_bucket{le=\"0.01\"} 3",
            "claude_shim_overhead_seconds_bucket{le=\"+Inf\"} 3",
            "claude_shim_cost_usd_total 0.0",
            "claude_shim_store_up 1",
            "claude_shim_keeper_up 0",
            "claude_shim_live_clis{state=\"idle\"} 0",
            "cli_version=\"2.1.330\"",
            "# EOF",
        ] {
            assert!(text.contains(want), "{want} not in:\n{text}");
        }
        assert!(text.contains("claude_shim_build_info{"), "{text}");
        // A store that could not be read says so, and shows no figures.
        let down = render(&Snapshot::default(), Format::Openmetrics);
        assert!(down.contains("claude_shim_store_up 0"), "{down}");
        assert!(!down.contains("claude_shim_turns"), "{down}");
        assert!(!down.contains("claude_shim_cost_usd"), "{down}");
        // The classic text (node_exporter's textfile collector) knows no
        // info type: a gauge.
        let classic = render(&s, Format::Prometheus);
        assert!(
            classic.contains("# TYPE claude_shim_build_info gauge"),
            "{classic}"
        );
        assert!(!classic.contains("# EOF"), "{classic}");
    }
}
