//! The broker wire protocol.
