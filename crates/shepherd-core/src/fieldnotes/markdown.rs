//! Small Markdown helpers shared by the renderers, so a name with brackets or backticks can
//! never break a link or a code span in a file a person reads.

/// The original's display form of a name: runs of `-` and `_` become a space and the first
/// ASCII letter of every word is capitalised (`code-reviewer` → `Code Reviewer`).
pub(crate) fn display_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_word = false;
    let mut in_separator = false;
    for c in name.chars() {
        if c == '-' || c == '_' {
            if !in_separator {
                out.push(' ');
            }
            in_separator = true;
            in_word = false;
            continue;
        }
        in_separator = false;
        let word_char = c.is_ascii_alphanumeric();
        if word_char && !in_word {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c);
        }
        in_word = word_char;
    }
    out
}

/// Escapes text for use inside `[…]` of a link.
pub(crate) fn link_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '[' | ']' | '\\' | '`' | '*' | '_' | '<' | '>') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A link destination, wrapped in `<…>` when it holds characters a bare destination cannot.
pub(crate) fn link_destination(href: &str) -> String {
    if href.contains([' ', '(', ')']) {
        format!("<{href}>")
    } else {
        href.to_owned()
    }
}

/// `[text](href)` with both parts escaped.
pub(crate) fn link(text: &str, href: &str) -> String {
    format!("[{}]({})", link_text(text), link_destination(href))
}

/// A code span holding `text` verbatim, whatever backticks it contains.
pub(crate) fn inline_code(text: &str) -> String {
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_match_the_original() {
        assert_eq!(display_name("code-reviewer"), "Code Reviewer");
        assert_eq!(display_name("fix__oauth--login"), "Fix Oauth Login");
        assert_eq!(display_name("v2.scout"), "V2.Scout");
        assert_eq!(display_name("élan"), "éLan");
    }

    #[test]
    fn links_and_code_spans_are_escaped() {
        assert_eq!(link("a]b", "./x.md"), "[a\\]b](./x.md)");
        assert_eq!(link("t", "../my file.md"), "[t](<../my file.md>)");
        assert_eq!(inline_code("plain"), "`plain`");
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(inline_code("`x"), "`` `x ``");
    }
}
