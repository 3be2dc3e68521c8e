//! The sheep runtime: what several handlers share about a sheep's program, where it runs and
//! what it leaves behind.
//!
//! Its program: `pi_launch` (a pi sheep's command line and the embedded sheep extension),
//! `pi_home` (a confined pi sheep's own agent directory),
//! `harness` (the seam where pi, the other coding agents and plain commands differ),
//! `controls` (budgets and the stall watchdog, refused where the harness cannot honour them)
//! and `provider_limits` (the provider key a new sheep spends, what the error ending its run
//! means). Where it runs: `launch_record` (its journaled launch record), `supervisor_link`
//! (the push line to its supervisor), `herdr_link` (Herdr joined on first use), `worktree`
//! (a repository of its own per isolated sheep, and what of git a sandbox holds) and
//! `isolation` (its own worktree), `sandbox` (what a confined sheep may see and reach),
//! `limits` (the resources it may use) and `remote_sheep` (a sheep on a host: the link,
//! its backend, notes, code and pi). What it leaves: `pi` and `telemetry` (a pi run's last
//! words and cost), `notes` (a settled task's note as the herd sees it), `printed`,
//! `live_usage` and `transcript` (what the herd view and `read` show of it).
//!
//! It may call the state layer and what sits below it (`error`, `paths`, `fieldnotes`,
//! `remote`), never the handlers, runs, the wire or start-up: a handler calls it, not the
//! other way round.

pub(crate) mod controls;
pub(crate) mod credential;
pub(crate) mod harness;
pub(crate) mod herdr_link;
pub(crate) mod isolation;
pub(crate) mod launch_record;
pub(crate) mod limits;
pub(crate) mod live_usage;
pub(crate) mod notes;
pub(crate) mod pi;
pub(crate) mod pi_home;
pub(crate) mod pi_launch;
pub(crate) mod printed;
pub(crate) mod provider_limits;
pub(crate) mod remote_sheep;
pub(crate) mod sandbox;
pub(crate) mod supervisor_link;
pub(crate) mod telemetry;
pub(crate) mod transcript;
pub(crate) mod worktree;
