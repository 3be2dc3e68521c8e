//! The state layer: the broker's shared state and the one way to change it, the journal that
//! makes every change durable before anyone hears of it, who a connection speaks for, and who
//! may connect as what.
//!
//! `broker` holds the broker's services and the runtime links. `store` is the herd and its
//! journal: it commits each change (decide on the pure herd, journal, apply, wake waiters) and
//! hands on the effects the change calls for instead of calling the modules that act on them.
//! `connections` counts the clients and lists the parents; `work` follows the runs and merges
//! under way; `journal` appends and replays;
//! `session` is a connection's identity and how a handler answers it; `auth` mints and checks
//! capability tokens. Code that touches one service takes that service (`&Store`,
//! `&BrokerConfig`, `&Connections`, `Work`), not the broker.
//!
//! It may call only what sits below it — `clock`, `paths`, `error`, `fieldnotes` (the note
//! writer whose handle it holds) and `remote` (the host links whose state it holds) — and
//! none of the sheep runtime, the handlers, runs, the wire or start-up.

pub(crate) mod auth;
pub(crate) mod broker;
pub(crate) mod connections;
pub mod journal;
pub(crate) mod session;
pub(crate) mod store;
pub(crate) mod work;
