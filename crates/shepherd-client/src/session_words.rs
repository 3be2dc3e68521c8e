//! How a result says which fieldnotes session a delegation's note went to, in the same words
//! at every front end: a session named by the caller is either new or continued, and a
//! continued one says so, as `shepherd run` has always said "(continued)".

/// ` in session `fix-login` (continued)`, ` in session `fix-login` (new)`.
pub fn named_session(name: &str, continued: bool) -> String {
    let state = if continued { "continued" } else { "new" };
    format!(" in session `{name}` ({state})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continued_session_says_so() {
        assert_eq!(named_session("fix", true), " in session `fix` (continued)");
        assert_eq!(named_session("fix", false), " in session `fix` (new)");
    }
}
