//! What every Shepherd front end shares to reach a herd: the command's resolved environment
//! ([`Context`]), the herd it works on and how to connect to its broker as a parent, a sheep or
//! an observer (starting the broker on demand, with deadlines; [`connect`]), the caller's
//! terminal identity, the one failure type a front end renders ([`CliError`]), and what a herd
//! started from here would lack ([`needs`], and [`runtime`] for a runtime directory missing
//! from the environment).
//!
//! The CLI, the MCP server, the dashboard and the sheep-side runtime all depend on this crate;
//! none of them depends on another. It never prints: front ends decide what to show.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod connect;
pub mod context;
pub mod envelope_text;
pub mod error;
pub mod herd_feed;
pub mod herds;
pub mod land_words;
pub mod needs;
pub mod runtime;
pub mod session_words;

pub use context::Context;
pub use error::CliError;
