//! The Herdr backend: sheep in Herdr tabs, panes or workspaces, driven over Herdr's socket API.
//!
//! Herdr (a terminal multiplexer built for coding agents) owns every pane's terminal; Shepherd
//! talks to it directly over its Unix socket instead of spawning the `herdr` CLI per call:
//! newline-delimited JSON, one request per connection ([`client`], the methods in [`api`]),
//! plus long-lived `events.subscribe` connections that report pane closes, exits, moves and
//! agent status changes as they happen ([`events`]). [`backend::HerdrBackend`] implements
//! [`crate::Backend`] on top: a sheep's pane runs the supervisor as its own program, and is
//! known by its terminal id ([`identity`]), never by a pane id alone. [`server`] starts a Herdr
//! server when the user chose Herdr and none runs; [`socket`] finds the socket the way Herdr
//! itself does. The wire shapes follow what a real Herdr 0.8.0 (protocol 20) sent, read
//! leniently because newer Herdr releases add fields; the surprises are noted where they
//! shaped the code (`research/herdr-real-check.md` has the evidence).
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

pub mod api;
pub mod backend;
pub mod client;
mod command;
pub mod error;
pub mod events;
pub mod identity;
mod place;
pub mod server;
mod session;
pub mod socket;
pub mod wire;

pub use api::{CommandPane, NewPane, TabSlot};
pub use backend::{HerdrBackend, HerdrConfig};
pub use client::HerdrClient;
pub use command::KEEP_OPEN_SCRIPT;
pub use error::{ErrorCode, HerdrError};
pub use events::{HerdrEvent, HerdrEvents};
pub use identity::{GoneBecause, PaneRef, Whereabouts};
pub use server::{ServerOrigin, ServerStart, ServerStatus};
pub use socket::{HerdrEnv, SocketSource, SocketTarget};

/// The oldest Herdr socket protocol Shepherd speaks (Herdr 0.8.0).
pub const MIN_PROTOCOL: u32 = 20;
