//! Test support for Shepherd's own tests. Never installed for users.
