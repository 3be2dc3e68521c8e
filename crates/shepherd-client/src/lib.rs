//! What every Shepherd front end shares to reach a herd: the wire client itself ([`wire`]: one
//! connection, a link that rides out broker restarts, starting a broker on demand), where a
//! broker lives ([`paths`]), the command's resolved environment ([`Context`]), the herd it
//! works on and how to connect to its broker as a parent, a sheep or an observer (with
//! deadlines; [`connect`]), the caller's terminal identity, the one failure type a front end
//! renders ([`CliError`]), what a herd started from here would lack ([`needs`], and
//! [`runtime`] for a runtime directory missing from the environment), and the pi sheep
//! extension as shipped in this binary ([`pi_sheep`]).
//!
//! The CLI, the MCP server, the dashboard, the web board and the sheep-side runtime all depend
//! on this crate; none of them depends on another, nor on the broker (`scripts/front-end-deps`
//! checks it). The broker depends on it too, for the paths and start-up records both sides of
//! the socket share. It never prints: front ends decide what to show.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod connect;
pub mod context;
pub mod envelope_text;
pub mod error;
pub mod herd_feed;
pub mod herds;
pub mod land_words;
pub mod needs;
pub mod paths;
pub mod pi_sheep;
pub mod runtime;
pub mod session_words;
pub mod wire;

pub use context::Context;
pub use error::CliError;
