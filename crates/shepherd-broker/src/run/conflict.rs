//! Which files a task means to write, guessed from its text, so two parallel writers that would
//! trample each other are refused before anything launches.
//!
//! The original looked for a write verb within 120 characters of a file-like path, skipping
//! negations. That also flags `Read src/a.rs and write a summary to notes.md` as writing
//! `src/a.rs`. Here a path belongs to the verb nearest before it in the same sentence (within
//! 120 characters), read verbs count too, and only a write verb that is not negated ("do not
//! edit") makes the path a write target; a path with no verb before it takes the first verb
//! after it in its sentence ("src/a.rs needs updating"). Paths are made absolute against the
//! task's working directory (`~`, `..` and symlinks resolved), and two claims collide when they
//! name the same file or one lies inside the other.

use std::path::{Component, Path, PathBuf};

/// How far (in characters) a verb may be from the path it governs.
const REACH: usize = 120;

const WRITE_VERBS: &[&str] = &[
    "write",
    "edit",
    "modify",
    "change",
    "update",
    "create",
    "delete",
    "remove",
    "rename",
    "move",
    "refactor",
    "fix",
    "implement",
    "add",
    "patch",
    "rewrite",
    "replace",
    "append",
    "overwrite",
    "generate",
    "format",
    "insert",
    "save",
    "touch",
    "migrate",
    "scaffold",
    "rm",
    "mv",
];

const IRREGULAR_WRITES: &[&str] = &[
    "wrote",
    "written",
    "rewrote",
    "rewritten",
    "overwrote",
    "overwritten",
];

const READ_VERBS: &[&str] = &[
    "read",
    "review",
    "inspect",
    "look",
    "examine",
    "analyse",
    "analyze",
    "check",
    "summarise",
    "summarize",
    "list",
    "grep",
    "search",
    "study",
    "explain",
    "describe",
    "compare",
    "audit",
    "see",
    "view",
    "open",
    "scan",
    "consult",
    "cite",
    "quote",
];

const NEGATIONS: &[&str] = &[
    "not", "don't", "dont", "never", "without", "avoid", "no", "nor", "won't", "mustn't",
];

/// Words that look like `name.ext` but are not files.
const NOT_PATHS: &[&str] = &["e.g", "i.e", "etc", "vs", "a.m", "p.m"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Write,
    Read,
}

#[derive(Debug)]
struct Token {
    /// Character offset of the token's start.
    at: usize,
    /// The token with surrounding punctuation removed.
    word: String,
    /// Whether a sentence ends after this token.
    ends_sentence: bool,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = 0;
    for line in text.split_inclusive('\n') {
        let mut raw_tokens = line.split_whitespace().peekable();
        let mut offset_in_line = 0;
        while let Some(raw) = raw_tokens.next() {
            let start = line[offset_in_line..]
                .find(raw)
                .map_or(0, |i| i + offset_in_line);
            offset_in_line = start + raw.len();
            let at = chars + line[..start].chars().count();
            let closers = |c: char| matches!(c, '"' | '\'' | '`' | ')' | ']' | '}' | '>' | '*');
            let bare = raw.trim_end_matches(closers);
            let ends = bare.ends_with(['.', '!', '?', ';']) || raw_tokens.peek().is_none();
            let word = raw
                .trim_start_matches(|c: char| {
                    matches!(c, '"' | '\'' | '`' | '(' | '[' | '{' | '<' | '*')
                })
                .trim_end_matches(|c: char| {
                    closers(c) || matches!(c, '.' | ',' | ';' | ':' | '!' | '?')
                })
                .to_owned();
            out.push(Token {
                at,
                word,
                ends_sentence: ends,
            });
        }
        chars += line.chars().count();
    }
    out
}

fn inflections(base: &str) -> Vec<String> {
    let mut forms = vec![
        base.to_owned(),
        format!("{base}s"),
        format!("{base}es"),
        format!("{base}ed"),
        format!("{base}d"),
        format!("{base}ing"),
    ];
    if let Some(stem) = base.strip_suffix('e') {
        forms.push(format!("{stem}ing"));
    }
    if let Some(stem) = base.strip_suffix('y') {
        forms.push(format!("{stem}ies"));
        forms.push(format!("{stem}ied"));
    }
    forms
}

fn verb(word: &str) -> Option<Verb> {
    let word = word.to_lowercase();
    let is = |bases: &[&str]| bases.iter().any(|base| inflections(base).contains(&word));
    if is(WRITE_VERBS) || IRREGULAR_WRITES.contains(&word.as_str()) {
        Some(Verb::Write)
    } else if is(READ_VERBS) {
        Some(Verb::Read)
    } else {
        None
    }
}

fn looks_like_path(word: &str) -> bool {
    if word.is_empty() || word.contains("://") || word.contains('@') || word.ends_with("..") {
        return false;
    }
    if word.starts_with("~/") || word.starts_with("./") || word.starts_with("../") {
        return true;
    }
    if word.contains('/') {
        return word.chars().any(char::is_alphanumeric);
    }
    if NOT_PATHS.contains(&word.to_lowercase().as_str()) {
        return false;
    }
    // `name.ext`: a name and an extension with a letter in it (not `3.14` or `1.2.3`).
    match word.rsplit_once('.') {
        Some((name, ext)) => {
            !name.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.chars().all(char::is_alphanumeric)
                && ext.chars().any(char::is_alphabetic)
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
        }
        None => false,
    }
}

fn negated(tokens: &[Token], verb_at: usize) -> bool {
    tokens[verb_at.saturating_sub(3)..verb_at]
        .iter()
        .any(|t| NEGATIONS.contains(&t.word.to_lowercase().as_str()))
}

/// The paths `task` says it will write, as written in the text.
pub(super) fn write_targets(task: &str) -> Vec<String> {
    let tokens = tokens(task);
    let mut sentence_start = 0;
    let mut found = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        if looks_like_path(&token.word) && verb(&token.word).is_none() {
            let before = tokens[sentence_start..index]
                .iter()
                .enumerate()
                .rev()
                .map(|(i, t)| (i + sentence_start, t))
                .take_while(|(_, t)| token.at - t.at <= REACH)
                .find_map(|(i, t)| verb(&t.word).map(|v| (i, v)));
            let after = || {
                tokens[index + 1..]
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (i + index + 1, t))
                    .take_while(|(_, t)| t.at - token.at <= REACH)
                    .scan(false, |ended, (i, t)| {
                        let stop = *ended;
                        *ended = t.ends_sentence;
                        (!stop).then_some((i, t))
                    })
                    .find_map(|(i, t)| verb(&t.word).map(|v| (i, v)))
            };
            let governing = match before {
                Some(found) => Some(found),
                None if !token.ends_sentence => after(),
                None => None,
            };
            if let Some((at, Verb::Write)) = governing
                && !negated(&tokens, at)
            {
                found.push(token.word.clone());
            }
        }
        if token.ends_sentence {
            sentence_start = index + 1;
        }
    }
    found
}

/// A path as a task names it, made absolute against `cwd`: `~` expanded, `.` and `..` folded,
/// and the longest existing prefix resolved through symlinks.
pub(super) fn canonical_claim(path: &str, cwd: &Path, home: &Path) -> PathBuf {
    let joined = match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => cwd.join(path),
    };
    let mut folded = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    let mut existing = folded.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.pop()) {
            (Some(name), true) => rest.push(name),
            _ => return folded,
        }
    }
}

/// Whether two claims collide: the same path, or one inside the other.
pub(super) fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_verbs_claim_the_paths_they_govern() {
        assert_eq!(
            write_targets("Fix the login bug in src/auth/login.rs."),
            vec!["src/auth/login.rs"]
        );
        assert_eq!(
            write_targets("Please update `README.md` and add tests to tests/login.rs"),
            vec!["README.md", "tests/login.rs"]
        );
        assert_eq!(
            write_targets("src/lib.rs needs to be refactored"),
            vec!["src/lib.rs"]
        );
    }

    #[test]
    fn reading_negation_and_other_sentences_do_not_claim() {
        assert!(write_targets("Read src/a.rs and summarise it.").is_empty());
        assert_eq!(
            write_targets("Read src/a.rs and write a summary to notes.md"),
            vec!["notes.md"]
        );
        assert!(write_targets("Do not edit src/main.rs; only review it.").is_empty());
        assert!(write_targets("Fix nothing. Look at Cargo.toml").is_empty());
        assert!(write_targets("Update the docs, e.g. add more examples.").is_empty());
        assert!(write_targets("edit https://example.com/a.html").is_empty());
        assert!(write_targets("change pi to 3.14 in version 1.2.3").is_empty());
    }

    #[test]
    fn claims_are_made_absolute_and_compared_by_containment() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("link")).unwrap();
        let home = root.join("home");
        let a = canonical_claim("src/main.rs", &root, &home);
        let b = canonical_claim("./link/../src/main.rs", &root, &home);
        assert_eq!(a, b);
        let c = canonical_claim("link/main.rs", &root, &home);
        assert_eq!(a, c);
        let dir_claim = canonical_claim("src", &root, &home);
        assert!(overlaps(&dir_claim, &a));
        assert!(!overlaps(&canonical_claim("docs/x.md", &root, &home), &a));
        assert_eq!(
            canonical_claim("~/notes.md", &root, &home),
            home.join("notes.md")
        );
    }
}
