//! The parsers of the settings' text forms, one per form: what `tokenmeter bench`'s flags
//! accept, for any front end that reads [`BenchArgs`](crate::BenchArgs) from text. Each
//! returns the value, or a message that names what is wrong and gives an example.
//!
//! The types with a text form of their own parse with [`FromStr`](std::str::FromStr):
//! [`Slo`](crate::Slo), [`LengthDist`](crate::LengthDist),
//! [`SharedPrefix`](crate::SharedPrefix), [`CancelAt`](crate::CancelAt) and
//! [`StageSpec`](crate::StageSpec).
//!
//! ```
//! use tokenmeter_bench::{BenchArgs, parse};
//!
//! let mut args = BenchArgs::default();
//! args.url = Some(parse::parse_boxed_url("http://127.0.0.1:8000/v1")?);
//! args.load.rate = Some(parse::parse_rate("8")?);
//! args.timeout = parse::parse_timeout("30s")?;
//! let error = parse::parse_rate("fast").unwrap_err();
//! assert!(error.contains("e.g. 8"), "{error}");
//! # Ok::<(), String>(())
//! ```

pub use crate::args::{
    parse_boxed_url, parse_duration_arg, parse_fraction, parse_resolution, parse_share, parse_size,
    parse_timeout,
};
pub use crate::compare::parse_threshold;
pub use crate::intervals::parse_confidence;
pub use crate::output::classes::parse_edges;
pub use crate::peer::parse_percentile;
pub use crate::request_shape::{header_arg, parse_extra_body};
pub use crate::run_block::parse_metadata;
pub use crate::schedule::{parse_burstiness, parse_rate};
pub use crate::shard::{parse_shard, parse_start_at};
pub use crate::slices::args::{parse_target, positive_duration};
