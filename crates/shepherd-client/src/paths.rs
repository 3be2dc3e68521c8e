//! Where one broker lives: its identity, socket, lock, journal and logs.
//!
//! There is one broker per (parent identity, canonical project root). Both are hashed into a
//! 16-hex key that names the socket and lock in the private runtime directory and the journal
//! directory under the user's state directory, so every client that computes the same pair
//! reaches the same broker, and a restarted broker finds its journal.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use shepherd_core::dirs::UserDirs;

/// Which broker: the parent it serves and the project it works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    /// The parent's opaque identity (a pi session id, `cli-…`, or a sheep's agent id).
    pub identity: String,
    /// The canonical project root.
    pub project_root: PathBuf,
    /// 16 hex of sha256(identity, root): names the socket and journal.
    pub key: String,
    /// 8 hex: the namespace minted into every id of this herd.
    pub namespace: String,
}

impl BrokerAddress {
    /// The broker for `identity` working in `project_root` (already canonical).
    pub fn new(identity: &str, project_root: &Path) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(identity.as_bytes());
        hasher.update([0]);
        hasher.update(project_root.as_os_str().as_encoded_bytes());
        let digest = hex::encode(hasher.finalize());
        Self {
            identity: identity.to_owned(),
            project_root: project_root.to_path_buf(),
            key: digest[..16].to_owned(),
            namespace: digest[..8].to_owned(),
        }
    }
}

/// The identity the CLI uses as a parent when none is given: one per user and project, so
/// separate `spawn`, `delegate` and `watch` invocations reach the same broker.
pub fn cli_parent_identity(uid: u32, project_root: &Path) -> String {
    let mut hasher = Sha256::new();
    hasher.update(uid.to_string().as_bytes());
    hasher.update([0]);
    hasher.update(project_root.as_os_str().as_encoded_bytes());
    format!("cli-{}", &hex::encode(hasher.finalize())[..16])
}

/// The files of one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerPaths {
    /// The private runtime directory (0700).
    pub runtime_dir: PathBuf,
    /// The socket (0600).
    pub socket: PathBuf,
    /// The socket for remote sheep and their supervisors, forwarded to their hosts (0600).
    pub remote_socket: PathBuf,
    /// The herd's key (0600): what the parent and observers present in their `hello`.
    pub key: PathBuf,
    /// The advisory lock held while the broker runs.
    pub lock: PathBuf,
    /// The broker's durable directory.
    pub state_dir: PathBuf,
    /// Its journal.
    pub journal: PathBuf,
    /// Its last snapshot.
    pub snapshot: PathBuf,
    /// Its log.
    pub log: PathBuf,
    /// Headless sheep output logs.
    pub sheep_logs: PathBuf,
}

impl BrokerPaths {
    /// The files of the broker at `address`.
    pub fn new(dirs: &UserDirs, address: &BrokerAddress) -> Self {
        let state_dir = dirs.state_dir.join("brokers").join(&address.key);
        Self {
            runtime_dir: dirs.runtime_dir.clone(),
            socket: dirs.runtime_dir.join(format!("b-{}.sock", address.key)),
            remote_socket: dirs.runtime_dir.join(format!("r-{}.sock", address.key)),
            key: crate::wire::herd_key_file(
                &dirs.runtime_dir.join(format!("b-{}.sock", address.key)),
            ),
            lock: dirs.runtime_dir.join(format!("b-{}.lock", address.key)),
            journal: state_dir.join("journal.jsonl"),
            snapshot: state_dir.join("snapshot.json"),
            log: state_dir.join("broker.log"),
            sheep_logs: state_dir.join("sheep"),
            state_dir,
        }
    }
}

impl BrokerPaths {
    /// A sheep's own directory, `<state>/agents/<id>`: its agent's composed configuration home,
    /// its plan or session and launch files; the one directory of Shepherd's a confined sheep
    /// may write.
    pub fn sheep_dir(&self, id: &str) -> PathBuf {
        self.state_dir.join("agents").join(id)
    }
}

/// Creates `dir` (and parents) and makes it private to the user (0700).
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::create_dir_all(dir)?;
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_pair_same_broker_other_pair_other_broker() {
        let a = BrokerAddress::new("pi-session-1", Path::new("/repo"));
        assert_eq!(a, BrokerAddress::new("pi-session-1", Path::new("/repo")));
        assert_ne!(
            a.key,
            BrokerAddress::new("pi-session-2", Path::new("/repo")).key
        );
        assert_ne!(
            a.key,
            BrokerAddress::new("pi-session-1", Path::new("/other")).key
        );
        assert_eq!(a.key.len(), 16);
        assert!(a.key.starts_with(&a.namespace));
    }

    #[test]
    fn cli_identity_is_per_user_and_project() {
        let one = cli_parent_identity(1000, Path::new("/repo"));
        assert!(one.starts_with("cli-"));
        assert_eq!(one, cli_parent_identity(1000, Path::new("/repo")));
        assert_ne!(one, cli_parent_identity(1001, Path::new("/repo")));
        assert_ne!(one, cli_parent_identity(1000, Path::new("/elsewhere")));
    }
}
