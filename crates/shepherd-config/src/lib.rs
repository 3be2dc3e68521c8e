//! What the user configured: agent definitions, approvals and settings files.
