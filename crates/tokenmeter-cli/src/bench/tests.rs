//! Tests of the bench against scripted servers on loopback.
