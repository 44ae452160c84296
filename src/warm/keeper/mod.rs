//! The keeper: a small per-user background process (`claude-shim keeper`,
//! started on demand by a shim) that owns the live Claude Code processes of
//! warm turns. One per data dir (a lock file), listening on `keeper.sock`
//! there. It lends a process to one turn at a time (passing its pipes), takes
//! it back idle, watches idle ones (any output or exit: discarded), ends those
//! idle past their TTL or pushed out by the pool bound (least recently used
//! first), and exits once it holds nothing.
//!
//! Nothing outlives it: live processes read their input from the keeper, so
//! should it be killed their stdin closes and they end (a lent one after its
//! turn: the shim still holds its stdin). It ends a process by closing its
//! stdin, which lets the CLI write its closing records; never while another
//! turn holds the session's lease.
//!
//! Here: [`serve`], its loop (the lock, the socket, signals); `server`, the
//! connections and their requests; `pool`, the live CLIs (lending, room by
//! count and memory, expiry, reaping) and `ready`, those started ahead of a
//! new conversation, all started through `spawn`'s small trait (a fake in
//! their tests); `entry`, one CLI; `store_pool`, readied store connections;
//! `checkpoint`, the store's WAL folded between turns; `config`, the
//! settings and bounds.

mod checkpoint;
mod config;
mod entry;
mod pool;
mod ready;
mod server;
mod spawn;
mod store_pool;

pub use config::{default_memory, Config, DEFAULT_MAX, READY_FOR};

use super::socket::SOCKET;
use crate::store::Store;
use anyhow::{Context, Result};
use pool::Pool;
use server::Server;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

const LOCK: &str = "keeper.lock";

static TERMINATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_term(_: nix::libc::c_int) {
    TERMINATED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Tell the shim that started us that we listen: a byte on the pipe it
/// passed (`CLAUDE_SHIM_KEEPER_READY` names its descriptor), then closed.
fn say_ready() {
    let Some(fd) = crate::env::keeper_ready() else {
        return;
    };
    std::env::remove_var(crate::env::KEEPER_READY);
    // SAFETY: the descriptor was handed to us for this, and is ours alone.
    let pipe = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let _ = nix::unistd::write(&pipe, b"1");
}

/// Run the keeper until it holds nothing (or is told to stop). Returns at
/// once when another keeper already serves `dir`.
pub fn serve(cfg: Config) -> Result<()> {
    // Its socket and lock are private whatever umask started it.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(cfg.dir.join(LOCK))
        .context("opening the keeper's lock")?;
    let _lock = match nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err(_) => return Ok(()),
    };
    // Not in the caller's directory, which it would keep busy: in its own
    // (where `warm stop` finds it, even once the data dir is deleted).
    let _ = std::env::set_current_dir(cfg.dir.path());
    let path = cfg.dir.join(SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).context("binding the keeper's socket")?;
    listener.set_nonblocking(true)?;
    say_ready();
    let ours = socket_identity(&path);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        let action = nix::sys::signal::SigAction::new(
            nix::sys::signal::SigHandler::Handler(on_term),
            nix::sys::signal::SaFlags::empty(),
            nix::sys::signal::SigSet::empty(),
        );
        let _ = nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGTERM, &action);
        let _ = nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGINT, &action);
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGHUP,
            nix::sys::signal::SigHandler::SigIgn,
        );
    }
    // The store the turns use (a fleet's leases and heads are shared).
    let store = Store::open_configured(
        &cfg.dir,
        crate::store::postgres::Patience::Each(Duration::from_secs(2)),
    )
    .ok();
    let pool = Pool::new(cfg.limits(), store, Box::new(spawn::Processes));
    let mut k = Server::new(cfg.build.clone(), pool);
    k.checkpoints = checkpoint::Checkpoints::start(&cfg.dir);
    // A shared store: the turn that started us connected itself; the next
    // finds a connection ready.
    if let Ok(crate::store::backend::Location::Postgres(url)) =
        crate::store::backend::Location::configured(&cfg.dir)
    {
        if crate::env::store_ready() {
            k.store_pool.refill(&url);
        }
    }
    loop {
        // Told to stop, or orphaned: our socket was removed or replaced (the
        // data dir deleted, another keeper after a lock mix-up) so no shim
        // can reach us again.
        let orphaned = || socket_identity(&path) != ours;
        if !k.pool.draining && (TERMINATED.load(std::sync::atomic::Ordering::SeqCst) || orphaned())
        {
            k.pool.drain();
        }
        k.tick(&listener);
        if k.is_idle() && (k.pool.draining || k.last_activity.elapsed() >= cfg.linger) {
            break;
        }
    }
    if socket_identity(&path) == ours {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// Device and inode of the socket file, to tell ours from a replacement.
fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// A fake `Spawn`, for the tests of the pool and the server.
#[cfg(test)]
mod fake;
