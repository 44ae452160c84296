//! The store's vocabulary: the rows, keys and enums each topic reads and
//! writes, one file per topic (its methods are in the topic's file above,
//! which re-exports these). Both backends use them, so they sit below both:
//! the SQLite methods of `Store` and the shared backend (`postgres`).

pub mod attempts;
pub mod caps;
pub mod listing;
pub mod pins;
pub mod prompts;
pub mod report;
pub mod runs;
pub mod transcripts;
