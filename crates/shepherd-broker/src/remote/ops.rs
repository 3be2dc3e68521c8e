//! What the broker asks a remote host's `shepherd` to do, and what it answers.
//!
//! The broker never runs home-made code on a host: every remote step is one
//! `ssh … <shepherd> remote <op>` over the host's multiplexed connection, with one JSON request
//! on standard input and one JSON answer on standard output (a failure exits non-zero with one
//! line on standard error). The host's `shepherd` carries the step out with the same backends a
//! local broker uses, so a remote sheep runs under the same supervisor as a local one. Both
//! sides are this crate, so the two ends of every op share these types.
//!
//! The ops are declared once, in the `host_ops!` table: each one's name, request and answer.
//! It makes the [`HostOp`] enum, the [`op`] markers the broker calls with (its request and
//! answer typed by the line), and the [`HostOps`] the host implements (one method per op, held
//! to its line), with [`answer`], the one place a host decodes a request and encodes its answer.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shepherd_core::backend::{BackendKind, LaunchRecord, ReadSource};
use shepherd_term::LaunchSpec;

/// One op with its request and answer types, for the broker's side of a call.
pub trait Op {
    /// The op.
    const OP: HostOp;
    /// What the broker sends.
    type Request: Serialize + DeserializeOwned;
    /// What the host answers.
    type Reply: Serialize + DeserializeOwned;
}

/// Why an op failed on the host, in one line for the broker to show.
#[derive(Debug, thiserror::Error)]
pub enum HostOpError {
    /// Not an op this `shepherd` knows.
    #[error("unknown remote op `{0}`; this shepherd knows {known}", known = HostOp::names().join(", "))]
    UnknownOp(String),
    /// The request does not parse.
    #[error("the `{op}` request does not parse: {source}")]
    Request {
        /// The op.
        op: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The op itself failed.
    #[error("{0}")]
    Failed(String),
}

/// Not an op of its own, but the name `shepherd remote` answers many ops under, one
/// [`ServeFrame`] a line, until its input ends (see [`HelloReply::serves`]).
pub const SERVE: &str = "serve";

macro_rules! host_ops {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident / $handler:ident = $name:literal, $request:ty => $reply:ty;
    )*) => {
        /// Every op a host's `shepherd` carries out.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum HostOp {
            $($(#[doc = $doc])* $variant,)*
        }

        impl HostOp {
            /// Every op, in table order.
            pub const ALL: &[HostOp] = &[$(HostOp::$variant,)*];

            /// The name passed after `shepherd remote` (and in a [`ServeFrame`]).
            pub fn name(self) -> &'static str {
                match self {
                    $(HostOp::$variant => $name,)*
                }
            }

            /// The op `name` names, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(HostOp::$variant),)*
                    _ => None,
                }
            }

            /// Every op's name, in table order.
            pub fn names() -> Vec<&'static str> {
                Self::ALL.iter().map(|op| op.name()).collect()
            }
        }

        /// One marker type per op, naming its [`Op`]: `link.call::<op::Files>(&request, …)`.
        pub mod op {
            $($(#[doc = $doc])* #[derive(Debug, Clone, Copy)] pub struct $variant;)*
        }

        $(impl Op for op::$variant {
            const OP: HostOp = HostOp::$variant;
            type Request = $request;
            type Reply = $reply;
        })*

        /// The host's side: one method per op, taking its request and answering its reply.
        /// [`answer`] decodes a request for its method and encodes the answer.
        pub trait HostOps {
            $(
                $(#[doc = $doc])*
                fn $handler(&self, request: $request) -> Result<$reply, HostOpError>;
            )*
        }

        /// Carries out `op` on `host` with `input` (its JSON request) and returns its JSON
        /// answer.
        pub fn answer<H: HostOps>(host: &H, op: HostOp, input: &str) -> Result<String, HostOpError> {
            match op {
                $(HostOp::$variant => {
                    let request: $request = serde_json::from_str(input).map_err(|source| {
                        HostOpError::Request { op: $name.to_owned(), source }
                    })?;
                    let reply: $reply = host.$handler(request)?;
                    Ok(serde_json::to_value(reply).expect("answers serialise").to_string())
                })*
            }
        }
    };
}

host_ops! {
    /// What the host has, and where the broker's socket is forwarded.
    Hello / hello = "hello", HelloRequest => HelloReply;
    /// Place a supervisor with the host's backend.
    Launch / launch = "launch", LaunchRequest => LaunchRecord;
    /// What a remote sheep shows.
    Read / read = "read", ReadRequest => String;
    /// Make sure a remote sheep is gone.
    Close / close = "close", CloseRequest => CloseReply;
    /// Whether a remote sheep's processes or pane still exist.
    Presence / presence = "presence", PresenceRequest => PresenceReply;
    /// Write files on the host, then read the ones that changed.
    Files / files = "files", FilesRequest => FilesReply;
    /// Make or inspect an isolated remote sheep's own branch and worktree.
    Branch / branch = "branch", BranchRequest => BranchReply;
    /// Compose another coding agent's sheep on the host.
    Agent / agent = "agent", AgentRequest => AgentReply;
}

/// `hello`: what the host has, and the private path the broker's socket is forwarded to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloRequest {
    /// Names the forwarded socket (unique per broker and host).
    pub link_name: String,
    /// The project's path on the host.
    pub project_path: PathBuf,
    /// Programs whose presence on the host's PATH the broker wants to know.
    #[serde(default)]
    pub programs: Vec<String>,
}

/// The host's answer to `hello`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloReply {
    /// The host's `shepherd` version.
    pub version: String,
    /// The broker protocol it speaks.
    pub protocol: u32,
    /// The host's `shepherd` executable.
    pub exe: PathBuf,
    /// Where the broker's socket is to be forwarded (in a private directory, any stale socket
    /// of an earlier link removed).
    pub link_socket: PathBuf,
    /// The host's private runtime directory.
    pub runtime_dir: PathBuf,
    /// The host's state directory for this link (sheep output logs).
    pub state_dir: PathBuf,
    /// Whether the project path is a directory.
    pub project_exists: bool,
    /// Which backends can run there.
    pub backends: BTreeMap<String, bool>,
    /// Which of the asked programs are on the host's PATH.
    pub programs: BTreeMap<String, bool>,
    /// Whether the host's `shepherd` answers ops over one long session (`remote serve`); a
    /// host that does not say so gets one SSH session per op.
    #[serde(default)]
    pub serves: bool,
}

/// One op over a `remote serve` session: a line of JSON on its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeFrame {
    /// The op's name (one of [`HostOp::ALL`]'s).
    pub op: String,
    /// Its request, as the op alone would read it.
    pub request: serde_json::Value,
}

/// The answer to one [`ServeFrame`]: a line of JSON on the session's standard output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ServeAnswer {
    /// The op's answer, as the op alone would print it.
    Ok(serde_json::Value),
    /// Why it failed, in one line (what the op alone would say on standard error).
    Error(String),
}

/// `launch`: place a supervisor with the host's backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchRequest {
    /// The backend on the host.
    pub backend: BackendKind,
    /// The launch, with the host's paths already in it.
    pub spec: LaunchSpec,
    /// The supervisor's credential: written to a private file on the host that the
    /// supervisor reads and deletes, never into its command line.
    pub credential: String,
    /// Who owns the pane on the host (the broker's link): only its owner may close it.
    pub owner: String,
}

/// `read`: what a remote sheep shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadRequest {
    /// The backend on the host.
    pub backend: BackendKind,
    /// Where it runs there.
    pub record: LaunchRecord,
    /// What to read.
    pub source: ReadSource,
    /// How many lines.
    pub lines: u32,
}

/// `close`: make sure a remote sheep is gone.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseRequest {
    /// The backend on the host.
    pub backend: BackendKind,
    /// Where it runs there.
    pub record: LaunchRecord,
    /// Keep its pane.
    pub keep_pane: bool,
    /// Who asks: the pane is closed only when this owner made it.
    pub owner: String,
    /// How long the host may take to confirm.
    pub deadline_ms: u64,
}

/// The answer to `close`: nothing but that it is done (`{}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseReply {}

/// `presence`: whether a remote sheep's processes or pane still exist.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceRequest {
    /// The backend on the host.
    pub backend: BackendKind,
    /// Where it runs there.
    pub record: LaunchRecord,
}

/// The answer to `presence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PresenceReply {
    /// Still there.
    Present,
    /// Confirmed gone.
    Gone,
    /// Could not be told.
    Unknown,
}

/// `files`: write files on the host (atomically, directories made), then read files that
/// changed since a given modification time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesRequest {
    /// The directory the files are in (the host's project, or the link's state directory):
    /// below it no symbolic link is followed, and a path outside it is refused.
    pub within: PathBuf,
    /// Files to write.
    #[serde(default)]
    pub write: Vec<FileContent>,
    /// Files to read.
    #[serde(default)]
    pub read: Vec<FileProbe>,
}

/// One file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// Its absolute path on the host.
    pub path: PathBuf,
    /// Its text.
    pub content: String,
    /// Leave a file that already exists there as it is (a sheep's own new note, which the
    /// sheep may have begun writing before its first copy arrives).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_existing: bool,
}

/// One file to read, unless unchanged.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileProbe {
    /// Its absolute path on the host.
    pub path: PathBuf,
    /// Its modification time (ns since the epoch) when last read: an unchanged file is not
    /// sent again.
    #[serde(default)]
    pub since: Option<i128>,
}

/// The answer to `files`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesReply {
    /// The files read, in request order; a missing file is left out.
    pub read: Vec<FileRead>,
}

/// One file read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRead {
    /// Its path.
    pub path: PathBuf,
    /// Its modification time (ns since the epoch).
    pub modified: i128,
    /// Its text, when it changed since the time asked about.
    pub content: Option<String>,
}

/// `branch`: make (or inspect) an isolated remote sheep's own branch and worktree, a
/// repository of its own borrowing the host checkout's objects.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchRequest {
    /// The host's checkout.
    pub repo: PathBuf,
    /// The branch (and worktree directory) name.
    pub name: String,
    /// What to do.
    pub action: BranchAction,
    /// The commit the branch started from, as the broker recorded it (absent from an older
    /// broker: the host's record of a worktree of the older layout is read instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// What `branch` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchAction {
    /// Make the worktree on its own branch from the checkout's `HEAD`.
    Create,
    /// Say where it stands.
    Report,
    /// Remove the worktree and its branch (once its commits are safe elsewhere).
    Remove,
}

/// The answer to `branch`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchReply {
    /// The worktree's directory on the host.
    pub worktree: PathBuf,
    /// The commit the branch started from.
    pub base: String,
    /// The branch's head now.
    pub head: String,
    /// Commits on the branch since `base`, `<short hash> <subject>`, oldest first.
    pub commits: Vec<String>,
    /// Whether the worktree has uncommitted changes.
    pub dirty: bool,
    /// The checkout's object directories the worktree borrows (absent: a worktree of the
    /// older, linked layout, or an older host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<PathBuf>,
    /// The repository its branch is fetched from: the worktree itself, once sanitised
    /// (absent: the checkout, which holds a linked worktree's branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_from: Option<PathBuf>,
}

/// `agent`: compose another coding agent's sheep on the host — its program found there, its
/// configuration made from the host user's own, its plan written there — and answer with the
/// driver's command line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRequest {
    /// The plan with the host's paths (its program is looked up on the host).
    pub plan: shepherd_harness::Plan,
}

/// The answer to `agent`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentReply {
    /// The driver's command line on the host.
    pub argv: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_name_is_read_back_as_its_op() {
        for &op in HostOp::ALL {
            assert_eq!(HostOp::from_name(op.name()), Some(op));
        }
        assert_eq!(HostOp::from_name(SERVE), None);
        assert_eq!(
            HostOp::names(),
            [
                "hello", "launch", "read", "close", "presence", "files", "branch", "agent"
            ]
        );
    }

    #[test]
    fn close_answers_an_empty_object() {
        let answer = serde_json::to_string(&CloseReply {}).expect("serialises");
        assert_eq!(answer, "{}");
    }
}
