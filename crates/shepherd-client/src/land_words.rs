//! A merge in words, the same at every front end (the CLI, MCP, and pi through its own copy):
//! each branch on a line with where it stands — merged at which commit, already landed, the
//! conflicting files and hunks, the resolver and fixers and their notes, how a failing check
//! ended and the end of what it printed — then what the queue did overall. A dry run
//! (`preview_text`) lists the branches in order with their commits, diffstat and conflicts.

use shepherd_core::land::preview::MergePreview;
use shepherd_core::land::{BranchLanding, BranchState, MergeView, ResolverView, Strategy};

/// The lines of a check's output a report shows.
const CHECK_LINES: usize = 15;

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// Where a branch stands, in words (`merged at 3f0c2a91d4`, `check failed (exit 3)`).
pub fn state_words(branch: &BranchLanding) -> String {
    match (branch.state, &branch.commit, &branch.check_status) {
        (BranchState::Merged, Some(commit), _) => format!("merged at {}", short(commit)),
        (BranchState::CheckFailed, _, Some(status)) => format!("check failed ({status})"),
        (state, _, _) => state.words().to_owned(),
    }
}

fn sheep_line(out: &mut String, role: &str, sheep: &ResolverView) {
    let who = sheep.display_name.as_deref().unwrap_or(&sheep.agent_id);
    out.push_str(&format!(
        "  {role} {who} ({}): {}{}\n",
        sheep.agent_id,
        sheep.status.as_deref().unwrap_or("did not settle"),
        sheep
            .note
            .as_ref()
            .map(|n| format!(" (note {n})"))
            .unwrap_or_default()
    ));
}

/// Each branch on a line, then what the queue did overall.
pub fn merge_text(view: &MergeView) -> String {
    let mut out = if view.discard {
        "Discarding".to_owned()
    } else {
        format!("Landing into {}", view.target)
    };
    if view.strategy != Strategy::Merge && !view.discard {
        out.push_str(&format!(" (strategy: {})", view.strategy));
    }
    if let Some(check) = &view.check {
        out.push_str(&format!(" (check: {check})"));
    }
    out.push('\n');
    if let Some(waiting) = view.waiting_for.as_ref().filter(|_| !view.finished) {
        out.push_str(&format!(
            "waiting for {waiting}, which lands into {} first\n",
            view.target
        ));
    }
    for branch in &view.branches {
        let owner = branch
            .owner
            .as_ref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default();
        let task = branch
            .task_status
            .as_ref()
            .map(|s| format!(" [task {s}]"))
            .unwrap_or_default();
        out.push_str(&format!(
            "- {}{owner}{task}: {}",
            branch.branch,
            state_words(branch)
        ));
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
            sheep_line(&mut out, "resolver", resolver);
        }
        for fixer in &branch.fixers {
            sheep_line(&mut out, "fixer", fixer);
        }
        if let Some(output) = branch
            .check_output
            .as_ref()
            .filter(|_| branch.state == BranchState::CheckFailed)
        {
            let lines: Vec<&str> = output.lines().collect();
            for line in &lines[lines.len().saturating_sub(CHECK_LINES)..] {
                out.push_str(&format!("  | {line}\n"));
            }
        }
    }
    out.push_str(&summary(view));
    out
}

/// What the queue did overall, in one line.
fn summary(view: &MergeView) -> String {
    let count = |state: BranchState| view.branches.iter().filter(|b| b.state == state).count();
    let total = view.branches.len();
    if view.discard {
        return format!("{} of {total} discarded", count(BranchState::Discarded));
    }
    let (merged, before) = (
        count(BranchState::Merged),
        count(BranchState::AlreadyLanded),
    );
    let mut line = match (merged, before) {
        (0, 0) => format!("nothing landed into {}", view.target),
        (0, before) => format!(
            "nothing new landed: {before} of {total} already in {}",
            view.target
        ),
        (merged, 0) => format!("{merged} of {total} landed into {}", view.target),
        (merged, before) => format!(
            "{merged} of {total} landed into {} ({before} already there)",
            view.target
        ),
    };
    if let Some(reason) = &view.cancelled {
        line = format!("cancelled ({reason}): {line}");
    } else if !view.finished {
        line.push_str(" so far");
    }
    line
}

/// A dry run: each branch in order, its commits and diffstat, and what it would conflict with.
pub fn preview_text(preview: &MergePreview) -> String {
    let mut out = format!(
        "Would land into {}{} (strategy: {})",
        preview.target,
        preview
            .created_from
            .as_ref()
            .map(|from| format!(", made from {from}"))
            .unwrap_or_default(),
        preview.strategy
    );
    if let Some(check) = &preview.check {
        out.push_str(&format!(" (check: {check})"));
    }
    out.push('\n');
    let mut conflicting = 0;
    for (number, branch) in preview.branches.iter().enumerate() {
        let owner = branch
            .owner
            .as_ref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default();
        let task = branch
            .task_status
            .as_ref()
            .map(|s| format!(" [task {s}]"))
            .unwrap_or_default();
        let what = if branch.lands {
            format!("{} commit(s)", branch.commits.len())
        } else {
            "not landed".to_owned()
        };
        out.push_str(&format!(
            "{}. {}{owner}{task}: {what}",
            number + 1,
            branch.branch
        ));
        if let Some(why) = &branch.why {
            out.push_str(&format!(" — {why}"));
        }
        out.push('\n');
        for commit in &branch.commits {
            out.push_str(&format!(
                "   {} {}\n",
                short(&commit.commit),
                commit.subject
            ));
        }
        for line in branch.diffstat.lines().filter(|_| branch.lands) {
            out.push_str(&format!("   {}\n", line.trim_end()));
        }
        if !branch.conflicts.is_empty() {
            conflicting += 1;
            out.push_str(&format!(
                "   would conflict in {}",
                branch.conflicts.join(", ")
            ));
            let mut with: Vec<String> = branch
                .conflicts_with
                .iter()
                .map(|pair| format!("{} ({})", pair.branch, pair.files.join(", ")))
                .collect();
            if !branch.conflicts_with_target.is_empty() {
                with.insert(
                    0,
                    format!(
                        "{} ({})",
                        preview.target,
                        branch.conflicts_with_target.join(", ")
                    ),
                );
            }
            if !with.is_empty() {
                out.push_str(&format!(" — with {}", with.join(" and ")));
            }
            out.push('\n');
        }
    }
    let landing = preview.branches.iter().filter(|b| b.lands).count();
    out.push_str(&format!(
        "{landing} of {} would be tried, {conflicting} would conflict; nothing was changed",
        preview.branches.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch(state: BranchState) -> BranchLanding {
        BranchLanding {
            branch: "shepherd/a".into(),
            landing_ref: "shepherd/a".into(),
            state,
            ..BranchLanding::default()
        }
    }

    #[test]
    fn a_relanding_says_nothing_new_landed_and_a_discard_says_what_it_does() {
        let view = MergeView {
            target: "main".into(),
            branches: vec![
                branch(BranchState::AlreadyLanded),
                branch(BranchState::AlreadyLanded),
            ],
            finished: true,
            ..MergeView::default()
        };
        let text = merge_text(&view);
        assert!(text.starts_with("Landing into main\n"), "{text}");
        assert!(
            text.ends_with("nothing new landed: 2 of 2 already in main"),
            "{text}"
        );
        let discard = MergeView {
            discard: true,
            branches: vec![branch(BranchState::Discarded)],
            finished: true,
            ..view
        };
        let text = merge_text(&discard);
        assert!(
            text.starts_with("Discarding\n") && !text.contains("Landing into"),
            "{text}"
        );
        assert!(text.ends_with("1 of 1 discarded"), "{text}");
    }

    #[test]
    fn a_failed_checks_status_stays_on_its_line_however_long_its_output() {
        let mut failed = branch(BranchState::CheckFailed);
        failed.check_status = Some("exit 3".into());
        failed.check_output = Some("line\n".repeat(100));
        let view = MergeView {
            target: "main".into(),
            branches: vec![failed],
            finished: true,
            ..MergeView::default()
        };
        let text = merge_text(&view);
        assert!(
            text.contains("- shepherd/a: check failed (exit 3)"),
            "{text}"
        );
        assert_eq!(text.matches("  | line").count(), CHECK_LINES, "{text}");
    }
}
