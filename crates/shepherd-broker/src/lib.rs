//! The broker: the single owner of a herd's runtime state.
