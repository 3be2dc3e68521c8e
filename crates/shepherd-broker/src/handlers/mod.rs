//! The request handlers, one module per family of methods, and the steps they share.
//!
//! The parent's: `spawn` (with `launch`, shared with `resume`), `resume`, `parent` (delegate,
//! message, watch, wait, status, herd, resolve, read), `close` (close and prune), `focus` and
//! `broker_requests` (`broker.status`, `broker.stop`); anyone's `receipts` (`status` on a
//! message id), `inbox` (inbox, ack, subscribe) and `herd_feed` (`herd.subscribe`); the
//! sheep's `sheep` (tell, done, report, `herd.mates`); the supervisor's `supervisor`
//! (started, exited). What they share: `handover` (the second half of a delegation),
//! `fallback` (a limited task handed to its agent's fallback), `autoclose` (closing settled
//! sheep) and `adoption` (the grace a surviving sheep's supervisor gets to come back).
//!
//! Handlers may call the sheep runtime, the state layer and what sits below them, and each
//! other; never runs, the wire or start-up. `wire::dispatch` is the one module that knows
//! every handler.

pub(crate) mod adoption;
pub(crate) mod autoclose;
pub(crate) mod broker_requests;
pub(crate) mod close;
pub(crate) mod fallback;
pub(crate) mod focus;
pub(crate) mod handover;
pub(crate) mod herd_feed;
pub(crate) mod inbox;
pub(crate) mod parent;
pub(crate) mod receipts;
pub(crate) mod resume;
pub(crate) mod sheep;
pub(crate) mod spawn;
pub(crate) mod supervisor;
