//! The embedded engine: the SQLite file `<data dir>/shim.db` (one machine,
//! the default). [`Local`] opens it; each topic's file here implements
//! that topic's trait (`crate::store::pins::Pins`, …) in SQL.

mod attempts;
mod caps;
mod listing;
mod local;
mod local_time;
mod pins;
mod prompts;
mod report;
mod runs;
mod scans;
mod trial;

pub use local::{size_on_disk, Local, DB_FILE};
pub use local_time::LocalTime;
pub use trial::trial;
