//! Test support for Shepherd's own tests and benchmarks. Never installed for users.
//!
//! - [`script`]: the action language of the scripted test sheep (`shepherd-test-sheep`), a
//!   deterministic sheep that can answer, ask, sleep, settle with any status, crash, forget to
//!   call done, or ignore messages — so every broker rule can be driven without a model.
//! - [`fake_llm`]: a scripted model server speaking OpenAI chat completions and responses,
//!   Anthropic messages and Gemini (also the `shepherd-fake-llm` binary), so real coding agents
//!   run offline with every reply chosen by a test.
//! - [`pi`]: finding the pinned pi versions `scripts/setup` installs, an isolated pi environment
//!   pointed at the fake model, and process helpers for driving pi.
//! - [`agents`]: the same for Claude Code, Codex, Gemini CLI and opencode: finding the pinned
//!   installs, a hermetic per-run environment wired to the fake model and to MCP servers given
//!   for the run, headless commands and TUI launches, and reading their output.
//! - [`sshd`]: private OpenSSH servers on 127.0.0.1, each a stand-in for a remote host with
//!   its own keys, `HOME` and project directory.
//! - [`fieldnotes`]: a project's fieldnotes checked as files: seed 001's one session, its
//!   notes and the index linking them.
//! - [`git`]: git in a test's repository, with a fixed test identity.
//! - [`procs`]: processes found by their command line, environment or parent in `/proc`, for
//!   proving a herd's processes started or that none outlived a close.
//! - [`test_mcp`]: a one-tool stdio MCP server (also the `shepherd-test-mcp` binary), to give
//!   a real coding agent an MCP server for one run.

pub mod agents;
pub mod fake_herdr;
pub mod fake_llm;
pub mod fieldnotes;
pub mod git;
pub mod pi;
pub mod procs;
pub mod script;
pub mod sshd;
pub mod test_mcp;
