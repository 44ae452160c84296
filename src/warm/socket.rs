//! The keeper's socket, as both sides see it: where it is, and who is at the
//! other end (the kernel's word, `SO_PEERCRED`, not the socket file's).

use crate::data_dir::DataDir;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// The socket's name in the data dir.
pub const SOCKET: &str = "keeper.sock";

/// Where the keeper of `dir` listens.
pub fn socket(dir: &DataDir) -> PathBuf {
    dir.join(SOCKET)
}

/// Whether the process at the other end of `stream` runs as our user
/// (`SO_PEERCRED`: the kernel's word, not the socket file's).
pub fn same_user(stream: &UnixStream) -> bool {
    peer_uid(stream) == Some(nix::unistd::geteuid().as_raw())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|c| c.uid())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    // macOS and the BSDs: getpeereid(2).
    nix::unistd::getpeereid(stream)
        .ok()
        .map(|(uid, _)| uid.as_raw())
}

/// The pid of the process at the other end of `stream` (Linux; elsewhere
/// unknown).
pub fn peer_pid(stream: &UnixStream) -> Option<i32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
            .ok()
            .map(|c| c.pid())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = stream;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_says_the_peer_is_our_user() {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(same_user(&a) && same_user(&b));
        assert_eq!(peer_uid(&a), Some(nix::unistd::geteuid().as_raw()));
    }
}
