//! A merge in words, the same at every front end (the CLI, MCP, and pi through its own copy):
//! each branch on a line with where it stands — merged at which commit, the conflicting files
//! and hunks, the resolver and its note, the end of a failing check — then how many landed.

use shepherd_core::land::{BranchState, MergeView};

/// Each branch on a line, then what the queue did overall.
pub fn merge_text(view: &MergeView) -> String {
    let mut out = format!("Landing into {}", view.target);
    if let Some(check) = &view.check {
        out.push_str(&format!(" (check: {check})"));
    }
    out.push('\n');
    for branch in &view.branches {
        let owner = branch
            .owner
            .as_ref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default();
        let state = match (branch.state, &branch.commit) {
            (BranchState::Merged, Some(commit)) => {
                format!("merged at {}", &commit[..commit.len().min(10)])
            }
            (state, _) => state.words().to_owned(),
        };
        out.push_str(&format!("- {}{owner}: {state}", branch.branch));
        if let Some(why) = &branch.why {
            out.push_str(&format!(" — {why}"));
        }
        out.push('\n');
        if let Some(conflict) = &branch.conflict
            && branch.state == BranchState::Conflict
        {
            out.push_str(&format!(
                "  conflicting files: {}\n",
                conflict.files.join(", ")
            ));
            for line in conflict.hunks.lines().take(40) {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if let Some(resolver) = &branch.resolver {
            out.push_str(&format!(
                "  resolver {}: {}{}\n",
                resolver.agent_id,
                resolver.status.as_deref().unwrap_or("did not settle"),
                resolver
                    .note
                    .as_ref()
                    .map(|n| format!(" (note {n})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(output) = &branch.check_output {
            for line in output
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                out.push_str(&format!("  | {line}\n"));
            }
        }
    }
    let landed = view
        .branches
        .iter()
        .filter(|b| b.state == BranchState::Merged)
        .count();
    out.push_str(&format!(
        "{landed} of {} landed into {}",
        view.branches.len(),
        view.target
    ));
    out
}
