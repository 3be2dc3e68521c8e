//! The rule a step's result must pass before the target moves, one per strategy, on facts
//! read from the project's repository (never from the repository a resolver or fixer held).
//!
//! A resolver or fixer is a sheep: it may abort the merge, reset it away or commit something
//! else and still say `done completed`. So the queue never takes its word (nor its
//! repository's) for what it made: the result is brought home, git is asked about it in the
//! project, and it lands only when it is what the strategy makes:
//!
//! - *merge*: a commit whose parents are the old target and the branch's tip, in that order;
//! - *squash*: a commit whose one parent is the old target and whose tree is the merge's (the
//!   tree `git merge-tree` gives, or the verified resolved merge's);
//! - *rebase*: the old target is an ancestor of the result, and the patches from it to the
//!   result are the branch's own, in order;
//! - *ff-only*: the result is the branch's tip, and the old target is its ancestor.

/// What git says about a step's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The target before the step.
    pub old: String,
    /// What lands: the branch's tip (or the changes preserved on it).
    pub tip: String,
    /// The result the target would move to.
    pub new: String,
    /// The result's parents, in order.
    pub parents: Vec<String>,
    /// Whether the old target is an ancestor of the result.
    pub old_is_ancestor: bool,
    /// The result's tree (squash).
    pub tree: Option<String>,
    /// The tree the squash must have.
    pub expected_tree: Option<String>,
    /// The patch ids from the old target to the result, in order (rebase).
    pub patches: Vec<String>,
    /// The branch's own patch ids, in order (rebase).
    pub expected_patches: Vec<String>,
}

/// Checks `facts` against `strategy`'s rule: `Err` says what was found instead, in words.
pub fn verify(strategy: super::Strategy, facts: &Facts) -> Result<(), String> {
    use super::Strategy;
    let short = |c: &str| c[..c.len().min(10)].to_owned();
    let parents = || {
        if facts.parents.is_empty() {
            "no parent".to_owned()
        } else {
            facts
                .parents
                .iter()
                .map(|p| short(p))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    if facts.new == facts.old {
        return Err(format!(
            "the result is the old target {} itself: nothing landed",
            short(&facts.old)
        ));
    }
    match strategy {
        Strategy::Merge => {
            if facts.parents == [facts.old.clone(), facts.tip.clone()] {
                Ok(())
            } else {
                Err(format!(
                    "{} is not a merge of {} onto {}: its parents are {}",
                    short(&facts.new),
                    short(&facts.tip),
                    short(&facts.old),
                    parents()
                ))
            }
        }
        Strategy::Squash => {
            if facts.parents != [facts.old.clone()] {
                return Err(format!(
                    "{} is not one commit on {}: its parents are {}",
                    short(&facts.new),
                    short(&facts.old),
                    parents()
                ));
            }
            match (&facts.tree, &facts.expected_tree) {
                (Some(tree), Some(expected)) if tree == expected => Ok(()),
                (tree, expected) => Err(format!(
                    "{} holds tree {}, not the merge's {}",
                    short(&facts.new),
                    tree.as_deref().map_or_else(|| "none".to_owned(), short),
                    expected.as_deref().map_or_else(|| "none".to_owned(), short)
                )),
            }
        }
        Strategy::Rebase => {
            if !facts.old_is_ancestor {
                return Err(format!(
                    "{} is not built on the old target {}",
                    short(&facts.new),
                    short(&facts.old)
                ));
            }
            if facts.patches == facts.expected_patches {
                Ok(())
            } else {
                Err(format!(
                    "the {} patch(es) from {} to {} are not the branch's {}",
                    facts.patches.len(),
                    short(&facts.old),
                    short(&facts.new),
                    facts.expected_patches.len()
                ))
            }
        }
        Strategy::FfOnly => {
            if facts.new == facts.tip && facts.old_is_ancestor {
                Ok(())
            } else if facts.new != facts.tip {
                Err(format!(
                    "{} is not the branch's tip {}",
                    short(&facts.new),
                    short(&facts.tip)
                ))
            } else {
                Err(format!(
                    "{} is not a fast-forward of {}",
                    short(&facts.tip),
                    short(&facts.old)
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Strategy;
    use super::*;

    fn facts() -> Facts {
        Facts {
            old: "o".repeat(40),
            tip: "t".repeat(40),
            new: "n".repeat(40),
            parents: vec!["o".repeat(40), "t".repeat(40)],
            old_is_ancestor: true,
            ..Facts::default()
        }
    }

    #[test]
    fn a_merge_has_the_old_target_and_the_tip_as_parents_in_order() {
        assert_eq!(verify(Strategy::Merge, &facts()), Ok(()));
        // A resolver that aborted and committed something else: one parent, the old target.
        let mut other = facts();
        other.parents = vec!["o".repeat(40)];
        let found = verify(Strategy::Merge, &other).unwrap_err();
        assert!(found.contains("parents are oooooooooo"), "{found}");
        // The parents the other way round, or the old target reset away.
        other.parents = vec!["t".repeat(40), "o".repeat(40)];
        assert!(verify(Strategy::Merge, &other).is_err());
        let mut back = facts();
        back.new = back.old.clone();
        let found = verify(Strategy::Merge, &back).unwrap_err();
        assert!(found.contains("nothing landed"), "{found}");
    }

    #[test]
    fn a_squash_is_one_commit_on_the_target_with_the_merges_tree() {
        let mut squash = facts();
        squash.parents = vec!["o".repeat(40)];
        squash.tree = Some("a".repeat(40));
        squash.expected_tree = Some("a".repeat(40));
        assert_eq!(verify(Strategy::Squash, &squash), Ok(()));
        squash.expected_tree = Some("b".repeat(40));
        assert!(verify(Strategy::Squash, &squash).is_err());
        squash.parents = vec!["o".repeat(40), "t".repeat(40)];
        squash.expected_tree = squash.tree.clone();
        assert!(verify(Strategy::Squash, &squash).is_err());
    }

    #[test]
    fn a_rebase_replays_the_branchs_own_patches_on_the_target() {
        let mut rebase = facts();
        rebase.patches = vec!["p1".into(), "p2".into()];
        rebase.expected_patches = vec!["p1".into(), "p2".into()];
        assert_eq!(verify(Strategy::Rebase, &rebase), Ok(()));
        rebase.patches.push("p3".into());
        assert!(verify(Strategy::Rebase, &rebase).is_err());
        rebase.patches.pop();
        rebase.old_is_ancestor = false;
        assert!(verify(Strategy::Rebase, &rebase).is_err());
    }

    #[test]
    fn a_fast_forward_moves_to_the_tip_from_its_ancestor() {
        let mut ff = facts();
        ff.new = ff.tip.clone();
        assert_eq!(verify(Strategy::FfOnly, &ff), Ok(()));
        ff.old_is_ancestor = false;
        assert!(verify(Strategy::FfOnly, &ff).is_err());
        assert!(verify(Strategy::FfOnly, &facts()).is_err());
    }
}
