//! The herd state machine: sheep, tasks, requests, inboxes and watchers.
