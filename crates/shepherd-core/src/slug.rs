//! Filesystem-safe slugs for session and agent names, and the name checks that guard them.
//!
//! A session name is chosen by a person or a model and ends up as part of a directory name
//! under `.shepherd/sessions/`, so it is checked before anything is written: a name that could
//! name a path (separators, `.`/`..`, absolute paths), that hides characters (NUL and other
//! control characters) or that leaves nothing after slugging is refused with an error naming
//! the value. Agent names are never refused: they are only slugged into note file names, with
//! `agent` as the fallback. The slug rule is the original extension's, so both programs derive
//! the same directory and file names: NFKD, combining marks dropped, lowercase, every run of
//! characters outside `[a-z0-9]` turned into one `-`, dashes trimmed, then cut to a length limit.

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Longest session slug, in characters (the original's limit).
pub const MAX_SESSION_SLUG: usize = 64;
/// Longest agent slug in a note file name, in characters (the original's limit).
pub const MAX_AGENT_SLUG: usize = 48;
/// Longest accepted session name, in characters. Longer names are refused rather than cut,
/// so two long names that differ only at the end can never be confused.
pub const MAX_SESSION_NAME: usize = 200;
/// Session name used when a session is created for a task with no usable words.
pub const FALLBACK_SESSION_NAME: &str = "delegation";
/// Agent slug used when an agent name has no usable characters.
pub const FALLBACK_AGENT_SLUG: &str = "agent";
/// How many words of a first task become the name of a session created for it.
const TASK_NAME_WORDS: usize = 8;

/// Why a session name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid session name {name:?}: {reason}; use a short descriptive name such as `fix-oauth-login` \
     (letters, digits, spaces and punctuation other than `/` and `\\`, at most {MAX_SESSION_NAME} characters)"
)]
pub struct NameError {
    /// The name as given.
    pub name: String,
    /// What is wrong with it.
    pub reason: NameProblem,
}

/// The specific problem with a refused session name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    /// Empty or only whitespace.
    #[error("it is empty")]
    Empty,
    /// Contains NUL or another control character.
    #[error("it contains a control character")]
    ControlCharacter,
    /// Contains `/` or `\`, or is an absolute path.
    #[error("it contains a path separator")]
    PathSeparator,
    /// Is `.` or `..`.
    #[error("it is a path traversal component")]
    Traversal,
    /// Longer than [`MAX_SESSION_NAME`] characters.
    #[error("it is longer than {MAX_SESSION_NAME} characters")]
    TooLong,
    /// Nothing is left after slugging (e.g. only punctuation).
    #[error("it has no letters or digits")]
    NoUsableCharacters,
}

/// Checks a session name and returns it trimmed of surrounding whitespace (as the original
/// extension does), ready to be stored and matched exactly.
pub fn validate_session_name(name: &str) -> Result<&str, NameError> {
    let refuse = |reason| {
        Err(NameError {
            name: name.to_owned(),
            reason,
        })
    };
    if name.chars().any(char::is_control) {
        return refuse(NameProblem::ControlCharacter);
    }
    if name.contains(['/', '\\']) {
        return refuse(NameProblem::PathSeparator);
    }
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return refuse(NameProblem::Empty);
    }
    if trimmed == "." || trimmed == ".." {
        return refuse(NameProblem::Traversal);
    }
    if trimmed.chars().count() > MAX_SESSION_NAME {
        return refuse(NameProblem::TooLong);
    }
    if slugify(trimmed, MAX_SESSION_SLUG).is_empty() {
        return refuse(NameProblem::NoUsableCharacters);
    }
    Ok(trimmed)
}

/// The directory slug for a session name, after [`validate_session_name`].
pub fn session_slug(name: &str) -> Result<String, NameError> {
    validate_session_name(name).map(|name| slugify(name, MAX_SESSION_SLUG))
}

/// The file-name component for an agent name; never empty, never refused.
pub fn agent_slug(agent: &str) -> String {
    let slug = slugify(agent, MAX_AGENT_SLUG);
    if slug.is_empty() {
        FALLBACK_AGENT_SLUG.to_owned()
    } else {
        slug
    }
}

/// The name of a session created for a task without an explicit name: the slug of the task's
/// first eight words, or [`FALLBACK_SESSION_NAME`].
///
/// Task text is slugged rather than validated (the original refused a task whose first words
/// held a path and fell back to `delegation`; a slug of `Fix src/auth.rs` is more useful).
pub fn session_name_from_task(task: Option<&str>) -> String {
    let words: Vec<&str> = task
        .unwrap_or_default()
        .split_whitespace()
        .take(TASK_NAME_WORDS)
        .collect();
    let slug = slugify(&words.join(" "), MAX_SESSION_SLUG);
    if slug.is_empty() {
        FALLBACK_SESSION_NAME.to_owned()
    } else {
        slug
    }
}

/// Lowercase `[a-z0-9-]` slug of `text`, at most `max` characters, with no leading, trailing or
/// doubled dashes. May be empty.
pub fn slugify(text: &str, max: usize) -> String {
    let mut slug = String::new();
    let mut pending_dash = false;
    for c in text.nfkd().filter(|c| !is_combining_mark(*c)) {
        for lower in c.to_lowercase() {
            if lower.is_ascii_lowercase() || lower.is_ascii_digit() {
                if pending_dash && !slug.is_empty() {
                    slug.push('-');
                }
                pending_dash = false;
                slug.push(lower);
            } else {
                pending_dash = true;
            }
        }
    }
    truncate_slug(&slug, max).to_owned()
}

/// Cuts an ASCII slug to `max` characters and drops the dashes the cut leaves at its end.
pub fn truncate_slug(slug: &str, max: usize) -> &str {
    let cut = slug.get(..max).unwrap_or(slug);
    cut.trim_end_matches('-')
}

/// The first eight hex digits of the SHA-256 of `text`: the original's short, stable tag for
/// parent identities and slug-collision suffixes.
pub fn hash8(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    hex::encode(&digest[..4])
}

/// Whether `slug` has the shape every slug produced here has.
pub fn is_safe_slug(slug: &str) -> bool {
    !slug.is_empty()
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--")
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_original_rule() {
        assert_eq!(session_slug("Fix OAuth Login").unwrap(), "fix-oauth-login");
        assert_eq!(
            session_slug("  Crème brûlée: v2!  ").unwrap(),
            "creme-brulee-v2"
        );
        assert_eq!(session_slug("ＡＢＣ１２３").unwrap(), "abc123");
        assert_eq!(agent_slug("Code Reviewer"), "code-reviewer");
        assert_eq!(agent_slug("???"), "agent");
        assert_eq!(agent_slug(""), "agent");
    }

    #[test]
    fn long_slugs_are_cut_without_a_trailing_dash() {
        let name = format!("{}-b", "a".repeat(63));
        assert_eq!(session_slug(&name).unwrap(), "a".repeat(63));
        assert_eq!(agent_slug(&"x".repeat(100)).len(), MAX_AGENT_SLUG);
    }

    #[test]
    fn unsafe_names_are_refused_with_the_value() {
        for (name, problem) in [
            ("", NameProblem::Empty),
            ("   ", NameProblem::Empty),
            ("a\0b", NameProblem::ControlCharacter),
            ("a\nb", NameProblem::ControlCharacter),
            ("../etc", NameProblem::PathSeparator),
            ("/abs", NameProblem::PathSeparator),
            ("a\\b", NameProblem::PathSeparator),
            (".", NameProblem::Traversal),
            (" .. ", NameProblem::Traversal),
            ("!!!", NameProblem::NoUsableCharacters),
        ] {
            let err = validate_session_name(name).unwrap_err();
            assert_eq!(err.reason, problem, "{name:?}");
            assert!(err.to_string().contains(&format!("{name:?}")));
        }
        let long = "a".repeat(MAX_SESSION_NAME + 1);
        assert_eq!(
            validate_session_name(&long).unwrap_err().reason,
            NameProblem::TooLong
        );
        assert_eq!(
            validate_session_name(&"a".repeat(MAX_SESSION_NAME)).unwrap(),
            "a".repeat(MAX_SESSION_NAME)
        );
    }

    #[test]
    fn task_names_use_the_first_eight_words() {
        assert_eq!(
            session_name_from_task(Some(
                "Fix the OAuth login bug in the auth service today please"
            )),
            "fix-the-oauth-login-bug-in-the-auth"
        );
        assert_eq!(session_name_from_task(Some("  ")), "delegation");
        assert_eq!(session_name_from_task(None), "delegation");
        assert_eq!(session_name_from_task(Some("?? !!")), "delegation");
        assert_eq!(
            session_name_from_task(Some("Fix src/auth.rs now")),
            "fix-src-auth-rs-now"
        );
    }

    #[test]
    fn hash8_is_the_sha256_prefix() {
        assert_eq!(hash8("abc"), "ba7816bf");
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn slugs_are_always_safe(text in any::<String>(), max in 1usize..80) {
            let slug = slugify(&text, max);
            prop_assert!(slug.is_empty() || is_safe_slug(&slug), "{slug:?}");
            prop_assert!(slug.len() <= max);
            let agent = agent_slug(&text);
            prop_assert!(is_safe_slug(&agent) && agent.len() <= MAX_AGENT_SLUG);
        }

        #[test]
        fn accepted_names_never_name_a_path(name in any::<String>()) {
            if let Ok(accepted) = validate_session_name(&name) {
                prop_assert!(!accepted.contains(['/', '\\', '\0']));
                prop_assert!(accepted != "." && accepted != "..");
                prop_assert!(!accepted.chars().any(char::is_control));
                prop_assert!(accepted.chars().count() <= MAX_SESSION_NAME);
                let slug = session_slug(accepted).unwrap();
                prop_assert!(is_safe_slug(&slug) && slug.len() <= MAX_SESSION_SLUG);
            }
        }

        #[test]
        fn traversal_is_always_refused(
            head in "[a-z]{0,5}",
            sep in prop::sample::select(vec!["/", "\\", "/../", "..\\", "\0", "\n"]),
            tail in "[a-z]{0,5}",
        ) {
            let name = format!("{head}{sep}{tail}");
            prop_assert!(validate_session_name(&name).is_err(), "{name:?}");
        }

        #[test]
        fn slugging_is_idempotent(text in "\\PC{0,80}") {
            let slug = slugify(&text, MAX_SESSION_SLUG);
            prop_assert_eq!(slugify(&slug, MAX_SESSION_SLUG), slug.clone());
        }
    }
}
