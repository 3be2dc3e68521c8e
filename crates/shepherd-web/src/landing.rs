//! The merge queue from the page: a branch's preview with its patch, landing it (with the check
//! the person gives), discarding it, and cancelling a landing under way, each one request to the
//! broker as the herd's parent, the same methods `shepherd merge` calls. A landing is followed
//! here until it is over, so the branch's page shows each step and then the verified result
//! without a reload; the broker keeps the merge itself (a restarted server finds the outcome in
//! the herd view's `landed`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use shepherd_client::CliError;
use shepherd_client::connect::{Target, deadline_after, parent};
use shepherd_client::land_words::merge_text;
use shepherd_client::wire::{Link, Push};
use shepherd_core::land::preview::MergePreview;
use shepherd_core::land::{MergeIdParams, MergeParams, MergeView};
use shepherd_core::protocol::calls;
use tokio::sync::watch;

/// How long a discard may take: it only deletes refs, and the page waits for its answer.
const DISCARD_WAIT: Duration = Duration::from_secs(60);

/// The landings started from this server, by branch, as last seen; and the check last given,
/// which the next landing's form offers.
#[derive(Debug)]
pub(crate) struct Landings {
    merges: Mutex<BTreeMap<String, MergeView>>,
    last_check: Mutex<Option<String>>,
    /// Bumped at each change, so a branch's open page renders again.
    changed: watch::Sender<u64>,
}

impl Landings {
    pub(crate) fn new() -> Self {
        Self {
            merges: Mutex::new(BTreeMap::new()),
            last_check: Mutex::new(None),
            changed: watch::channel(0).0,
        }
    }

    /// The landing of `branch` started here, as last seen.
    pub(crate) fn of(&self, branch: &str) -> Option<MergeView> {
        self.merges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(branch)
            .cloned()
    }

    /// The check the last landing from here ran.
    pub(crate) fn last_check(&self) -> Option<String> {
        self.last_check
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A receiver told of every change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn set(&self, branch: &str, view: MergeView) {
        self.merges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(branch.to_owned(), view);
        self.changed.send_modify(|n| *n += 1);
    }
}

/// What a merge of `branch` would do, with its patch.
pub(crate) async fn preview(target: &Target, branch: &str) -> Result<MergePreview, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    let params = MergeParams {
        targets: vec![branch.to_owned()],
        patch: true,
        ..MergeParams::default()
    };
    Ok(link
        .send::<calls::MergePreview>(&params, deadline_after(Duration::ZERO)?)
        .await?)
}

/// Starts landing `branch` (gated by `check` when given) and follows it in the background; the
/// line saying it started.
pub(crate) async fn land(
    target: &Target,
    landings: &Arc<Landings>,
    branch: &str,
    check: Option<String>,
) -> Result<String, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    let params = MergeParams {
        targets: vec![branch.to_owned()],
        check: check.clone(),
        ..MergeParams::default()
    };
    let view = link
        .send::<calls::MergeSubmit>(&params, deadline_after(Duration::ZERO)?)
        .await?;
    *landings
        .last_check
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = check;
    let said = format!(
        "{} started: landing {branch} into {}",
        view.merge_id, view.target
    );
    landings.set(branch, view.clone());
    let (landings, branch) = (landings.clone(), branch.to_owned());
    tokio::spawn(async move {
        let mut view = view;
        while !view.finished {
            match next_view(&mut link, &view).await {
                Ok(next) => {
                    view = next;
                    landings.set(&branch, view.clone());
                }
                // The broker keeps the merge; the branch's page reads its end from the herd.
                Err(_) => return,
            }
        }
    });
    Ok(said)
}

/// Throws `branch` away (its branch and preserved changes); the merge's own words for it. The
/// branch's page then shows the discard, done.
pub(crate) async fn discard(
    target: &Target,
    landings: &Arc<Landings>,
    branch: &str,
) -> Result<String, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    let params = MergeParams {
        targets: vec![branch.to_owned()],
        discard: true,
        ..MergeParams::default()
    };
    let mut view = link
        .send::<calls::MergeSubmit>(&params, deadline_after(Duration::ZERO)?)
        .await?;
    let until = tokio::time::Instant::now() + DISCARD_WAIT;
    while !view.finished {
        view = tokio::time::timeout_at(until, next_view(&mut link, &view))
            .await
            .map_err(|_| {
                CliError::new(
                    shepherd_core::error_code::ErrorCode::Timeout,
                    format!("{} is still discarding {branch}", view.merge_id),
                )
            })??;
    }
    let said = last_line(&merge_text(&view));
    landings.set(branch, view);
    Ok(said)
}

/// Cancels merge `merge_id`: the target stays at its last verified landing.
pub(crate) async fn cancel(
    target: &Target,
    landings: &Arc<Landings>,
    merge_id: &str,
) -> Result<String, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    let params = MergeIdParams {
        merge_id: merge_id.to_owned(),
    };
    let view = link
        .send::<calls::MergeCancel>(&params, deadline_after(Duration::ZERO)?)
        .await?;
    for branch in &view.branches {
        if landings
            .of(&branch.branch)
            .is_some_and(|m| m.merge_id == view.merge_id)
        {
            landings.set(&branch.branch, view.clone());
        }
    }
    Ok(format!(
        "cancelled {merge_id}: {} stays at its last verified landing",
        view.target
    ))
}

/// The merge's next view: after a reconnect, the broker's answer to `merge.attach` (a push may
/// have been missed); otherwise the next view of it pushed on this connection.
async fn next_view(link: &mut Link, view: &MergeView) -> Result<MergeView, CliError> {
    let following = link.generation();
    loop {
        if link.generation() != following || !link.is_connected() {
            let params = MergeIdParams {
                merge_id: view.merge_id.clone(),
            };
            return Ok(link
                .send::<calls::MergeAttach>(&params, deadline_after(Duration::ZERO)?)
                .await?);
        }
        match link.next_event().await {
            Ok(Push::Merge(pushed)) if pushed.merge_id == view.merge_id => return Ok(*pushed),
            Ok(_) => {}
            Err(err) if err.is_lost() => {}
            Err(err) => return Err(err.into()),
        }
    }
}

/// The merge's words' last line: what it did overall.
fn last_line(text: &str) -> String {
    text.lines().last().unwrap_or_default().to_owned()
}
