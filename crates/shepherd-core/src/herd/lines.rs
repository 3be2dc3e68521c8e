//! Text cut to one readable line: a task's title, a message's preview, the last line a sheep
//! printed. The records (a receipt's preview) and the views (titles, last lines) both take
//! their lines here.

/// Longest a line taken from text (a task's title, a last line) is kept, in characters.
const LINE_CHARS: usize = 240;

/// The first non-blank line of `text`, trimmed and cut to a readable length.
pub fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    cut(line.unwrap_or_default())
}

/// The last non-blank line of `text`, trimmed and cut to a readable length.
pub fn last_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(cut)
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
