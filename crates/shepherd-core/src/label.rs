//! Sheep labels and display names (`<agent>: <label>`).
//!
//! A label is the short, human-chosen name of one sheep's job ("code review"), shown next to the
//! agent definition's name everywhere a person looks: pane titles, the herd widget, notes,
//! messages. It is presentation only: sheep are always addressed by their opaque id, never by a
//! label. Spawn checks the label before anything else, so a bad label fails fast with the stable
//! code `invalid_label` and changes nothing. An empty label is legal and repeats freely; a
//! non-empty display name must be unique within one herd, and the herd rejects a duplicate rather
//! than numbering it: Shepherd never invents labels.

use crate::error_code::ErrorCode;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// The longest label accepted, in characters (not bytes).
pub const MAX_LABEL_CHARS: usize = 64;

/// What a label may contain, as shown in error messages.
pub const ALLOWED_LABEL_CHARS: &str =
    "letters, digits, spaces, '_', '-' and '.' (at most 64 characters)";

/// The separator between agent and label in a display name; therefore never part of a label.
const SEPARATOR: char = ':';

/// A validated label: trimmed, NFC-normalised, possibly empty (no label).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct Label(String);

impl Label {
    /// The empty label: the sheep is shown by its agent name alone.
    pub fn none() -> Self {
        Self::default()
    }

    /// The label text; empty when there is no label.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the empty label.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Label {
    type Error = LabelError;

    fn try_from(raw: String) -> Result<Self, Self::Error> {
        validate_label(&raw)
    }
}

impl From<Label> for String {
    fn from(label: Label) -> Self {
        label.0
    }
}

/// Why a label was refused. Every variant carries the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// More than [`MAX_LABEL_CHARS`] characters after trimming.
    #[error(
        "Invalid label {value:?}: it has {chars} characters; a label may contain {ALLOWED_LABEL_CHARS}."
    )]
    TooLong {
        /// The trimmed label.
        value: String,
        /// Its length in characters.
        chars: usize,
    },
    /// A character outside the allowed set (`:`, control characters, punctuation, …).
    #[error(
        "Invalid label {value:?}: {} is not allowed; a label may contain {ALLOWED_LABEL_CHARS}.",
        describe_char(*character)
    )]
    BadCharacter {
        /// The trimmed label.
        value: String,
        /// The first character that is not allowed.
        character: char,
    },
}

impl LabelError {
    /// The stable machine-readable code of every label error.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidLabel
    }
}

/// Checks and normalises a raw label.
///
/// Leading and trailing whitespace is trimmed and the result NFC-normalised, so that a label
/// typed with combining accents and one typed with precomposed letters are the same label (and
/// collide as duplicates). Empty after trimming means no label. Case is preserved.
pub fn validate_label(raw: &str) -> Result<Label, LabelError> {
    let value: String = raw.trim().nfc().collect();
    if let Some(character) = value.chars().find(|&c| !is_allowed(c)) {
        return Err(LabelError::BadCharacter { value, character });
    }
    let chars = value.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(LabelError::TooLong { value, chars });
    }
    Ok(Label(value))
}

/// What a sheep Shepherd starts by itself is for. Such a sheep carries its role in the agent
/// part of its display name, and the label of the sheep whose work it handles (when there is
/// one), never a label Shepherd makes up: a resolver of agent `claude-resolver` for the branch
/// of `worker: fix-login` shows as `claude-resolver (resolver): fix-login`, a fixer as
/// `fixer (fixer): fix-login`, and with no label just `claude-resolver (resolver)`. The label
/// is one a sheep already had, so it is valid as it is, whatever its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Resolves a merge conflict for the merge queue.
    Resolver,
    /// Fixes what makes a merge's check fail.
    Fixer,
    /// Takes over a task whose sheep waits on a lasting provider limit.
    Fallback,
}

impl Role {
    /// The word its display name carries.
    pub fn word(self) -> &'static str {
        match self {
            Self::Resolver => "resolver",
            Self::Fixer => "fixer",
            Self::Fallback => "fallback",
        }
    }
}

/// The agent part of a display name: the agent, with the role of a sheep Shepherd started by
/// itself (`claude-resolver (resolver)`). A fallback names what it runs on too, since that is
/// what differs from the sheep it stands in for: the coding agent (`worker (fallback, codex)`)
/// and, when its `fallback:` entry names a credential, that account (`worker (fallback,
/// claude-code, WORK_KEY)`). `agent` is always the definition's name — a fallback of a fallback
/// is named from it, not from the name of the sheep it stands in for — so the role is said
/// once, and each entry of a definition's `fallback:` has a name of its own.
pub fn agent_part(agent: &str, role: Option<Role>, harness: &str, account: Option<&str>) -> String {
    match (role, account) {
        (Some(Role::Fallback), Some(account)) => {
            format!("{agent} ({}, {harness}, {account})", Role::Fallback.word())
        }
        (Some(Role::Fallback), None) => format!("{agent} ({}, {harness})", Role::Fallback.word()),
        (Some(role), _) => format!("{agent} ({})", role.word()),
        (None, _) => agent.to_owned(),
    }
}

/// The name people see for one sheep: `<agent>: <label>`, or exactly `<agent>` without a label.
pub fn display_name(agent: &str, label: &Label) -> String {
    if label.is_empty() {
        agent.to_owned()
    } else {
        format!("{agent}{SEPARATOR} {label}")
    }
}

/// A non-empty display name that another sheep of the same herd already has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Duplicate agent label {display_name:?}.")]
pub struct DuplicateLabelError {
    /// The display name that is taken.
    pub display_name: String,
}

impl DuplicateLabelError {
    /// The stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::DuplicateLabel
    }
}

/// Checks that a new sheep's display name is free among the herd's `existing` display names.
///
/// Unlabelled sheep may repeat (several plain `reviewer`s are fine); a labelled display name
/// must be unique. The same label under different agents is fine because the display names
/// differ. Returns the new display name.
pub fn ensure_unique_display_name<'a>(
    agent: &str,
    label: &Label,
    existing: impl IntoIterator<Item = &'a str>,
) -> Result<String, DuplicateLabelError> {
    let candidate = display_name(agent, label);
    if !label.is_empty() && existing.into_iter().any(|name| name == candidate) {
        return Err(DuplicateLabelError {
            display_name: candidate,
        });
    }
    Ok(candidate)
}

fn is_allowed(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric() || matches!(c, ' ' | '_' | '-' | '.')
}

fn describe_char(c: char) -> String {
    match c {
        SEPARATOR => "':' (it separates agent and label)".to_owned(),
        c if c.is_control() => format!("the control character U+{:04X}", u32::from(c)),
        c if c.is_whitespace() => format!("the whitespace character U+{:04X}", u32::from(c)),
        c => format!("{c:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sheep_shepherd_made_carries_its_role_in_the_agent_part_and_the_user_s_label() {
        let label = validate_label("fix-login").unwrap();
        let agent = agent_part("worker", Some(Role::Fallback), "codex", None);
        assert_eq!(
            display_name(&agent, &label),
            "worker (fallback, codex): fix-login"
        );
        assert_eq!(
            display_name(&agent, &Label::none()),
            "worker (fallback, codex)"
        );
        // The longest label a user may give is still the fallback's label.
        let longest = validate_label(&"x".repeat(MAX_LABEL_CHARS)).unwrap();
        assert_eq!(
            display_name(
                &agent_part("worker", Some(Role::Fallback), "claude-code", None),
                &longest
            ),
            format!("worker (fallback, claude-code): {}", "x".repeat(64))
        );
    }
    use proptest::prelude::*;

    fn label(raw: &str) -> Label {
        validate_label(raw).unwrap()
    }

    #[test]
    fn trims_and_keeps_case_and_spaces() {
        assert_eq!(label("  Code Review  ").as_str(), "Code Review");
        assert_eq!(label("api-v2_fix.3").as_str(), "api-v2_fix.3");
        assert_eq!(label("Überprüfung 日本 ٣").as_str(), "Überprüfung 日本 ٣");
    }

    #[test]
    fn empty_or_blank_means_no_label() {
        assert!(label("").is_empty());
        assert!(label(" \t\n ").is_empty());
        assert_eq!(label("   "), Label::none());
    }

    #[test]
    fn colon_is_rejected_with_the_allowed_set() {
        let err = validate_label("review: api").unwrap_err();
        assert_eq!(err.code(), "invalid_label");
        assert_eq!(
            err.to_string(),
            "Invalid label \"review: api\": ':' (it separates agent and label) is not allowed; \
             a label may contain letters, digits, spaces, '_', '-' and '.' (at most 64 characters)."
        );
    }

    #[test]
    fn control_characters_and_inner_newlines_are_rejected() {
        for raw in ["a\nb", "a\tb", "a\u{7}b", "a\u{1b}[31mb"] {
            let err = validate_label(raw).unwrap_err();
            assert!(
                matches!(err, LabelError::BadCharacter { character, .. } if character.is_control()),
                "{raw:?} gave {err:?}"
            );
            assert!(err.to_string().contains("control character U+"), "{err}");
        }
    }

    #[test]
    fn other_punctuation_is_rejected() {
        for raw in ["a/b", "a,b", "a!b", "a@b", "a\u{a0}b", "emoji 🐑"] {
            assert!(validate_label(raw).is_err(), "{raw:?} was accepted");
        }
    }

    #[test]
    fn length_is_counted_in_characters() {
        let sixty_four = "é".repeat(64);
        assert_eq!(label(&sixty_four).as_str().chars().count(), 64);
        let err = validate_label(&"é".repeat(65)).unwrap_err();
        assert!(matches!(err, LabelError::TooLong { chars: 65, .. }));
        assert!(err.to_string().contains("65 characters"), "{err}");
    }

    #[test]
    fn combining_accents_are_composed() {
        assert_eq!(label("cafe\u{301}"), label("café"));
    }

    #[test]
    fn a_sheep_shepherd_starts_shows_its_role_and_the_label_of_the_work_it_handles() {
        let long = "l".repeat(MAX_LABEL_CHARS);
        assert_eq!(
            display_name(
                &agent_part("claude-resolver", Some(Role::Resolver), "pi", None),
                &label("fix-login")
            ),
            "claude-resolver (resolver): fix-login"
        );
        assert_eq!(
            display_name(
                &agent_part("fixer", Some(Role::Fixer), "pi", None),
                &label("fix-login")
            ),
            "fixer (fixer): fix-login"
        );
        assert_eq!(
            display_name(
                &agent_part("claude-resolver", Some(Role::Resolver), "pi", None),
                &Label::none()
            ),
            "claude-resolver (resolver)"
        );
        // The label at its longest stays the label: nothing is added to it.
        assert_eq!(
            display_name(
                &agent_part("w", Some(Role::Resolver), "pi", None),
                &label(&long)
            ),
            format!("w (resolver): {long}")
        );
        assert_eq!(agent_part("worker", None, "codex", None), "worker");
    }

    #[test]
    fn a_fallback_names_the_account_its_entry_runs_on_and_its_role_once() {
        let label = label("pool");
        let first = agent_part(
            "pooled",
            Some(Role::Fallback),
            "claude-code",
            Some("WORK_A"),
        );
        let second = agent_part(
            "pooled",
            Some(Role::Fallback),
            "claude-code",
            Some("WORK_B"),
        );
        assert_eq!(
            display_name(&first, &label),
            "pooled (fallback, claude-code, WORK_A): pool"
        );
        // Two entries on one harness, each on its own account, are two names.
        assert_ne!(display_name(&first, &label), display_name(&second, &label));
        // Only a fallback names an account.
        assert_eq!(
            agent_part("fixer", Some(Role::Fixer), "pi", Some("WORK_A")),
            "fixer (fixer)"
        );
        assert_eq!(
            agent_part("pooled", None, "claude-code", Some("WORK_A")),
            "pooled"
        );
    }

    #[test]
    fn display_name_has_no_dangling_separator() {
        assert_eq!(display_name("reviewer", &Label::none()), "reviewer");
        assert_eq!(
            display_name("reviewer", &label("code review")),
            "reviewer: code review"
        );
    }

    #[test]
    fn duplicates_are_rejected_only_for_labelled_display_names() {
        let herd = ["reviewer", "reviewer", "reviewer: code review"];
        assert_eq!(
            ensure_unique_display_name("reviewer", &Label::none(), herd).unwrap(),
            "reviewer"
        );
        assert_eq!(
            ensure_unique_display_name("reviewer", &label("api review"), herd).unwrap(),
            "reviewer: api review"
        );
        assert_eq!(
            ensure_unique_display_name("scout", &label("code review"), herd).unwrap(),
            "scout: code review"
        );
        let err =
            ensure_unique_display_name("reviewer", &label(" code review "), herd).unwrap_err();
        assert_eq!(err.code(), "duplicate_label");
        assert_eq!(
            err.to_string(),
            "Duplicate agent label \"reviewer: code review\"."
        );
    }

    #[test]
    fn serde_validates_on_the_way_in() {
        let parsed: Label = serde_json::from_str("\"  fix it \"").unwrap();
        assert_eq!(parsed.as_str(), "fix it");
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"fix it\"");
        assert!(serde_json::from_str::<Label>("\"a:b\"").is_err());
    }

    fn allowed_char() -> impl Strategy<Value = char> {
        prop_oneof![
            proptest::char::range('a', 'z'),
            proptest::char::range('A', 'Z'),
            proptest::char::range('0', '9'),
            Just(' '),
            Just('_'),
            Just('-'),
            Just('.'),
            Just('é'),
            Just('ß'),
            Just('日'),
            Just('٣'),
        ]
    }

    proptest! {
        #[test]
        fn allowed_text_up_to_the_limit_is_accepted_trimmed(
            chars in proptest::collection::vec(allowed_char(), 0..=MAX_LABEL_CHARS)
        ) {
            let raw: String = chars.into_iter().collect();
            let parsed = validate_label(&raw).unwrap();
            prop_assert_eq!(parsed.as_str(), raw.trim());
        }

        #[test]
        fn validation_is_idempotent(raw in "\\PC{0,80}") {
            if let Ok(once) = validate_label(&raw) {
                prop_assert_eq!(validate_label(once.as_str()), Ok(once.clone()));
            }
        }

        #[test]
        fn any_colon_or_control_character_is_rejected(
            prefix in "[a-z ]{0,10}",
            bad in prop_oneof![Just(':'), proptest::char::range('\u{0}', '\u{8}'), Just('\u{7f}')],
            suffix in "[a-z]{1,10}",
        ) {
            let raw = format!("{prefix}{bad}{suffix}");
            let err = validate_label(&raw).unwrap_err();
            prop_assert_eq!(err.code(), "invalid_label");
            let is_bad_character = matches!(err, LabelError::BadCharacter { .. });
            prop_assert!(is_bad_character);
        }

        #[test]
        fn too_long_labels_are_rejected(len in (MAX_LABEL_CHARS + 1)..200usize) {
            let raw = "x".repeat(len);
            let too_long = matches!(validate_label(&raw), Err(LabelError::TooLong { chars, .. }) if chars == len);
            prop_assert!(too_long);
        }

        #[test]
        fn display_names_never_end_in_a_separator(
            agent in "[a-z]{1,12}",
            raw in "\\PC{0,70}",
        ) {
            if let Ok(label) = validate_label(&raw) {
                let name = display_name(&agent, &label);
                prop_assert!(!name.ends_with(':') && !name.ends_with(' '));
                prop_assert_eq!(name == agent, label.is_empty());
            }
        }
    }
}
