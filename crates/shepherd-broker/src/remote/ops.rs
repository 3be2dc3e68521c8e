//! What the broker asks a remote host's `shepherd` to do, and what it answers.
//!
//! The broker never runs home-made code on a host: every remote step is one
//! `ssh … <shepherd> remote <op>` over the host's multiplexed connection, with one JSON request
//! on standard input and one JSON answer on standard output (a failure exits non-zero with one
//! line on standard error). The host's `shepherd` carries the step out with the same backends a
//! local broker uses, so a remote sheep runs under the same supervisor as a local one. Both
//! sides are this crate, so the two ends of every op share these types.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use shepherd_core::backend::{BackendKind, LaunchRecord, ReadSource};
use shepherd_term::LaunchSpec;

/// The op names, as passed after `shepherd remote`.
pub mod name {
    /// [`super::HelloRequest`].
    pub const HELLO: &str = "hello";
    /// [`super::LaunchRequest`].
    pub const LAUNCH: &str = "launch";
    /// [`super::ReadRequest`].
    pub const READ: &str = "read";
    /// [`super::CloseRequest`].
    pub const CLOSE: &str = "close";
    /// [`super::PresenceRequest`].
    pub const PRESENCE: &str = "presence";
    /// [`super::FilesRequest`].
    pub const FILES: &str = "files";
    /// [`super::BranchRequest`].
    pub const BRANCH: &str = "branch";
    /// [`super::AgentRequest`].
    pub const AGENT: &str = "agent";
    /// Not an op of its own: answers many ops, one [`super::ServeFrame`] a line, until its
    /// input ends (see [`super::HelloReply::serves`]).
    pub const SERVE: &str = "serve";
}

/// Every op: its name, then its request.
pub const OPS: [&str; 8] = [
    name::HELLO,
    name::LAUNCH,
    name::READ,
    name::CLOSE,
    name::PRESENCE,
    name::FILES,
    name::BRANCH,
    name::AGENT,
];

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
    /// The op's name (one of [`OPS`]).
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
