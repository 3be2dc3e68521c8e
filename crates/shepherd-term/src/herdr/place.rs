//! Where a sheep's Herdr pane goes, and making it there without taking focus.
//!
//! Every placement makes the pane with `layout.apply`, whose one-pane layout starts the
//! supervisor as the pane's program (see [`super::command`]):
//! - **tab**: a new tab in the caller's workspace (else the environment's, the focused one or
//!   the first); with no workspace at all, a new workspace whose first tab is the sheep's.
//! - **pane right / down**: a new tab in the caller's workspace, whose pane is then moved
//!   beside the caller's pane (`pane.move` within a workspace keeps the pane id; the emptied
//!   tab closes by itself). Herdr cannot split with a program: `pane.split` only makes shells.
//! - **workspace**: `workspace.create` (whose root pane is a fresh shell), then that first tab
//!   replaced by the sheep's.
//!
//! The caller's pane is `HERDR_PANE_ID`, or found through the caller's process ancestry when a
//! wrapper stripped it. The pane's terminal id, its identity from then on, comes from
//! `pane.get` (`layout.apply` does not report it).

use std::time::Instant;

use super::api::{AppliedPane, CommandPane, NewPane, TabSlot};
use super::backend::HerdrBackend;
use super::error::HerdrError;
use super::wire::PaneInfo;
use crate::{LaunchSpec, Placement, TermError};

impl HerdrBackend {
    /// Makes the sheep's pane for `spec`, running `pane`'s program; returns it as Herdr now
    /// lists it.
    pub(crate) fn place(
        &self,
        spec: &LaunchSpec,
        pane: &CommandPane<'_>,
        deadline: Instant,
    ) -> Result<PaneInfo, TermError> {
        let direction = match spec.placement {
            Placement::Tab => {
                let applied = match self.tab_workspace(spec, deadline)? {
                    Some(workspace) => self.client().layout_apply_command(
                        TabSlot::NewIn(&workspace),
                        pane.label,
                        pane,
                        Some(deadline),
                    ),
                    None => self.in_new_workspace(pane, deadline),
                };
                return self.identify(&applied.map_err(launch_error)?, deadline);
            }
            Placement::Workspace => {
                let applied = self
                    .in_new_workspace(pane, deadline)
                    .map_err(launch_error)?;
                return self.identify(&applied, deadline);
            }
            Placement::PaneRight => "right",
            Placement::PaneDown => "down",
        };
        let caller = self.caller_pane(spec, deadline)?;
        let applied = self
            .client()
            .layout_apply_command(
                TabSlot::NewIn(&caller.workspace_id),
                pane.label,
                pane,
                Some(deadline),
            )
            .map_err(launch_error)?;
        let moved = self.client().pane_move_beside(
            &applied.pane_id,
            &caller.tab_id,
            &caller.pane_id,
            direction,
            Some(deadline),
        );
        match moved {
            Ok(pane) if !pane.terminal_id.is_empty() => Ok(pane),
            Ok(pane) => self.identify(
                &AppliedPane {
                    pane_id: pane.pane_id,
                    tab_id: pane.tab_id,
                    workspace_id: pane.workspace_id,
                },
                deadline,
            ),
            Err(err) => {
                self.discard(&applied.pane_id);
                Err(launch_error(err))
            }
        }
    }

    /// A new workspace labelled after the sheep, whose first tab runs `pane`.
    fn in_new_workspace(
        &self,
        pane: &CommandPane<'_>,
        deadline: Instant,
    ) -> Result<AppliedPane, HerdrError> {
        let shell = NewPane {
            cwd: pane.cwd,
            label: Some(pane.label),
            env: &[],
        };
        let root = self.client().workspace_create(&shell, Some(deadline))?;
        self.client().layout_apply_command(
            TabSlot::Replacing(&root.tab_id),
            pane.label,
            pane,
            Some(deadline),
        )
    }

    /// The pane `layout.apply` made, with its terminal id (none when it is already gone).
    fn identify(&self, applied: &AppliedPane, deadline: Instant) -> Result<PaneInfo, TermError> {
        match self.client().pane_get(&applied.pane_id, Some(deadline)) {
            Ok(pane) if !pane.terminal_id.is_empty() => Ok(pane),
            Ok(_) => {
                self.discard(&applied.pane_id);
                Err(TermError::Launch(format!(
                    "Herdr reports no terminal id for pane {}, so Shepherd could never prove \
                     the pane is the sheep's; this Herdr is not supported",
                    applied.pane_id
                )))
            }
            // Its program already ended (the supervisor reports why). Without a terminal id
            // the record can never be taken for another pane: it only ever counts as gone.
            Err(err) if err.is_pane_gone() => Ok(PaneInfo {
                pane_id: applied.pane_id.clone(),
                tab_id: applied.tab_id.clone(),
                workspace_id: applied.workspace_id.clone(),
                ..PaneInfo::default()
            }),
            Err(err) => {
                self.discard(&applied.pane_id);
                Err(launch_error(err))
            }
        }
    }

    /// The caller's pane for a split: `HERDR_PANE_ID`, else the pane whose process is the
    /// caller's nearest ancestor.
    fn caller_pane(&self, spec: &LaunchSpec, deadline: Instant) -> Result<PaneInfo, TermError> {
        let named = match (&spec.caller_pane, spec.caller_pid) {
            (Some(pane), _) => Some(pane.clone()),
            (None, Some(pid)) => self.pane_of_process(pid).map_err(launch_error)?,
            (None, None) => None,
        };
        let Some(caller) = named else {
            return Err(TermError::NoCallerPane(format!(
                "placement {} splits the caller's Herdr pane, but the caller is not in a Herdr \
                 pane (no HERDR_PANE_ID, and no pane found among its parent processes); use \
                 placement tab",
                spec.placement.as_str()
            )));
        };
        self.client()
            .pane_get(&caller, Some(deadline))
            .map_err(|err| {
                if err.is_pane_gone() {
                    TermError::NoCallerPane(format!(
                        "the caller's Herdr pane {caller} does not exist; use placement tab"
                    ))
                } else {
                    launch_error(err)
                }
            })
    }

    /// The workspace a new tab goes to: the caller's, the environment's, the focused one,
    /// the first one, or `None` when there is none.
    fn tab_workspace(
        &self,
        spec: &LaunchSpec,
        deadline: Instant,
    ) -> Result<Option<String>, TermError> {
        if let Some(caller) = spec.caller_pane.as_deref() {
            match self.client().pane_get(caller, Some(deadline)) {
                Ok(pane) if !pane.workspace_id.is_empty() => return Ok(Some(pane.workspace_id)),
                Ok(_) => {}
                Err(err) if err.is_pane_gone() => {}
                Err(err) => return Err(launch_error(err)),
            }
        }
        let workspaces = self
            .client()
            .workspace_list(Some(deadline))
            .map_err(launch_error)?;
        if let Some(hint) = self.workspace_hint()
            && workspaces.iter().any(|ws| ws.workspace_id == hint)
        {
            return Ok(Some(hint.to_owned()));
        }
        Ok(workspaces
            .iter()
            .find(|ws| ws.focused)
            .or_else(|| workspaces.first())
            .map(|ws| ws.workspace_id.clone()))
    }

    /// Closes a pane a failed launch made, so nothing half-made is left behind.
    pub(crate) fn discard(&self, pane_id: &str) {
        let cleanup = Instant::now() + super::backend::CLEANUP_TIMEOUT;
        if let Err(err) = self.client().pane_close(pane_id, Some(cleanup))
            && !err.is_pane_gone()
        {
            tracing::warn!("could not close Herdr pane {pane_id} after a failed launch: {err}");
        }
    }
}

/// A failure while placing: no server means the backend is unavailable.
pub(crate) fn launch_error(err: HerdrError) -> TermError {
    match err {
        HerdrError::Unreachable { .. } | HerdrError::ProtocolTooOld { .. } => {
            TermError::Unavailable(err.to_string())
        }
        other => TermError::Launch(other.to_string()),
    }
}
