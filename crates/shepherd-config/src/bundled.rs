//! The agent definitions shipped inside the binary: scout, planner, worker and reviewer.
//!
//! They are ordinary definition files (`crates/shepherd-config/agents/*.md`) embedded at build
//! time, so a fresh machine has useful agents without installing anything, and a user replaces
//! one by writing a definition of the same name: bundled definitions have the lowest precedence.

use std::path::PathBuf;

/// One embedded definition file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundledAgent {
    /// The file name, e.g. `worker.md`.
    pub file_name: &'static str,
    /// The file's contents.
    pub contents: &'static str,
}

impl BundledAgent {
    /// The pseudo-path a bundled definition reports as its file: `bundled:<file name>`.
    pub fn pseudo_path(&self) -> PathBuf {
        PathBuf::from(format!("bundled:{}", self.file_name))
    }
}

/// Every bundled definition, in file-name order (the order a directory would list them in).
pub const BUNDLED_AGENTS: [BundledAgent; 4] = [
    BundledAgent {
        file_name: "planner.md",
        contents: include_str!("../agents/planner.md"),
    },
    BundledAgent {
        file_name: "reviewer.md",
        contents: include_str!("../agents/reviewer.md"),
    },
    BundledAgent {
        file_name: "scout.md",
        contents: include_str!("../agents/scout.md"),
    },
    BundledAgent {
        file_name: "worker.md",
        contents: include_str!("../agents/worker.md"),
    },
];

#[cfg(test)]
mod tests {
    use shepherd_core::agent_def::{AgentSource, ModelChoice, parse_agent_def};

    use super::*;

    #[test]
    fn every_bundled_definition_parses_cleanly_and_teaches_the_contract() {
        let mut names = Vec::new();
        for agent in BUNDLED_AGENTS {
            let parsed = parse_agent_def(
                agent.contents.as_bytes(),
                AgentSource::Bundled,
                agent.pseudo_path(),
            )
            .unwrap_or_else(|err| panic!("{}: {err}", agent.file_name));
            assert!(parsed.ignored.is_empty(), "{}", agent.file_name);
            let def = parsed.def;
            assert_eq!(format!("{}.md", def.name), agent.file_name);
            assert_eq!(def.model, ModelChoice::Inherit);
            for phrase in [
                "shepherd.md",
                "assigned",
                "shepherd_message",
                "shepherd_done",
                "exactly once",
                "`completed`",
                "`blocked`",
                "`failed`",
                "Ending your turn is not finishing the task",
            ] {
                assert!(
                    def.system_prompt.contains(phrase),
                    "{} does not mention {phrase:?}",
                    agent.file_name
                );
            }
            names.push((def.name, def.tools.unwrap_or_default().join(", ")));
        }
        assert_eq!(
            names,
            [
                ("planner".to_owned(), "read, grep, find, ls".to_owned()),
                (
                    "reviewer".to_owned(),
                    "read, grep, find, ls, bash".to_owned()
                ),
                ("scout".to_owned(), "read, grep, find, ls".to_owned()),
                ("worker".to_owned(), "read, write, edit, bash".to_owned()),
            ]
        );
    }
}
