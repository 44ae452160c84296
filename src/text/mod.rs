//! Text helpers every layer may use: shell quoting and durations (parsed from
//! settings, printed for people).

/// Durations: `90s`, `5m`, `1h`… parsed, and printed short or exact.
pub mod duration;
/// Quoting a word for a POSIX shell (or for people reading one).
pub mod quote;
