//! The few helpers every page's HTML is written with: escaping text, encoding a path for a URL,
//! and the page a note's absolute path has. Pure.

use std::fmt::Write as _;
use std::path::Path;

/// `text` safe to put in HTML text or a quoted attribute.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A path (slashes kept) percent-encoded for a URL.
pub(crate) fn path_url(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The page of `note` (an absolute path, as the herd view gives it) when it lies in `root`.
pub(crate) fn note_url(root: &Path, note: &str) -> Option<String> {
    let relative = Path::new(note).strip_prefix(root).ok()?;
    Some(format!("/files/{}", path_url(relative.to_str()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_note_inside_the_project_gets_its_page() {
        let root = Path::new("/p");
        assert_eq!(
            note_url(root, "/p/.shepherd/sessions/s 1/a.md").as_deref(),
            Some("/files/.shepherd/sessions/s%201/a.md")
        );
        assert_eq!(note_url(root, "/elsewhere/a.md"), None);
    }

    #[test]
    fn a_path_is_encoded_but_keeps_its_slashes() {
        assert_eq!(path_url("a b/c?.md"), "a%20b/c%3F.md");
    }
}
