//! The fieldnotes context block appended to every delegated task.
//!
//! A sheep learns where its session lives, which note is its own, where the shepherd's note
//! is, and the ownership rules: read `shepherd.md` and the shepherd's note first, write only to
//! its own note, leave `shepherd.md`, the shepherd's note and other notes alone, never start
//! another session. The block is appended after the task (the task text
//! itself is never replaced) and carries absolute paths, for writing, with project-relative
//! twins, for links. (The original only gave this block on its legacy prompt path.)

/// Everything the context block says, with paths already derived by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheepContext<'a> {
    /// The session's name.
    pub session_name: &'a str,
    /// `NNNN-<slug>`.
    pub directory_name: &'a str,
    /// Absolute session directory.
    pub session_dir: &'a str,
    /// Session directory relative to the project root.
    pub session_dir_relative: &'a str,
    /// Absolute path of `shepherd.md`.
    pub index_path: &'a str,
    /// Absolute path of the shepherd's note, when the session has one.
    pub shepherds_note_path: Option<&'a str>,
    /// Absolute path of the sheep's note.
    pub note_path: &'a str,
    /// The note's path relative to the project root.
    pub note_relative: &'a str,
    /// Notes reserved in the session before this one.
    pub earlier_notes: usize,
    /// Whether the session was continued from an earlier call.
    pub resumed: bool,
}

/// How the block begins: what [`split_context_block`] looks for.
const BLOCK_START: &str = "\n\nShepherd session context:\n";

/// A task envelope's content split into the task text and the context block appended to it
/// (`None` when there is none). The block is always last and never contains its own heading
/// twice, so the last heading is where it starts, whatever the task text says.
pub fn split_context_block(content: &str) -> (&str, Option<&str>) {
    match content.rfind(BLOCK_START) {
        Some(at) => (&content[..at], Some(&content[at + 2..])),
        None => (content, None),
    }
}

/// The block, starting with a blank line so it can be appended to any task text.
pub fn render_context_block(context: &SheepContext<'_>) -> String {
    let SheepContext {
        session_name,
        directory_name,
        session_dir,
        session_dir_relative,
        index_path,
        shepherds_note_path,
        note_path,
        note_relative,
        earlier_notes,
        resumed,
    } = context;
    let mut out = format!(
        "{BLOCK_START}\
         - Session: {directory_name} (name: {session_name:?})\n\
         - Session directory: {session_dir} (project-relative: {session_dir_relative})\n\
         - Session fieldnotes: {index_path}\n"
    );
    if let Some(path) = shepherds_note_path {
        out.push_str(&format!("- The shepherd's note: {path}\n"));
    }
    out.push_str(&format!(
        "- Your note: {note_path} (project-relative: {note_relative})\n"
    ));
    if *earlier_notes > 0 || *resumed {
        out.push_str(&format!(
            "- This session continues earlier work: {earlier_notes} earlier note(s), linked from shepherd.md. Read the ones relevant to your task before you start.\n"
        ));
    }
    let first = if shepherds_note_path.is_some() {
        "Read shepherd.md and the shepherd's note first."
    } else {
        "Read shepherd.md first."
    };
    out.push_str(&format!(
        "\n{first} Keep your work in your assigned note: write your detailed findings there \
         when your role allows writing files. Do not edit shepherd.md, the shepherd's note or \
         another agent's note. Do not create another Shepherd session. Use relative Markdown \
         links for files inside the project or session.\n",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_splits_off_even_when_the_task_quotes_its_heading() {
        let context = SheepContext {
            session_name: "fix",
            directory_name: "0001-fix",
            session_dir: "/r/s",
            session_dir_relative: "s",
            index_path: "/r/s/shepherd.md",
            shepherds_note_path: None,
            note_path: "/r/s/w-01.md",
            note_relative: "s/w-01.md",
            earlier_notes: 0,
            resumed: false,
        };
        let task = "Explain this:\n\nShepherd session context:\n- nothing";
        let content = format!("{task}{}", render_context_block(&context));
        let (text, block) = split_context_block(&content);
        assert_eq!(text, task);
        let block = block.expect("a block");
        assert!(block.starts_with("Shepherd session context:\n"), "{block}");
        assert!(block.contains("/r/s/w-01.md"), "{block}");
        assert_eq!(
            split_context_block("just a message"),
            ("just a message", None)
        );
    }

    #[test]
    fn continued_sessions_point_at_earlier_notes() {
        let mut context = SheepContext {
            session_name: "fix",
            directory_name: "0001-fix",
            session_dir: "/repo/.shepherd/sessions/0001-fix",
            session_dir_relative: ".shepherd/sessions/0001-fix",
            index_path: "/repo/.shepherd/sessions/0001-fix/shepherd.md",
            shepherds_note_path: Some("/repo/.shepherd/sessions/0001-fix/shepherds-note.md"),
            note_path: "/repo/.shepherd/sessions/0001-fix/scout-01.md",
            note_relative: ".shepherd/sessions/0001-fix/scout-01.md",
            earlier_notes: 0,
            resumed: false,
        };
        let fresh = render_context_block(&context);
        assert!(fresh.starts_with("\n\nShepherd session context:\n"));
        assert!(fresh.contains("Do not create another Shepherd session."));
        assert!(
            fresh.contains(
                "- The shepherd's note: /repo/.shepherd/sessions/0001-fix/shepherds-note.md\n"
            ),
            "{fresh}"
        );
        assert!(fresh.contains("Read shepherd.md and the shepherd's note first."));
        assert!(!fresh.contains("continues earlier work"));
        context.earlier_notes = 3;
        assert!(
            render_context_block(&context).contains("continues earlier work: 3 earlier note(s)")
        );
    }
}
