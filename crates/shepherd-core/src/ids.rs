//! Opaque lifecycle ids.
