//! Filesystem-safe slugs for session and agent names, and the name checks that guard them.
