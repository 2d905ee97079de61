//! Unit tests on paused time: the deadlines of one connection, and eviction at the cap.

mod deadlines;
mod eviction;
