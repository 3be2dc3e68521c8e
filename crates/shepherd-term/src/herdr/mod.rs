//! The Herdr backend: sheep in Herdr tabs, panes or workspaces, driven over Herdr's socket API.
//!
//! Herdr (a terminal multiplexer built for coding agents) owns every pane's terminal; Shepherd
//! talks to it directly over its Unix socket instead of spawning the `herdr` CLI per call:
//! newline-delimited JSON, one request per connection ([`client`]), plus one long-lived
//! `events.subscribe` connection that reports pane closes, shell exits and agent status changes
//! as they happen ([`events`]). [`backend::HerdrBackend`] implements [`crate::Backend`] on top;
//! [`server`] starts a Herdr server when the user chose Herdr and none runs; [`socket`] finds
//! the socket the way Herdr itself does. The wire shapes follow what a real Herdr 0.8.0
//! (protocol 20) sent, read leniently because newer Herdr releases add fields.
//!
//! The broker takes the event stream before erasing the backend's type:
//!
//! ```no_run
//! use std::sync::Arc;
//! use shepherd_term::herdr::{HerdrBackend, HerdrConfig, HerdrEnv};
//!
//! // `starting_server` only when the user chose Herdr explicitly.
//! let config = HerdrConfig::new(HerdrEnv::from_process()).starting_server();
//! let herdr = HerdrBackend::connect(config)?;
//! let events = herdr.events().expect("the first caller gets the stream");
//! let backend: Arc<dyn shepherd_term::Backend> = Arc::new(herdr);
//! # drop((events, backend));
//! # Ok::<(), shepherd_term::herdr::HerdrError>(())
//! ```

pub mod backend;
pub mod client;
pub mod error;
pub mod events;
pub mod server;
mod shell;
pub mod socket;
pub mod wire;

pub use backend::{HerdrBackend, HerdrConfig};
pub use client::HerdrClient;
pub use error::{ErrorCode, HerdrError};
pub use events::{HerdrEvent, HerdrEvents};
pub use server::{ServerOrigin, ServerStart, ServerStatus};
pub use socket::{HerdrEnv, SocketSource, SocketTarget};

/// The oldest Herdr socket protocol Shepherd speaks (Herdr 0.8.0).
pub const MIN_PROTOCOL: u32 = 20;
