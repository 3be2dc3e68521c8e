//! The settings model: keys, defaults, validation, layering and migration, without file I/O.
