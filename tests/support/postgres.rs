//! A real PostgreSQL server for the fleet tests: its own cluster (initdb into a temp
//! dir), on a free loopback port, started by the test and stopped when dropped. The
//! binaries come from `$CLAUDE_SHIM_TEST_PG_BIN`, else `pg_config --bindir`, else the
//! newest `/usr/lib/postgresql/*/bin` (Debian's `postgresql` package). Missing
//! binaries fail the test loudly: never a skip.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub struct PgServer {
    _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub port: u16,
    bin: PathBuf,
    /// Run the server's programs as this user (initdb refuses root).
    user: Option<String>,
    running: bool,
}

/// Where the server binaries are.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CLAUDE_SHIM_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").is_file() {
            return dir;
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL server binaries not found (initdb, pg_ctl): install Debian's \
             `postgresql` package (apt-get install postgresql) or set CLAUDE_SHIM_TEST_PG_BIN"
        ),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn check(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl PgServer {
    /// initdb a new cluster and start it on 127.0.0.1:<free port>.
    pub fn start() -> PgServer {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("claude-shim-pg.")
            .tempdir()
            .expect("temp dir for the cluster");
        let root = nix::unistd::geteuid().is_root();
        let user = root.then(|| "postgres".to_string());
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("mkdir data");
        if let Some(u) = &user {
            let pw = nix::unistd::User::from_name(u)
                .ok()
                .flatten()
                .unwrap_or_else(|| panic!("running as root needs a `{u}` user for initdb"));
            for p in [dir.path(), data.as_path()] {
                nix::unistd::chown(p, Some(pw.uid), Some(pw.gid)).expect("chown to postgres");
            }
        }
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut server = PgServer {
            _dir: dir,
            data,
            port: free_port(),
            bin,
            user,
            running: false,
        };
        let data = server.data.to_string_lossy().into_owned();
        check(
            "initdb",
            server
                .tool(
                    "initdb",
                    &["-D", &data, "-U", "shim", "--auth=trust", "-E", "UTF8"],
                )
                .output(),
        );
        server.start_again();
        server
    }

    fn tool(&self, name: &str, args: &[&str]) -> Command {
        let prog = self.bin.join(name);
        let mut cmd = match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&prog);
                c
            }
            None => Command::new(&prog),
        };
        cmd.args(args).env("LC_ALL", "C.UTF-8").current_dir("/");
        cmd
    }

    /// Start (again, after [`stop`]/[`kill`]) on the same port and data.
    pub fn start_again(&mut self) {
        let data = self.data.to_string_lossy().into_owned();
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200 \
             -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all",
            self.port, data
        );
        let log = self.data.join("server.log").to_string_lossy().into_owned();
        check(
            "pg_ctl start",
            self.tool(
                "pg_ctl",
                &["-D", &data, "-l", &log, "-o", &opts, "-w", "start"],
            )
            .output(),
        );
        self.running = true;
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `postgres://` URL of database `db` (see [`create_db`]).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://shim@127.0.0.1:{}/{db}", self.port)
    }

    /// A new empty database, for one test's store.
    pub fn create_db(&self, db: &str) -> String {
        let port = self.port.to_string();
        check(
            "createdb",
            self.tool(
                "createdb",
                &["-h", "127.0.0.1", "-p", &port, "-U", "shim", db],
            )
            .output(),
        );
        self.url(db)
    }

    /// SQL through psql, for assertions on what the store holds.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let port = self.port.to_string();
        let out = check(
            "psql",
            self.tool(
                "psql",
                &[
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &port,
                    "-U",
                    "shim",
                    "-d",
                    db,
                    "-AtX",
                    "-c",
                    sql,
                ],
            )
            .output(),
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn postmaster_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.data.join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// The postmaster and its backends.
    pub fn pids(&self) -> Vec<i32> {
        let Some(pid) = self.postmaster_pid() else {
            return Vec::new();
        };
        let mut pids = children(pid);
        pids.push(pid);
        pids
    }

    /// Kill the server outright: SIGKILL to the postmaster and every backend
    /// (what a crashed or OOM-killed database host looks like to its clients).
    pub fn kill(&mut self) {
        for p in self.pids() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL still listening after kill"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.running = false;
    }

    /// Stop the server (fast shutdown).
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        let data = self.data.to_string_lossy().into_owned();
        let _ = self
            .tool("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"])
            .output();
        self.running = false;
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let data = self.data.to_string_lossy().into_owned();
            let _ = self
                .tool("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

/// Processes whose parent is `pid` (from /proc).
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so split after the ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}
