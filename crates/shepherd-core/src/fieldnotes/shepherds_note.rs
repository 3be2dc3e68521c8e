//! The shepherd's own note: guidance, feedback and a map for present and future sheep, in a
//! file of its own in the session directory, `shepherds-note.md`.
//!
//! It is a file of its own because `shepherd.md` is not the shepherd's to keep: Shepherd
//! regenerates the index from `session.json` on every change, and so does the original
//! `pi-shepherd`, which rewrites the whole file and would erase anything the shepherd wrote
//! there. Neither program ever rewrites the shepherd's note: Shepherd creates it with its session
//! (or, for a session it did not create, on its next write there), lists it in `session.json`
//! (`shepherdsNote`, a [`super::ShepherdsNote`] kept with the rest of the record in
//! [`super::metadata`]) and links it from `shepherd.md`; from then on only the shepherd writes it,
//! with its ordinary file tools.
//!
//! Text a shepherd wrote into `shepherd.md` itself — the `## Shepherd's note` section earlier
//! versions kept at the end of the index, below [`LEGACY_MARKER`], or any `##` section of its
//! own — is moved into the note on Shepherd's next write ([`index_leftovers`], [`with_moved`]),
//! so nothing the shepherd wrote is lost to a rewrite of the index.

use super::markdown::display_name;
use super::metadata::SessionMetadata;

/// The line that opened the shepherd's note at the end of `shepherd.md` in earlier versions;
/// everything after it was the shepherd's. Still recognised, to move that text to the note.
pub const LEGACY_MARKER: &str = "<!-- Shepherd's note: guidance, feedback and a map for present and future sheep. Everything below this line is the shepherd's own and is kept whenever Shepherd rewrites this file. -->";

/// The headings of the sections Shepherd generates in `shepherd.md`: any other `##` section
/// there is the shepherd's.
const GENERATED_SECTIONS: [&str; 4] = ["Notes", "Flow", "Related files", "Shepherd's note"];

/// The text of a new shepherd's note for `session`: a heading and what the file is for, ready
/// for the shepherd to write below.
pub fn render_new(session: &SessionMetadata) -> String {
    format!(
        "# Shepherd's note — Session {:04} — {}\n\n\
         <!-- The shepherd's own note for this session: guidance, feedback and a map for present \
         and future sheep, who read it with shepherd.md before they start. Only the shepherd \
         writes here; Shepherd never rewrites this file, and neither does the original \
         pi-shepherd. -->\n",
        session.ordinal,
        display_name(&session.session_name)
    )
}

/// `note` (the file's current text; a new note when `None`) with `moved` — text the shepherd
/// wrote into `shepherd.md` — appended, under a line saying where it came from.
pub fn with_moved(session: &SessionMetadata, note: Option<&str>, moved: &str, now: &str) -> String {
    let mut out = note.map_or_else(|| render_new(session), str::to_owned);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "\n<!-- Moved here from shepherd.md at {now}: Shepherd regenerates that file. -->\n"
    ));
    out.push_str(moved.trim_start_matches('\n'));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// What of an existing `shepherd.md` the shepherd wrote there: every `##` section whose heading
/// Shepherd does not generate (outside code fences), then everything below [`LEGACY_MARKER`],
/// as written; empty when there is none.
pub fn index_leftovers(index: &str) -> String {
    let (generated, below) = match index.find(LEGACY_MARKER) {
        Some(at) => {
            let rest = &index[at + LEGACY_MARKER.len()..];
            (&index[..at], rest.strip_prefix('\n').unwrap_or(rest))
        }
        None => (index, ""),
    };
    let mut kept = String::new();
    let mut in_fence = false;
    let mut keeping = false;
    for line in generated.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if !in_fence && (trimmed.starts_with("# ") || trimmed.starts_with("## ")) {
            keeping = trimmed
                .strip_prefix("## ")
                .is_some_and(|heading| !GENERATED_SECTIONS.contains(&heading.trim()));
        }
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
        }
        if keeping {
            kept.push_str(line);
        }
    }
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    if !kept.is_empty() && !below.trim().is_empty() && !kept.ends_with("\n\n") {
        kept.push('\n');
    }
    kept.push_str(below);
    if kept.trim().is_empty() {
        String::new()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionMetadata {
        let mut session = SessionMetadata::new("fix-login", "fix-login", 3, None, "t0");
        session.rederive_paths("/repo");
        session
    }

    #[test]
    fn a_new_note_names_its_session_and_says_who_writes_it() {
        let text = render_new(&session());
        assert!(text.starts_with("# Shepherd's note — Session 0003 — Fix Login\n"));
        assert!(text.contains("Only the shepherd writes here"), "{text}");
    }

    #[test]
    fn what_the_shepherd_wrote_in_the_index_is_found_and_moved() {
        // An index of an earlier version: the shepherd's note below the marker, and a section
        // the shepherd added above it.
        let old = format!(
            "# Session 0003 — Fix Login\n\n## Guidance\n\nUse tabs.\n```text\n## not a heading\n```\n\n## Notes\n\n1. gone\n\n## Shepherd's note\n\n{LEGACY_MARKER}\nKeep the API stable.\n"
        );
        let moved = index_leftovers(&old);
        assert_eq!(
            moved,
            "## Guidance\n\nUse tabs.\n```text\n## not a heading\n```\n\nKeep the API stable.\n"
        );
        let note = with_moved(&session(), None, &moved, "t1");
        assert!(note.starts_with(&render_new(&session())), "{note}");
        assert!(
            note.ends_with(&format!(
                "\n<!-- Moved here from shepherd.md at t1: Shepherd regenerates that file. -->\n{moved}"
            )),
            "{note}"
        );
        let written = "# Mine\n\nAlready here.";
        assert!(
            with_moved(&session(), Some(written), "More.\n", "t2")
                .starts_with("# Mine\n\nAlready here.\n\n<!-- Moved here")
        );
        // An index Shepherd wrote, or one the original wrote, holds nothing of the shepherd's.
        let generated = "# Session 0003 — Fix Login\n\n- **Status:** running\n\n## Notes\n\n_No notes reserved yet._\n\n## Flow\n\n_No flow yet._\n\n## Shepherd's note\n\n[Shepherd's note](./shepherds-note.md)\n";
        assert_eq!(index_leftovers(generated), "");
        assert_eq!(
            index_leftovers(&format!("## Notes\n\n{LEGACY_MARKER}\n\n")),
            ""
        );
    }
}
