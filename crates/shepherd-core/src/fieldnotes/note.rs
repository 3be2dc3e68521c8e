//! A note's text: frontmatter, the body the sheep owns, and the store's own orchestration
//! section at the end.
//!
//! The body is written once, at reservation (`# Scout 01` and a placeholder comment); after
//! that the store never touches it. Every later rewrite replaces the frontmatter and, when
//! finalising, only the section between `<!-- Shepherd orchestration -->` and
//! `<!-- /Shepherd orchestration -->`, so rendering is idempotent and whatever the sheep wrote
//! survives byte for byte. (The original re-prepended the heading on every update, so a
//! finished note showed it three times.) A note the original finalised has no end marker; its
//! section then runs to the end of the file, as the original wrote it.

use super::frontmatter::{render_frontmatter, split_frontmatter};
use super::markdown::{display_name, inline_code};
use super::metadata::{ArtifactRecord, SessionMetadata};

/// First line of the store's orchestration section.
pub const SECTION_START: &str = "<!-- Shepherd orchestration -->";
/// Last line of the store's orchestration section.
pub const SECTION_END: &str = "<!-- /Shepherd orchestration -->";
/// The placeholder under a new note's heading.
pub const PLACEHOLDER: &str = "<!-- Agent's note or agent-maintained report follows. -->";

/// What a rewrite does with the orchestration section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section<'a> {
    /// Leave it as it is (or absent).
    Keep,
    /// Replace it with this text (from [`render_section`]), or append it.
    Set(&'a str),
}

/// `# <Agent Display> NN`.
pub fn heading(note: &ArtifactRecord) -> String {
    format!("# {} {:02}", display_name(&note.agent), note.ordinal)
}

/// A new note: frontmatter, heading and placeholder.
pub fn initial_note(session: &SessionMetadata, note: &ArtifactRecord) -> String {
    format!(
        "{}\n{}\n\n{PLACEHOLDER}\n",
        render_frontmatter(session, note),
        heading(note)
    )
}

/// The parts of an existing note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteParts<'a> {
    /// Frontmatter lines, without fences, if the note has any.
    pub frontmatter: Option<&'a str>,
    /// Everything between the frontmatter and the orchestration section.
    pub body: &'a str,
    /// The orchestration section, markers included.
    pub section: Option<&'a str>,
    /// Anything written after the section's end marker.
    pub after: &'a str,
}

/// Splits a note into frontmatter, body, orchestration section and trailing text.
pub fn split_note(text: &str) -> NoteParts<'_> {
    let (frontmatter, rest) = match split_frontmatter(text) {
        Some((fields, rest)) => (Some(fields), rest),
        None => (None, text),
    };
    let start = rest
        .match_indices(SECTION_START)
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || rest.as_bytes()[at - 1] == b'\n')
        .last();
    let Some(start) = start else {
        return NoteParts {
            frontmatter,
            body: rest,
            section: None,
            after: "",
        };
    };
    let end = rest[start..].find(SECTION_END).map(|at| {
        let end = start + at + SECTION_END.len();
        if rest[end..].starts_with('\n') {
            end + 1
        } else {
            end
        }
    });
    let end = end.unwrap_or(rest.len());
    NoteParts {
        frontmatter,
        body: &rest[..start],
        section: Some(&rest[start..end]),
        after: &rest[end..],
    }
}

/// The note text after a change: fresh frontmatter from `session` and `note`, the existing body
/// untouched, and the orchestration section kept or replaced. `existing` is the file's current
/// text (`None` or empty when the file is missing: the note is then rebuilt from its heading).
pub fn render_note(
    session: &SessionMetadata,
    note: &ArtifactRecord,
    existing: Option<&str>,
    section: Section<'_>,
) -> String {
    let fresh;
    let existing = match existing {
        Some(text) if !text.trim().is_empty() => text,
        _ => {
            fresh = initial_note(session, note);
            &fresh
        }
    };
    let parts = split_note(existing);
    let mut out = render_frontmatter(session, note);
    if parts.frontmatter.is_none() {
        out.push('\n');
    }
    match section {
        Section::Keep => {
            out.push_str(parts.body);
            out.push_str(parts.section.unwrap_or_default());
            out.push_str(parts.after);
        }
        Section::Set(text) => {
            let mut body = String::from(parts.body);
            body.push_str(parts.after);
            let separator = if body.is_empty() || body.ends_with("\n\n") {
                ""
            } else if body.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            out.push_str(&body);
            out.push_str(separator);
            out.push_str(text);
        }
    }
    out
}

/// The orchestration section for a finalised note: final status, completion time, the note's
/// metadata, and the task it was given, its final output and its error when there are any (the
/// task is repeated here so a person reading the note sees what was asked).
pub fn render_section(note: &ArtifactRecord, output: Option<&str>) -> String {
    let mut out = format!(
        "{SECTION_START}\n## Shepherd orchestration\n\n- **Final status:** {}\n",
        note.status
    );
    if let Some(completed) = &note.completed_at {
        out.push_str(&format!("- **Completed:** {completed}\n"));
    }
    if !note.metadata.is_empty() {
        let json = serde_json::to_string(&note.metadata).expect("metadata serialises");
        out.push_str(&format!("- **Metadata:** {}\n", inline_code(&json)));
    }
    let limits = limit_episodes(&note.metadata);
    let continues = note_link(&note.metadata, "continues");
    let continued_in = note_link(&note.metadata, "continuedIn");
    let sections = [
        ("Task", note.task.as_deref()),
        ("Continues", continues.as_deref()),
        ("Rate limits", limits.as_deref()),
        ("Continued in", continued_in.as_deref()),
        ("Final output", output),
        ("Error", note.error.as_deref()),
    ];
    for (title, text) in sections {
        if let Some(text) = text
            .map(str::trim_end)
            .filter(|text| !text.trim().is_empty())
        {
            out.push_str(&format!("\n### {title}\n\n{}\n", quote_markers(text)));
        }
    }
    out.push('\n');
    out.push_str(SECTION_END);
    out.push('\n');
    out
}

/// The provider limits a task waited out, one line each (when, what, which provider, how long,
/// how it ended), from the note's `rateLimitEpisodes` metadata; `None` when it met none.
fn limit_episodes(metadata: &super::Metadata) -> Option<String> {
    let episodes = metadata.get("rateLimitEpisodes")?.as_array()?;
    let lines: Vec<String> = episodes
        .iter()
        .map(|episode| {
            let text = |key: &str| episode[key].as_str().unwrap_or("?").replace('_', " ");
            let seconds = episode["waitedMs"].as_f64().unwrap_or(0.0) / 1000.0;
            let replies = episode["replies"].as_u64().unwrap_or(0);
            format!(
                "- {} · {} · {} · waited {seconds:.1} s · {replies} limit repl{} · {}",
                text("at"),
                text("class"),
                text("provider"),
                if replies == 1 { "y" } else { "ies" },
                text("ended"),
            )
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A link from one note to another, from the project-relative path in metadata `key`
/// (`.shepherd/sessions/0001-…/0002-….md`): every session is a sibling directory, so the link
/// goes up one and into the other note's session.
fn note_link(metadata: &super::Metadata, key: &str) -> Option<String> {
    let path = metadata.get(key)?.as_str()?;
    let mut parts = path.rsplit('/');
    let (file, session) = (parts.next()?, parts.next()?);
    Some(format!("[{session}/{file}](../{session}/{file})"))
}

/// Output that quotes the section markers must not be mistaken for the section's edges.
fn quote_markers(text: &str) -> String {
    text.replace(SECTION_START, "<!-- Shepherd orchestration (quoted) -->")
        .replace(SECTION_END, "<!-- /Shepherd orchestration (quoted) -->")
}

/// The final output recorded in a note's orchestration section, if any. `error` is the error
/// the record holds for the note, so an output that itself contains `### Error` is read whole.
pub fn final_output(text: &str, error: Option<&str>) -> Option<String> {
    const HEADER: &str = "\n### Final output\n\n";
    let section = split_note(text).section?;
    let start = section.find(HEADER)? + HEADER.len();
    let mut rest = section[start..].trim_end_matches('\n');
    rest = rest.strip_suffix(SECTION_END).unwrap_or(rest);
    rest = rest.strip_suffix("\n\n").unwrap_or(rest);
    if let Some(error) = error.map(str::trim_end).filter(|e| !e.trim().is_empty()) {
        let suffix = format!("\n\n### Error\n\n{}", quote_markers(error));
        rest = rest.strip_suffix(suffix.as_str()).unwrap_or(rest);
    }
    Some(rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldnotes::status::{Mode, NoteStatus};

    fn fixture() -> (SessionMetadata, ArtifactRecord) {
        let session = SessionMetadata::new("fix", "fix", 1, None, "t0");
        let note = ArtifactRecord {
            id: String::new(),
            agent: "scout".to_owned(),
            agent_slug: "scout".to_owned(),
            ordinal: 1,
            file_name: "scout-01.md".to_owned(),
            file_path: String::new(),
            relative_path: String::new(),
            mode: Mode::Single,
            task: None,
            status: NoteStatus::Pending,
            reserved_at: "t0".to_owned(),
            started_at: None,
            completed_at: None,
            group: None,
            error: None,
            deleted_at: None,
            feedback: Vec::new(),
            metadata: Default::default(),
        };
        (session, note)
    }

    #[test]
    fn a_notes_section_lists_the_rate_limits_it_waited_out() {
        let (_, plain) = fixture();
        let mut record = plain.clone();
        record.metadata.insert(
            "rateLimitEpisodes".into(),
            serde_json::json!([{"at": "2026-12-03T10:00:00Z", "class": "rate_limit",
                "provider": "anthropic", "waitedMs": 2100, "replies": 1, "ended": "resumed"}]),
        );
        let section = render_section(&record, None);
        assert!(
            section.contains(
                "### Rate limits\n\n- 2026-12-03T10:00:00Z · rate limit · anthropic · waited 2.1 s · 1 limit reply · resumed\n"
            ),
            "{section}"
        );
        assert!(!render_section(&plain, None).contains("Rate limits"));
        let mut linked = plain.clone();
        linked.metadata.insert(
            "continuedIn".into(),
            ".shepherd/sessions/0001-a/0002-w2.md".into(),
        );
        assert!(
            render_section(&linked, None)
                .contains("### Continued in\n\n[0001-a/0002-w2.md](../0001-a/0002-w2.md)\n"),
            "{}",
            render_section(&linked, None)
        );
    }

    #[test]
    fn rewrites_keep_the_body_and_one_heading() {
        let (session, mut note) = fixture();
        let initial = initial_note(&session, &note);
        let written = format!("{initial}\nFindings by the sheep.");
        note.status = NoteStatus::Completed;
        note.completed_at = Some("t1".to_owned());
        let section = render_section(&note, Some("Result text"));
        let once = render_note(&session, &note, Some(&written), Section::Set(&section));
        let twice = render_note(&session, &note, Some(&once), Section::Set(&section));
        assert_eq!(once, twice);
        assert_eq!(once.matches("# Scout 01").count(), 1);
        assert!(once.contains("\nFindings by the sheep.\n\n<!-- Shepherd orchestration -->\n"));
        assert_eq!(final_output(&once, None).as_deref(), Some("Result text"));
        let kept = render_note(&session, &note, Some(&once), Section::Keep);
        assert_eq!(kept, once);
    }

    #[test]
    fn text_after_the_section_and_quoted_markers_survive() {
        let (session, mut note) = fixture();
        note.status = NoteStatus::Failed;
        note.error = Some(format!("boom {SECTION_END}"));
        let section = render_section(&note, Some(SECTION_START));
        let once = render_note(&session, &note, None, Section::Set(&section));
        let appended = format!("{once}Later words.\n");
        let again = render_note(&session, &note, Some(&appended), Section::Set(&section));
        assert!(again.contains("Later words.\n\n<!-- Shepherd orchestration -->"));
        assert_eq!(again.matches(SECTION_START).count(), 1);
        assert_eq!(split_note(&again).after, "");
        assert_eq!(
            final_output(&again, note.error.as_deref()).as_deref(),
            Some("<!-- Shepherd orchestration (quoted) -->")
        );
    }

    #[test]
    fn notes_without_frontmatter_gain_one() {
        let (session, note) = fixture();
        let text = render_note(&session, &note, Some("My own report\n"), Section::Keep);
        assert!(text.starts_with("---\n"));
        assert!(text.ends_with("---\n\nMy own report\n"));
        assert_eq!(
            render_note(&session, &note, Some(&text), Section::Keep),
            text
        );
    }
}
