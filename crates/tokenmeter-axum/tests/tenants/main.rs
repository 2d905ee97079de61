//! Tenant labels end to end: allow-listed request headers and the body's `user` label the
//! series in both exporters, over real HTTP on loopback (the server layer and the reqwest
//! helper), and a million distinct header values stay within the series cap.

mod client;
mod labels;
mod million;
mod support;
