//! The run itself, below its front ends (the command's [`run`](crate::run) and
//! [`Plan`](crate::Plan)): [`prepare`] what every run needs before its first measured request,
//! then [`measure`] one run, [`repeat`] one plan several times, or [`sweep`] several rates, into
//! records. Nothing here prints a result or writes an output file: that is the caller's.

mod measure;
mod prepare;
mod repeat;
mod sweep;
mod warm_up;

pub(crate) use measure::measure;
pub(crate) use prepare::{Prepared, prepare};
pub(crate) use repeat::{Target, repeat, run_args, trace_path};
pub(crate) use sweep::{Swept, sweep};
