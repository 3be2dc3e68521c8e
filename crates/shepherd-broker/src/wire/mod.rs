//! The wire: the socket server (one task per connection, one per request), the dispatcher
//! that routes each request to its handler after checking the caller's role, and exactly-once
//! answers for requests a client resends.
//!
//! It may call runs, the handlers, the sheep runtime and the state layer; only start-up
//! (`serve`) calls it.

pub(crate) mod dispatch;
pub(crate) mod resend;
pub(crate) mod server;
