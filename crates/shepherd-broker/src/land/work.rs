//! What a step works with, shared by the step (`step`) and the check that gates it (`gate`):
//! the merge's context, what a step leaves the queue to do, and remaking what a resolver or a
//! fixer left into a landing the strategy's rule can verify.

use std::path::PathBuf;
use std::sync::Arc;

use shepherd_core::herd::{MergeCandidate, MergePlan};
use shepherd_core::land::message::{Landing, message};
use shepherd_core::land::{BranchLanding, BranchState, Strategy};
use tokio_util::sync::CancellationToken;

use super::git::{self, MergeWorktree};
use super::verify;
use crate::state::broker::Broker;

/// What a step works with.
pub(super) struct Ctx {
    pub(super) broker: Arc<Broker>,
    pub(super) merge_id: String,
    pub(super) plan: Arc<MergePlan>,
    pub(super) repo: PathBuf,
    pub(super) worktree: Arc<MergeWorktree>,
    pub(super) cancel: CancellationToken,
    /// What every process of its check carries ([`super::check::MARK`]).
    pub(super) mark: String,
    /// Set when a resolver or fixer could not be closed: its sheep may still be at work in the
    /// merge worktree, so no git of Shepherd's runs there again.
    pub(super) tainted: std::sync::atomic::AtomicBool,
}

/// What a step leaves the queue to do.
pub(super) enum Next {
    /// It landed: the target is at this commit now.
    Landed(String),
    /// It did not land (or landed before); the queue goes on.
    Go,
    /// It did not land; the queue stops, and says why for the branches after it.
    Stop(String),
    /// The merge was cancelled during it.
    Cancelled,
}

/// Runs blocking git work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

impl Ctx {
    /// Records where a branch stands (journaled) and shows it to the merge's followers.
    pub(super) fn keep(&self, index: usize, landing: &BranchLanding) {
        let landing = landing.clone();
        self.broker.store.commit(|tx| {
            shepherd_core::herd::merge::merge_branch(tx, &self.merge_id, index, landing);
        });
        self.show(index, None);
    }

    /// Shows a branch's live state (not journaled: a step in progress is redone after a
    /// restart) to the merge's followers.
    pub(super) fn show(&self, index: usize, live: Option<&BranchLanding>) {
        super::publish_branch(&self.broker, &self.merge_id, index, live);
    }

    pub(super) fn candidate(&self, index: usize) -> &MergeCandidate {
        &self.plan.candidates[index]
    }

    pub(super) async fn reset(&self, tip: &str) {
        if self.tainted.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let (worktree, tip) = (self.worktree.clone(), tip.to_owned());
        blocking(move || {
            if let Err(err) = worktree.reset(&tip) {
                tracing::warn!("resetting the merge worktree: {err}");
            }
        })
        .await;
    }

    /// The message of a landing of candidate `index`.
    pub(super) fn message(
        &self,
        index: usize,
        resolver: Option<&str>,
        fixers: &[String],
    ) -> String {
        let c = self.candidate(index);
        message(&Landing {
            branch: &c.branch,
            owner: c.owner.as_deref(),
            task: c.task.as_deref(),
            note: c.note.as_deref(),
            resolver,
            fixers,
        })
    }
}

/// Ends a step with `state` and `why`.
pub(super) fn ended(landing: &mut BranchLanding, state: BranchState, why: impl Into<String>) {
    landing.state = state;
    landing.why = Some(why.into());
}

/// Brings `head` (what a resolver or fixer left) home and verifies it is a merge of `commit`
/// onto `tip` — or, for a fixer (`on_top`), a commit built on the verified merge — then makes
/// Shepherd's own merge commit of its tree with `message` and checks it out. `Err` says what
/// was found instead.
pub(super) async fn remake(
    ctx: &Ctx,
    tip: &str,
    commit: &str,
    head: &str,
    message: String,
    who: &'static str,
    on_top: bool,
) -> Result<String, String> {
    let (worktree, repo) = (ctx.worktree.clone(), ctx.repo.clone());
    let (tip, commit, head) = (tip.to_owned(), commit.to_owned(), head.to_owned());
    blocking(move || -> Result<String, String> {
        let home = worktree.bring_home().map_err(|e| e.to_string())?;
        let tree = if on_top {
            // The fixer's work, whatever it committed: everything in its working tree.
            if !verify::is_ancestor(&repo, &head, &home) {
                return Err(format!(
                    "the {who}'s HEAD {} no longer holds the merge {}",
                    git::short(&home),
                    git::short(&head)
                ));
            }
            worktree.tree_of_work().map_err(|e| e.to_string())?
        } else {
            verify::landing(&repo, Strategy::Merge, &tip, &commit, &home, None).map_err(
                |found| {
                    format!(
                        "the {who}'s result is not a landing of {commit:.10} on {tip:.10}: {found}"
                    )
                },
            )?;
            git::git(&repo, &["rev-parse", &format!("{home}^{{tree}}")])
                .map_err(|e| e.to_string())?
        };
        let made = worktree
            .commit_tree(&tree, &[&tip, &commit], &message)
            .map_err(|e| e.to_string())?;
        worktree.set_head(&made).map_err(|e| e.to_string())?;
        Ok(made)
    })
    .await
    .unwrap_or_else(|| Err("the step was interrupted".to_owned()))
}
