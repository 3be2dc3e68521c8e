//! `fallback:` in a definition's frontmatter: the agents that take a task over when its
//! provider stays limited, and the credential each spends.
//!
//! An entry is a harness name (`codex`) or a mapping with a model and a credential:
//! `{harness: claude-code, credential: WORK_ANTHROPIC_KEY}` runs the fallback on another
//! account of the same provider — the key held in the herd's `WORK_ANTHROPIC_KEY`, handed to
//! Claude Code as the key variable it reads — and `as: NAME` names that variable when it is
//! not the harness's usual one (a Codex provider whose `env_key` is another). Only variable
//! names are written here, never a key.

use serde_yaml_ng::Value;

use super::{is_variable_name, model_choice, render};
use crate::agent_def::{AgentDefError, Credential, Fallback, ModelChoice};
use crate::harness::Harness;

const EXPECTED: &str = "a list of harnesses (pi, claude-code, codex, gemini, opencode), each a \
                        name or {harness: NAME, model: MODEL, credential: VARIABLE, as: VARIABLE}";

const CREDENTIAL_EXPECTED: &str = "the name of the environment variable that holds the key \
                                   (letters, digits and _, not starting with a digit), e.g. \
                                   WORK_ANTHROPIC_KEY";

/// `fallback:`: a list of harnesses, each a name (`codex`) or a mapping with a model and a
/// credential (`{harness: codex, model: gpt-5-codex, credential: WORK_OPENAI_KEY}`).
pub(super) fn fallback_list(value: Option<&Value>) -> Result<Vec<Fallback>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "fallback",
        value: render(value),
        expected: EXPECTED,
    };
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Sequence(items)) => items.as_slice(),
        Some(one @ (Value::String(_) | Value::Mapping(_))) => std::slice::from_ref(one),
        Some(other) => return Err(invalid(other)),
    };
    items
        .iter()
        .map(|item| {
            let (harness, model, credential) = match item {
                Value::String(name) => (name.as_str(), None, None),
                Value::Mapping(entry) => {
                    let known = entry.keys().all(|k| {
                        matches!(k.as_str(), Some("harness" | "model" | "credential" | "as"))
                    });
                    match entry.get("harness") {
                        Some(Value::String(name)) if known => {
                            (name.as_str(), entry.get("model"), credential(entry)?)
                        }
                        _ => return Err(invalid(item)),
                    }
                }
                other => return Err(invalid(other)),
            };
            let harness: Harness = harness.trim().parse().map_err(|_| invalid(item))?;
            let model = match model {
                None | Some(Value::Null) => None,
                Some(model @ Value::String(_)) => match model_choice(Some(model))? {
                    ModelChoice::Explicit(model) => Some(model),
                    _ => None,
                },
                Some(_) => return Err(invalid(item)),
            };
            Ok(Fallback {
                harness,
                model,
                credential,
            })
        })
        .collect()
}

/// A value written where a variable's name belongs, as an error shows it: a long one may be a
/// key pasted in by mistake, so only its first characters and its length are repeated.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) if text.chars().count() > 8 => {
            let start: String = text.chars().take(3).collect();
            format!("\"{start}…\" ({} characters)", text.chars().count())
        }
        other => render(other),
    }
}

/// An entry's `credential:` and `as:`, each a variable's name.
fn credential(entry: &serde_yaml_ng::Mapping) -> Result<Option<Credential>, AgentDefError> {
    let name = |field: &'static str, value: Option<&Value>| match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) if is_variable_name(name.trim()) => {
            Ok(Some(name.trim().to_owned()))
        }
        Some(other) => Err(AgentDefError::Invalid {
            field,
            value: shown(other),
            expected: CREDENTIAL_EXPECTED,
        }),
    };
    let var = name("fallback credential", entry.get("credential"))?;
    let into = name("fallback as", entry.get("as"))?;
    match (var, into) {
        (Some(var), into) => Ok(Some(Credential { var, into })),
        (None, Some(into)) => Err(AgentDefError::Invalid {
            field: "fallback as",
            value: render(&Value::String(into)),
            expected: "as: together with credential: (the variable the agent reads the key \
                       credential: names from)",
        }),
        (None, None) => Ok(None),
    }
}
