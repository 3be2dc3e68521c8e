//! Who is connected: how many clients, which of them drive the herd, and the key they present.
//!
//! One of the broker's services (see `broker`): the idle timer counts the clients,
//! `broker.status` lists the parents, and a parent or observer `hello` is checked against the
//! herd key's digest. None of it is herd state: it is rebuilt as clients connect again after a
//! restart.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use shepherd_core::protocol::ParentConnection;

/// The connections open now and the key a parent presents.
#[derive(Default)]
pub(crate) struct Connections {
    clients: AtomicUsize,
    /// The parent connections open now, by connection number: who drives the herd.
    parents: Mutex<BTreeMap<u64, ParentConnection>>,
    /// Numbers parent connections.
    next_parent: AtomicU64,
    /// The digest of the herd's key, which the parent and observers present (see `auth`).
    herd_key: OnceLock<String>,
}

impl Connections {
    /// Counts a client connection in or out.
    pub(crate) fn count(&self, connected: bool) {
        if connected {
            self.clients.fetch_add(1, Ordering::SeqCst);
        } else {
            self.clients.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// How many clients are connected now.
    pub(crate) fn clients(&self) -> usize {
        self.clients.load(Ordering::SeqCst)
    }

    /// Lists a parent connection until [`Connections::forget_parent`] with the number returned.
    pub(crate) fn track_parent(&self, parent: ParentConnection) -> u64 {
        let number = self.next_parent.fetch_add(1, Ordering::Relaxed);
        self.parents
            .lock()
            .expect("parents lock")
            .insert(number, parent);
        number
    }

    /// Forgets a parent connection that closed.
    pub(crate) fn forget_parent(&self, number: u64) {
        self.parents.lock().expect("parents lock").remove(&number);
    }

    /// Who drives the herd, each once: one front end holds several connections (an MCP
    /// server's calls and the watch that feeds its inbox), the same process and driver on each.
    pub(crate) fn distinct_parents(&self) -> Vec<ParentConnection> {
        let connections = self.parents.lock().expect("parents lock");
        let mut distinct: Vec<ParentConnection> = Vec::new();
        for parent in connections.values() {
            if !distinct.contains(parent) {
                distinct.push(parent.clone());
            }
        }
        distinct
    }

    /// Sets the digest of the herd's key, once, when the broker starts.
    pub(crate) fn set_herd_key_digest(&self, digest: String) {
        let _set = self.herd_key.set(digest);
    }

    /// The digest of the herd's key; `None` before it was set (then nobody is a parent).
    pub(crate) fn herd_key_digest(&self) -> Option<&str> {
        self.herd_key.get().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(pid: u32) -> ParentConnection {
        ParentConnection {
            client: Some("test".to_owned()),
            pid: Some(pid),
            driver: None,
        }
    }

    #[test]
    fn a_front_end_with_two_connections_is_one_parent_until_both_close() {
        let connections = Connections::default();
        let calls = connections.track_parent(parent(7));
        let watch = connections.track_parent(parent(7));
        let other = connections.track_parent(parent(8));
        assert_eq!(connections.distinct_parents(), vec![parent(7), parent(8)]);
        connections.forget_parent(calls);
        assert_eq!(connections.distinct_parents(), vec![parent(7), parent(8)]);
        connections.forget_parent(watch);
        connections.forget_parent(other);
        assert!(connections.distinct_parents().is_empty());
    }

    #[test]
    fn the_herd_key_is_set_once() {
        let connections = Connections::default();
        assert_eq!(connections.herd_key_digest(), None);
        connections.set_herd_key_digest("first".to_owned());
        connections.set_herd_key_digest("second".to_owned());
        assert_eq!(connections.herd_key_digest(), Some("first"));
    }
}
