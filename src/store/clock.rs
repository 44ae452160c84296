//! The store's time: epoch seconds, injectable for tests. A leaf, so both
//! backends tell the time the same way.

/// Seconds since the epoch, as the store sees them (injectable for tests).
pub type Clock = std::sync::Arc<dyn Fn() -> i64 + Send + Sync>;

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
