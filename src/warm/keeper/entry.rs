//! One live CLI of the keeper's: what it holds, and how it is ended.

use super::spawn::{Child, Spawned};
use crate::warm::protocol::Start;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Idle,
    /// Lent to this connection.
    Lent(u64),
    /// Its stdin is closed; it is finishing.
    Stopping {
        since: Instant,
    },
}

pub struct Entry {
    pub session: String,
    pub head: Option<String>,
    pub key: String,
    pub file_size: Option<u64>,
    pub cwd: String,
    pub child: Box<dyn Child>,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub state: State,
    pub started: Instant,
    pub last_used: Instant,
    pub turns: u32,
    /// The keeper holds the session's lease while ending it.
    pub leased: bool,
    /// To be ended as soon as no turn holds the session.
    pub want_stop: bool,
    /// It started its session anew (`--session-id`), not by resuming it.
    pub began_fresh: bool,
    /// Started ahead of a new conversation (no message yet, no session
    /// file), not yet reserved by a turn.
    pub ready: bool,
    /// The Claude config dir it writes its session in (from its start's
    /// environment).
    pub config_dir: Option<PathBuf>,
    /// While lent: the session file's length when the turn began (`None`:
    /// no file yet), to take the turn back should its caller die mid-turn.
    pub lent_at: Option<u64>,
    /// Why the keeper ended it (`None`: it ended by itself).
    pub ending: Option<crate::warm::protocol::End>,
}

impl Entry {
    /// The entry of a CLI just started as `start` said, of no session yet.
    pub fn new(spawned: Spawned, start: &Start) -> Entry {
        let now = Instant::now();
        Entry {
            session: String::new(),
            head: None,
            key: String::new(),
            file_size: None,
            cwd: start.cwd.clone(),
            child: spawned.child,
            stdin: Some(spawned.stdin),
            stdout: spawned.stdout,
            stderr: spawned.stderr,
            state: State::Idle,
            started: now,
            last_used: now,
            turns: 0,
            leased: false,
            want_stop: false,
            began_fresh: !start.args.iter().any(|a| a == "--resume"),
            ready: false,
            config_dir: config_dir_of(&start.env),
            lent_at: None,
            ending: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Close its stdin: the CLI finishes (writing its closing records) and
    /// exits.
    pub fn stop(&mut self) {
        self.ending_for(crate::warm::protocol::End::Stopped);
        drop(self.stdin.take());
        if !matches!(self.state, State::Stopping { .. }) {
            self.state = State::Stopping {
                since: Instant::now(),
            };
        }
    }

    /// The keeper ends it, for `why` (the first reason given stands).
    pub fn ending_for(&mut self, why: crate::warm::protocol::End) {
        self.ending.get_or_insert(why);
    }

    /// Its session file, once there is one.
    pub fn session_file(&self) -> Option<PathBuf> {
        crate::sessions::find(self.config_dir.as_deref()?, &self.session)
    }

    /// Take back what it wrote of its turn, killed mid-turn (its caller
    /// hung up).
    pub fn undo_turn(&self) {
        let Some(file) = self.session_file() else {
            return;
        };
        // A turn the session holds whole stays: its caller may have had the
        // result (a streaming caller kills at the end of the reply), and the
        // next turn's lookup tells whether it continues from it.
        if crate::sessions::turn_finished_since(&file, self.lent_at).unwrap_or(true) {
            return;
        }
        match crate::sessions::undo_turn(&file, self.lent_at) {
            Ok(true) => crate::debug!("keeper: took back the abandoned turn of {}", self.session),
            Ok(false) => {}
            Err(why) => crate::error!(
                "keeper: taking back the abandoned turn of {}: {why}",
                self.session
            ),
        }
    }
}

/// The Claude config dir of a CLI started with `env` (as `env::claude_config_dir`
/// reads it from our own).
fn config_dir_of(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    match var("CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => var("HOME").map(|h| PathBuf::from(h).join(".claude")),
    }
}
