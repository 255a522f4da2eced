//! Shared pieces of the bridge benchmark's tools (`bench/run`, results in
//! `docs/benchmarks.md`; issue 4): reading a Streamable HTTP reply body (SSE or
//! JSON), building and checking the `tools/call echo` exchange every tool uses,
//! summarising latencies, and sampling a process's CPU time and memory from
//! `/proc`.
//!
//! This crate is a measuring instrument, not part of Switchboard: it must not know
//! (or link) any Switchboard crate, so that the same load generator and the same
//! upstream measure Switchboard's bridge and the third-party bridges alike.

pub mod echo;
pub mod proc_stat;
pub mod reply;
pub mod stats;
