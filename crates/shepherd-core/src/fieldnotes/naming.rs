//! Names the store hands out: a new note's file name and ordinal, and a collision-free slug
//! for a new session directory.
//!
//! Both rules are the original extension's, so either program picks the same names for the
//! same history. Checking whether a file already exists is the caller's business; the rules
//! take that answer as a predicate.

use std::collections::HashSet;

use super::is_note_file_name;
use super::metadata::SessionMetadata;
use crate::slug::{MAX_SESSION_SLUG, agent_slug, hash8, is_safe_slug, truncate_slug};

/// Where a new note for an agent goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotePlan {
    /// The file-name component for the agent.
    pub agent_slug: String,
    /// The agent's next ordinal in the session.
    pub ordinal: u32,
    /// `<agentSlug>-NN.md`, or `<agentSlug>-<n>-NN.md` when that name is taken.
    pub file_name: String,
}

/// Plans the next note for `agent` in `session`.
///
/// The ordinal is one more than the agent's highest so far, so it is never reused. An agent
/// seen before keeps its slug; a new agent whose slug another agent already uses gets
/// `<slug>-<hash8(agent)>`. A file name that is already listed or for which `taken` answers
/// true becomes `<base>-2-NN.md`, `<base>-3-NN.md`, …
pub fn plan_note(session: &SessionMetadata, agent: &str, taken: &dyn Fn(&str) -> bool) -> NotePlan {
    let notes = &session.artifacts;
    let ordinal = notes
        .iter()
        .filter(|note| note.agent == agent)
        .map(|note| note.ordinal)
        .max()
        .unwrap_or(0)
        + 1;
    let known_slug = notes
        .iter()
        .find(|note| note.agent == agent && is_safe_slug(&note.agent_slug))
        .map(|note| note.agent_slug.clone());
    let base = known_slug.unwrap_or_else(|| {
        let slug = agent_slug(agent);
        if notes.iter().any(|note| note.agent_slug == slug) {
            format!("{slug}-{}", hash8(agent))
        } else {
            slug
        }
    });
    let unavailable = |name: &str| {
        !is_note_file_name(name) || taken(name) || notes.iter().any(|note| note.file_name == name)
    };
    let mut file_name = format!("{base}-{ordinal:02}.md");
    let mut serial = 2u32;
    while unavailable(&file_name) {
        file_name = format!("{base}-{serial}-{ordinal:02}.md");
        serial += 1;
    }
    NotePlan {
        agent_slug: base,
        ordinal,
        file_name,
    }
}

/// The slug for a new session named `name` whose plain slug is `slug`, given the slugs of the
/// existing session directories: `slug` itself when free, else `<slug>-<hash8(name)>`, then
/// `-2`, `-3`, … on that, all within [`MAX_SESSION_SLUG`] characters. Two names with the same
/// slug therefore never share a directory.
pub fn unique_session_slug(slug: &str, name: &str, existing: &HashSet<String>) -> String {
    if !existing.contains(slug) {
        return slug.to_owned();
    }
    let suffix = hash8(name);
    let base = truncate_slug(slug, MAX_SESSION_SLUG - suffix.len() - 1);
    let hashed = if base.is_empty() {
        format!("session-{suffix}")
    } else {
        format!("{base}-{suffix}")
    };
    if !existing.contains(&hashed) {
        return hashed;
    }
    (2u32..)
        .map(|serial| {
            let serial = format!("-{serial}");
            let head = truncate_slug(&hashed, MAX_SESSION_SLUG - serial.len());
            format!("{head}{serial}")
        })
        .find(|candidate| !existing.contains(candidate))
        .expect("some serial is free")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldnotes::metadata::ArtifactRecord;
    use crate::fieldnotes::status::{Mode, NoteStatus};

    fn session_with(notes: &[(&str, &str, &str, u32)]) -> SessionMetadata {
        let mut session = SessionMetadata::new("s", "s", 1, None, "t");
        for (agent, slug, file, ordinal) in notes {
            session.artifacts.push(ArtifactRecord {
                id: String::new(),
                agent: (*agent).to_owned(),
                agent_slug: (*slug).to_owned(),
                ordinal: *ordinal,
                file_name: (*file).to_owned(),
                file_path: String::new(),
                relative_path: String::new(),
                mode: Mode::Single,
                task: None,
                status: NoteStatus::Pending,
                reserved_at: "t".to_owned(),
                started_at: None,
                completed_at: None,
                group: None,
                error: None,
                deleted_at: None,
                feedback: Vec::new(),
                metadata: Default::default(),
            });
        }
        session
    }

    #[test]
    fn ordinals_are_per_agent_and_slugs_are_disambiguated() {
        let none = |_: &str| false;
        let session = session_with(&[("scout", "scout", "scout-01.md", 1)]);
        assert_eq!(plan_note(&session, "scout", &none).file_name, "scout-02.md");
        assert_eq!(
            plan_note(&session, "planner", &none).file_name,
            "planner-01.md"
        );
        let other = plan_note(&session, "Scout", &none);
        assert_eq!(other.agent_slug, format!("scout-{}", hash8("Scout")));
        assert_eq!(other.ordinal, 1);
    }

    #[test]
    fn taken_files_get_a_serial() {
        let session = session_with(&[]);
        let plan = plan_note(&session, "scout", &|name| name == "scout-01.md");
        assert_eq!(plan.file_name, "scout-2-01.md");
    }

    #[test]
    fn session_slugs_never_merge() {
        let mut existing = HashSet::from(["fix".to_owned()]);
        let hashed = unique_session_slug("fix", "Fix!", &existing);
        assert_eq!(hashed, format!("fix-{}", hash8("Fix!")));
        existing.insert(hashed.clone());
        assert_eq!(
            unique_session_slug("fix", "Fix!", &existing),
            format!("{hashed}-2")
        );
        let long = "a".repeat(64);
        existing.insert(long.clone());
        let cut = unique_session_slug(&long, "long", &existing);
        assert!(cut.len() <= MAX_SESSION_SLUG && cut.ends_with(&hash8("long")));
    }
}
