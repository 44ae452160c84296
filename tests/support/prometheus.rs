//! A real Prometheus server (Debian's `prometheus`, which `.ci/test` installs) on
//! loopback, scraping the shim's `metrics --serve` endpoints every second; its HTTP
//! API answers the tests' queries. Its data lives in a temp dir; it is killed on
//! drop. Without the binary the tests fail, never skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::{describe, run};

/// A port free now (the test binds it right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn binary(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("{name} not found: install Debian's `prometheus` package (.ci/test does)")
    })
}

/// `promtool check metrics` on `text`: its verdict and what it said.
pub fn promtool_check(text: &[u8]) -> (bool, String) {
    let mut cmd = Command::new(binary("promtool"));
    cmd.args(["check", "metrics"]);
    let out = run(cmd, text);
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

pub struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Scraping `targets` (`HOST:PORT` each) every second.
    pub fn scraping(targets: &[String]) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: claude-shim\n    scrape_interval: 1s\n    \
             scrape_timeout: 1s\n    static_configs:\n      - targets: [{list}]\n"
        );
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).expect("write prometheus.yml");
        let port = free_port();
        let child = Command::new(binary("prometheus"))
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while p.get("/-/ready").is_none_or(|(code, _)| code != 200) {
            assert!(Instant::now() < deadline, "prometheus did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// `GET path`: the status code and body.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut r = BufReader::new(s);
        let mut status = String::new();
        r.read_line(&mut status).ok()?;
        let code = status.split_whitespace().nth(1)?.parse().ok()?;
        let mut rest = String::new();
        r.read_to_string(&mut rest).ok()?;
        let body = rest
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        Some((code, body))
    }

    /// An instant query's vector: `(labels, value)` of each series.
    pub fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        let (code, body) = self
            .get(&format!("/api/v1/query?query={}", encode(promql)))
            .expect("query prometheus");
        assert_eq!(code, 200, "{promql}: {body}");
        let v: Value = serde_json::from_str(&body).expect("query answer");
        v["data"]["result"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let value = s["value"][1].as_str().and_then(|x| x.parse().ok());
                (s["metric"].clone(), value.unwrap_or(f64::NAN))
            })
            .collect()
    }

    /// The one value `promql` gives (0 for an empty vector).
    pub fn value(&self, promql: &str) -> f64 {
        self.query(promql).first().map_or(0.0, |(_, v)| *v)
    }

    /// Wait (a bounded time) until `promql` gives `want`: scrapes come every second.
    pub fn wait_for(&self, promql: &str, want: f64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.value(promql);
            if got == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{promql}: {got}, want {want}; targets: {:?}",
                self.get("/api/v1/targets").map(|(_, b)| b)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encoding for a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `claude-shim metrics --serve` of a sandbox, on a free loopback port; killed on
/// drop.
pub struct Endpoint {
    child: Child,
    pub addr: String,
}

impl Endpoint {
    pub fn serve(mut cmd: Command) -> Endpoint {
        let addr = format!("127.0.0.1:{}", free_port());
        cmd.args(["metrics", "--serve", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start metrics --serve");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("read its first line");
        if !first.starts_with("serving metrics at") {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "metrics --serve did not start: {first}{}",
                describe(&out.into())
            );
        }
        Endpoint { child, addr }
    }

    /// Still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    /// A figure of its `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`: the
    /// peak).
    pub fn memory(&self, field: &str) -> u64 {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).expect("read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("no {field} in {path}"))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
