//! The fieldnotes data model and its rendering: `session.json`, note frontmatter and bodies,
//! `shepherd.md`, and the context block a sheep receives.
