//! A private Shepherd world beside a private real Herdr: the world's commands run as if typed
//! in the user's Herdr pane `w1:p1` (the variables Herdr sets in a pane), and helpers read
//! what Herdr shows. Dropping it stops the world's broker first (closing its sheep), then the
//! server, then anything still pointed at the server's socket. Without a Herdr binary,
//! [`HerdrWorld::start`] says the test skipped and returns `None`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use shepherd_testkit::fake_herdr::RealHerdr;
use shepherd_testkit::fake_herdr::real::RealOptions;

use super::herd_support::World;

/// The longest any test waits for something that should happen at once.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A world whose caller sits in a real Herdr pane. Fields drop in order: the world (and its
/// broker) before the server.
pub struct HerdrWorld {
    pub world: World,
    pub herdr: RealHerdr,
}

impl HerdrWorld {
    /// A world inside the user's pane `w1:p1` of a fresh private server for `test`.
    pub fn start(test: &str) -> Option<Self> {
        Self::start_with(test, RealOptions::default())
    }

    /// [`Self::start`] with the server set up as `options` say.
    pub fn start_with(test: &str, options: RealOptions) -> Option<Self> {
        let herdr = RealHerdr::start_with(test, options)?;
        let made = herdr.call("workspace.create", &json!({"cwd": "/tmp", "label": "user"}));
        assert_eq!(made["root_pane"]["pane_id"], "w1:p1");
        let mut world = World::new();
        for (key, value) in [
            ("HERDR_ENV", "1".to_owned()),
            ("HERDR_SOCKET_PATH", herdr.socket().display().to_string()),
            ("HERDR_PANE_ID", "w1:p1".to_owned()),
            ("HERDR_TAB_ID", "w1:t1".to_owned()),
            ("HERDR_WORKSPACE_ID", "w1".to_owned()),
        ] {
            world.extra_env.push((key.into(), value));
        }
        Some(Self { world, herdr })
    }

    /// Every open pane, as `pane.list` shows them.
    pub fn panes(&self) -> Vec<Value> {
        self.herdr.call("pane.list", &json!({}))["panes"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The open pane labelled `label`.
    pub fn pane_labelled(&self, label: &str) -> Option<Value> {
        self.panes().into_iter().find(|p| p["label"] == label)
    }

    /// Whether the user's pane still has focus.
    pub fn caller_focused(&self) -> bool {
        self.herdr.call("pane.get", &json!({"pane_id": "w1:p1"}))["pane"]["focused"] == true
    }

    /// Waits (on Herdr's own wait, with a deadline) for a line matching `regex` in `pane`.
    pub fn wait_for(&self, pane: &str, regex: &str) {
        let params = json!({"pane_id": pane, "source": "recent",
            "match": {"type": "regex", "value": regex}, "timeout_ms": WAIT.as_millis() as u64});
        self.herdr
            .request("pane.wait_for_output", &params)
            .unwrap_or_else(|err| panic!("no {regex} in {pane}: {err}"));
    }

    /// Waits until no open pane is labelled `label`, watching Herdr's events.
    pub fn wait_unlabelled(&self, label: &str) {
        let deadline = Instant::now() + WAIT;
        let mut events = RawEvents::open(&self.herdr.socket());
        while self.pane_labelled(label).is_some() {
            assert!(
                events.next(deadline).is_some(),
                "a pane labelled {label:?} stayed open"
            );
        }
    }

    /// The created-pane registry, as text.
    pub fn registry(&self) -> String {
        std::fs::read_to_string(
            self.world
                .home
                .join(".pi/agent/pi-shepherd/created-panes.json"),
        )
        .unwrap_or_default()
    }
}

/// Every pane event Herdr sends, read with a deadline (any event is a reason to look again).
pub struct RawEvents {
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
}

impl RawEvents {
    /// Subscribes to pane closes, exits and moves on `socket`.
    pub fn open(socket: &Path) -> Self {
        use std::io::Write;
        let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
        let line = json!({"id": "t", "method": "events.subscribe", "params": {"subscriptions": [
            {"type": "pane.closed"}, {"type": "pane.exited"}, {"type": "pane.moved"}, {"type": "pane.created"},
        ]}});
        stream.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut events = Self {
            reader: std::io::BufReader::new(stream),
        };
        events.next(Instant::now() + WAIT).expect("acknowledged");
        events
    }

    /// The next line, or `None` at the deadline.
    pub fn next(&mut self, deadline: Instant) -> Option<Value> {
        use std::io::BufRead;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        self.reader.get_ref().set_read_timeout(Some(left)).unwrap();
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(read) if read > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        }
    }
}
