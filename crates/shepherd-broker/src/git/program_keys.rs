//! The configuration keys that make git run a program, written down once, and the check that
//! refuses a repository whose own configuration sets one.
//!
//! Shepherd's git turns hooks and the fsmonitor hook off on its command line (see the parent
//! module), but git has many more keys whose value is a command it runs (a filter, a textconv,
//! an editor, an SSH command…) or that send git to a place a sheep chose (`core.worktree`, an
//! `include.path` outside the repository). Before Shepherd runs git in a repository a sheep
//! could have configured and Shepherd has not put back itself (a worktree of the layout from
//! before each isolated sheep got a repository of its own, whose shared configuration a sheep
//! could write), it lists that repository's configuration (following includes) and refuses
//! with the first such key its local or worktree scope sets, naming the file.
//!
//! The list follows git's own documentation of `git config` (`git help config`): every key
//! described as a command, program, helper, driver or hook, and the keys that move where git
//! looks. Keys of commands Shepherd never runs (`sendemail`, `imap`, `difftool`, `browser`…)
//! are listed too, so the list stays true whatever git is asked next.

use std::path::{Path, PathBuf};

use super::{Git, GitError};

/// Which part of a key a rule matches: `section.variable` or `section.<subsection>.variable`.
#[derive(Debug, Clone, Copy)]
struct Rule {
    section: &'static str,
    /// Whether the key has a subsection (`filter.<driver>.clean`): `true` matches any.
    subsection: bool,
    /// The variable; `None` matches any (`pager.<command>`).
    variable: Option<&'static str>,
    /// When the key is refused.
    when: When,
}

/// Which values of a key are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// Any value that is not empty (an empty value resets a key to nothing).
    Set,
    /// A value that is not a boolean (`core.fsmonitor = true` is git's own daemon).
    NotBoolean,
    /// A value starting with `!` (`submodule.<name>.update = !command`).
    Bang,
    /// A file outside the repository's git directory (`include.path`).
    Outside,
    /// A value that allows the `ext::` transport.
    AllowsExt,
    /// `always` (`protocol.allow`, which allows every transport, `ext::` among them).
    Always,
}

const fn key(section: &'static str, variable: &'static str) -> Rule {
    Rule {
        section,
        subsection: false,
        variable: Some(variable),
        when: When::Set,
    }
}

const fn sub(section: &'static str, variable: &'static str) -> Rule {
    Rule {
        section,
        subsection: true,
        variable: Some(variable),
        when: When::Set,
    }
}

const fn when(rule: Rule, when: When) -> Rule {
    Rule { when, ..rule }
}

/// Every key that runs a program or moves where git looks, as `git help config` describes it.
const RULES: &[Rule] = &[
    // The fsmonitor hook (a path; `true` and `false` are git's own daemon, or none).
    when(key("core", "fsmonitor"), When::NotBoolean),
    key("core", "hookspath"),
    key("core", "sshcommand"),
    key("core", "gitproxy"),
    key("core", "askpass"),
    key("core", "editor"),
    key("core", "pager"),
    key("core", "alternaterefscommand"),
    // Not a program, but it moves the work tree git changes.
    key("core", "worktree"),
    sub("filter", "clean"),
    sub("filter", "smudge"),
    sub("filter", "process"),
    sub("diff", "textconv"),
    sub("diff", "command"),
    key("diff", "external"),
    sub("merge", "driver"),
    sub("difftool", "cmd"),
    sub("difftool", "path"),
    sub("mergetool", "cmd"),
    sub("mergetool", "path"),
    key("gpg", "program"),
    sub("gpg", "program"),
    sub("gpg", "defaultkeycommand"),
    key("credential", "helper"),
    sub("credential", "helper"),
    sub("remote", "uploadpack"),
    sub("remote", "receivepack"),
    sub("remote", "vcs"),
    key("uploadpack", "packobjectshook"),
    key("sequence", "editor"),
    Rule {
        section: "pager",
        subsection: false,
        variable: None,
        when: When::Set,
    },
    sub("trailer", "command"),
    sub("trailer", "cmd"),
    when(sub("submodule", "update"), When::Bang),
    // Configured hooks (`hook.<name>.command`, newer git).
    sub("hook", "command"),
    key("imap", "tunnel"),
    key("sendemail", "tocmd"),
    key("sendemail", "cccmd"),
    key("sendemail", "headercmd"),
    key("sendemail", "smtpserver"),
    sub("browser", "cmd"),
    sub("browser", "path"),
    sub("man", "cmd"),
    sub("man", "path"),
    sub("guitool", "cmd"),
    // A file included from outside the repository brings in keys from wherever it is.
    when(key("include", "path"), When::Outside),
    when(sub("includeif", "path"), When::Outside),
    // `ext::<command>` URLs run their command once the transport is allowed.
    when(sub("protocol", "allow"), When::AllowsExt),
    when(key("protocol", "allow"), When::Always),
];

/// Refuses when the configuration `git` reads (in the repository whose git directory is
/// `git_dir`) sets, in its local or worktree scope, a key of [`RULES`]; names the key and the
/// file. A configuration git cannot read is refused too.
pub(crate) fn refuse(git: &Git, git_dir: &Path) -> Result<(), GitError> {
    let listed = git.output(&[
        "config",
        "--list",
        "--includes",
        "--show-origin",
        "--show-scope",
        "-z",
    ])?;
    if !listed.success {
        return Err(GitError::Failed {
            args: "config --list".to_owned(),
            message: listed.complaint(),
        });
    }
    let git_dir = fs_err::canonicalize(git_dir).unwrap_or_else(|_| git_dir.to_path_buf());
    for entry in entries(&listed.stdout) {
        if !matches!(entry.scope, "local" | "worktree") {
            continue;
        }
        let file = git.dir().join(entry.file());
        if refused(&entry, &file, &git_dir) {
            return Err(GitError::ProgramKey {
                key: entry.key.to_owned(),
                value: entry.value.to_owned(),
                file: file.display().to_string(),
            });
        }
    }
    Ok(())
}

/// One entry of `git config --list --show-origin --show-scope -z`.
#[derive(Debug, PartialEq, Eq)]
struct Entry<'a> {
    scope: &'a str,
    origin: &'a str,
    key: &'a str,
    value: &'a str,
}

impl Entry<'_> {
    /// The file that sets it (`file:<path>`; a repository's own file relative to where git
    /// ran).
    fn file(&self) -> PathBuf {
        PathBuf::from(self.origin.strip_prefix("file:").unwrap_or(self.origin))
    }
}

/// The entries of a `-z` listing: `scope NUL origin NUL key LF value NUL`, or `key NUL` for a
/// key set without a value.
fn entries(listing: &str) -> Vec<Entry<'_>> {
    let mut fields = listing.split('\0');
    let mut found = Vec::new();
    while let (Some(scope), Some(origin), Some(pair)) =
        (fields.next(), fields.next(), fields.next())
    {
        let (key, value) = pair.split_once('\n').unwrap_or((pair, ""));
        found.push(Entry {
            scope,
            origin,
            key,
            value,
        });
    }
    found
}

fn refused(entry: &Entry<'_>, file: &Path, git_dir: &Path) -> bool {
    let Some((section, rest)) = entry.key.split_once('.') else {
        return false;
    };
    let (subsection, variable) = match rest.rsplit_once('.') {
        Some((subsection, variable)) => (Some(subsection), variable),
        None => (None, rest),
    };
    let section = section.to_ascii_lowercase();
    let variable = variable.to_ascii_lowercase();
    let value = entry.value.trim();
    RULES.iter().any(|rule| {
        rule.section == section
            && rule.subsection == subsection.is_some()
            && rule.variable.is_none_or(|v| v == variable)
            && match rule.when {
                When::Set => !value.is_empty(),
                When::NotBoolean => !is_boolean(value),
                When::Bang => value.starts_with('!'),
                When::Outside => !inside(file, value, git_dir),
                When::AllowsExt => {
                    subsection.is_some_and(|s| s.eq_ignore_ascii_case("ext"))
                        && !value.eq_ignore_ascii_case("never")
                }
                When::Always => value.eq_ignore_ascii_case("always"),
            }
    })
}

/// git's spellings of a boolean (an empty value is false).
fn is_boolean(value: &str) -> bool {
    ["", "true", "false", "yes", "no", "on", "off", "1", "0"]
        .iter()
        .any(|b| value.eq_ignore_ascii_case(b))
}

/// Whether an include of `value`, written in `file`, names a file inside `git_dir`.
fn inside(file: &Path, value: &str, git_dir: &Path) -> bool {
    if value.starts_with('~') || value.is_empty() {
        return value.is_empty();
    }
    let Some(base) = file.parent() else {
        return false;
    };
    // A relative include is relative to the file that includes it.
    let target = base.join(value);
    let target = fs_err::canonicalize(&target).unwrap_or(target);
    // `..` left in a path that does not exist is not followed: it stays outside.
    target.starts_with(git_dir) && !target.components().any(|c| c.as_os_str() == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        dir
    }

    fn set(dir: &Path, key: &str, value: &str) {
        let out = Command::new("git")
            .args(["config", key, value])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    #[test]
    fn a_clean_repository_passes_and_each_program_key_is_refused_by_name() {
        let dir = repo();
        let git_dir = dir.path().join(".git");
        set(dir.path(), "core.fsmonitor", "false");
        set(dir.path(), "user.name", "someone");
        set(dir.path(), "submodule.x.update", "rebase");
        refuse(&Git::at(dir.path()), &git_dir).unwrap();
        for (key, value) in [
            ("core.fsmonitor", "echo hi"),
            ("core.hooksPath", "hooks"),
            ("filter.x.clean", "cat"),
            ("diff.x.textconv", "cat"),
            ("diff.external", "true"),
            ("merge.y.driver", "true"),
            ("gpg.ssh.program", "true"),
            ("credential.https://example.com.helper", "store"),
            ("remote.origin.uploadpack", "true"),
            ("pager.log", "less"),
            ("submodule.x.update", "!sh"),
            ("protocol.ext.allow", "always"),
            ("include.path", "/etc/gitconfig-elsewhere"),
        ] {
            let fresh = repo();
            set(fresh.path(), key, value);
            let err = refuse(&Git::at(fresh.path()), &fresh.path().join(".git")).unwrap_err();
            match &err {
                GitError::ProgramKey {
                    key: named, file, ..
                } => {
                    assert!(named.eq_ignore_ascii_case(key), "{key}: {err}");
                    assert!(file.ends_with("config"), "{key}: {err}");
                }
                other => panic!("{key}: {other}"),
            }
        }
    }

    #[test]
    fn a_key_from_an_included_file_is_refused_naming_that_file() {
        let dir = repo();
        let git_dir = dir.path().join(".git");
        fs_err::write(git_dir.join("more"), "[filter \"x\"]\n\tsmudge = cat\n").unwrap();
        set(dir.path(), "include.path", "more");
        let err = refuse(&Git::at(dir.path()), &git_dir).unwrap_err();
        assert!(
            matches!(&err, GitError::ProgramKey { key, file, .. } if key == "filter.x.smudge" && file.ends_with("/more")),
            "{err}"
        );
    }

    #[test]
    fn the_listing_parses_keys_with_and_without_values() {
        let listing =
            "local\0file:.git/config\0core.bare\nfalse\0local\0file:.git/config\0x.flag\0";
        let found = entries(listing);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].key, "x.flag");
        assert_eq!(found[1].value, "");
    }
}
