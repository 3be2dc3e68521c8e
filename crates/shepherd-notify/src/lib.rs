//! Telling the person when the herd needs them, while they are away from the desk: a question,
//! a blocked or failed task, a stall, a limit that lasts, a merge that stopped, a run that
//! finished. The broker reads the moments off its herd ([`shepherd_core::herd::needs`]); this
//! crate decides which to tell now ([`ledger`]: each once, at a bounded rate, remembered across
//! restarts), words them ([`notice`]) and sends them on the channels the user chose: the
//! desktop's notification server over D-Bus ([`desktop`]) and a webhook ([`webhook`]).
//!
//! A library: it returns what happened and never prints. A link it sends names the board's
//! page and never carries the board's token; the words a sheep wrote leave the machine only when
//! the user's settings say so.

#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod board;
pub mod desktop;
pub mod ledger;
pub mod notice;
mod open;
pub mod webhook;

pub use ledger::{Ledger, Plan};
pub use notice::Notice;
