//! Code comes back: an isolated remote sheep's branch, brought home.
//!
//! `spawn --isolate --host` gives the sheep its own worktree on its own branch on the host (the
//! host's `shepherd remote branch`): a repository of its own borrowing the host checkout's
//! objects, as a local isolated sheep gets one here. When the sheep is closed the host puts
//! that repository's `.git` back to what Shepherd made, and its commits are fetched into the
//! parent's repository as the same branch, straight from that repository, over the host's link
//! (git's own SSH transport through the link's master, with the hardened runner), and the
//! report — commits, what stayed on the host and why, how to integrate or discard — goes into
//! the close's answer and the note of the sheep's last task, like a local worktree's. The
//! host's worktree is removed once its commits are safe here and nothing uncommitted is left
//! in it; otherwise it is kept there and the report says so.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::error_code::ErrorCode;
use shepherd_core::worktree::{RemoteWorktree, RemoteWorktreeReport, WorktreeReport};

use crate::error::{BrokerError, BrokerResult};
use crate::remote::link::HostLink;
use crate::remote::ops::{BranchAction, BranchReply, BranchRequest, op};
use crate::state::broker::Broker;

/// How long one git or `branch` step may take.
const STEP_DEADLINE: Duration = Duration::from_secs(120);

/// Makes the sheep's worktree on its host; returns the record to keep and its directory there.
pub(crate) async fn create(
    broker: &Arc<Broker>,
    host: &str,
    name: String,
) -> BrokerResult<(RemoteWorktree, PathBuf)> {
    let link = super::link(broker, host)?;
    let repo = link.def.project_path.clone();
    let request = BranchRequest {
        repo: repo.clone(),
        name: name.clone(),
        action: BranchAction::Create,
        base: None,
    };
    let reply = branch(&link, request).await.map_err(|why| {
        BrokerError::new(
            ErrorCode::WorktreeFailed,
            format!("the sheep's worktree on host {host} could not be made: {why}"),
        )
    })?;
    let made = RemoteWorktree {
        host: host.to_owned(),
        repo,
        branch: format!("shepherd/{name}"),
        name,
        path: reply.worktree.clone(),
        base: reply.base,
        objects: reply.objects,
    };
    Ok((made, reply.worktree))
}

async fn branch(link: &Arc<HostLink>, request: BranchRequest) -> Result<BranchReply, String> {
    let link = link.clone();
    tokio::task::spawn_blocking(move || {
        link.call::<op::Branch>(&request, Instant::now() + STEP_DEADLINE)
    })
    .await
    .map_err(|err| err.to_string())?
}

/// Brings the branch home and tidies the host: the report for the close and the note.
pub(crate) async fn release(broker: &Arc<Broker>, made: &RemoteWorktree) -> WorktreeReport {
    let link = match super::link(broker, &made.host) {
        Ok(link) => link,
        Err(err) => return kept(made, &err.message, &[], false),
    };
    if let Err(why) = link.up(Duration::from_secs(10)).await {
        return kept(
            made,
            &format!("host {} is unreachable: {why}", made.host),
            &[],
            false,
        );
    }
    let report = BranchRequest {
        repo: made.repo.clone(),
        name: made.name.clone(),
        action: BranchAction::Report,
        base: Some(made.base.clone()),
    };
    let state = match branch(&link, report).await {
        Ok(state) => state,
        Err(why) => return kept(made, &why, &[], false),
    };
    if !state.commits.is_empty() {
        let root = broker.config.address.project_root.clone();
        let (fetching, made_now) = (link.clone(), made.clone());
        let from = state
            .fetch_from
            .clone()
            .unwrap_or_else(|| made.repo.clone());
        let fetched =
            tokio::task::spawn_blocking(move || fetch_home(&fetching, &made_now, &from, &root))
                .await
                .unwrap_or_else(|err| Err(err.to_string()));
        if let Err(why) = fetched {
            return kept(
                made,
                &format!("its commits could not be brought home ({why})"),
                &state.commits,
                false,
            );
        }
    }
    if state.dirty {
        return kept(
            made,
            "uncommitted changes stay in its worktree on the host (only commits come home)",
            &state.commits,
            // Its commits were fetched above: they are here whatever stays on the host.
            !state.commits.is_empty(),
        );
    }
    let remove = BranchRequest {
        repo: made.repo.clone(),
        name: made.name.clone(),
        action: BranchAction::Remove,
        base: Some(made.base.clone()),
    };
    let removed = branch(&link, remove).await;
    WorktreeReport::Remote(RemoteWorktreeReport {
        host: made.host.clone(),
        path: made.path.display().to_string(),
        branch: made.branch.clone(),
        base: made.base.clone(),
        kept: removed.is_err(),
        reason: removed.err(),
        brought_home: !state.commits.is_empty(),
        integrate: integrate(made, !state.commits.is_empty()),
        commits: state.commits,
    })
}

/// The report of a worktree left on the host, with its commits brought home or not.
fn kept(made: &RemoteWorktree, reason: &str, commits: &[String], home: bool) -> WorktreeReport {
    let stays = format!(
        "the worktree stays on host {} at {}",
        made.host,
        made.path.display()
    );
    let integrate = if home {
        format!("{}; {stays}", integrate(made, true))
    } else {
        format!(
            "The worktree stays on host {} at {}: integrate its branch {} there, or fetch it",
            made.host,
            made.path.display(),
            made.branch
        )
    };
    WorktreeReport::Remote(RemoteWorktreeReport {
        host: made.host.clone(),
        path: made.path.display().to_string(),
        branch: made.branch.clone(),
        base: made.base.clone(),
        kept: true,
        reason: Some(reason.to_owned()),
        commits: commits.to_vec(),
        brought_home: home,
        integrate,
    })
}

fn integrate(made: &RemoteWorktree, home: bool) -> String {
    if home {
        format!(
            "Its commits are on branch {b} here: integrate with `git merge {b}` (or cherry-pick), \
             discard with `git branch -D {b}`",
            b = made.branch
        )
    } else {
        "No commits: nothing to integrate".to_owned()
    }
}

/// `git fetch` of the sheep's branch from `from` on the host (its own repository, sanitised by
/// the host's `report`; a linked worktree's checkout) into the parent's repository, over the
/// link's master connection.
fn fetch_home(
    link: &HostLink,
    made: &RemoteWorktree,
    from: &std::path::Path,
    root: &std::path::Path,
) -> Result<(), String> {
    let ssh = link
        .ssh_command_line()
        .iter()
        .map(|word| crate::remote::link::sh_quote(word))
        .collect::<Vec<_>>()
        .join(" ");
    let source = format!("{}:{}", link.def.destination, from.display());
    let refspec = format!("+refs/heads/{b}:refs/heads/{b}", b = made.branch);
    crate::git::Git::at(root)
        .env("GIT_SSH_COMMAND", ssh)
        .deadline(STEP_DEADLINE)
        .run(&["fetch", "--no-tags", "--quiet", &source, &refspec])
        .map(drop)
        .map_err(|err| format!("from host {}: {err}", link.name))
}
