//! The frontmatter rules: which values make a definition, which skip the file, which are ignored.
//!
//! The rules follow the original extension so that its users' files keep working: `name` and
//! `description` are required; an invalid `model` or `thinking` skips the file; prompt-shaping
//! booleans only honour real YAML booleans and otherwise fall back to their default (reported
//! as an [`IgnoredValue`] instead of silently). Where the original accepted anything for
//! `tools`, we refuse a value that is neither a string nor a list of strings: ignoring it would
//! silently widen a sheep to pi's full default tool set.
//!
//! The only JSON made here is of unknown frontmatter keys, kept open in `extra`.

mod fallback;

use std::collections::BTreeMap;
use std::path::PathBuf;

use indexmap::IndexMap;
use serde_yaml_ng::{Mapping, Value};
use sha2::{Digest, Sha256};

use super::{AgentDef, AgentSource, ModelChoice, ThinkingChoice, ThinkingLevel};
use crate::harness::Harness;
use crate::sandbox::{Network, Sandbox};

/// Frontmatter keys Shepherd interprets; every other key is kept in [`AgentDef::extra`].
const KNOWN_KEYS: [&str; 20] = [
    "sandbox",
    "limits",
    "network",
    "host",
    "needs-env",
    "fallback",
    "name",
    "description",
    "tools",
    "model",
    "models",
    "thinking",
    "command",
    "harness",
    "omit-system-prompt",
    "omit-pi-documentation",
    "omit-context-files",
    "user-invocable",
    "budget",
    "maxTurns",
];

const THINKING_EXPECTED: &str = "default, off, minimal, low, medium, high, xhigh or max";
const MODEL_EXPECTED: &str = "a model pi accepts, such as anthropic/claude-sonnet-4-5, or \
                              empty, default or inherit to use the shepherd's model";

/// A definition together with the frontmatter values that were ignored while reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedAgentDef {
    /// The definition.
    pub def: AgentDef,
    /// Values that were not honoured; the definition uses the key's default instead.
    pub ignored: Vec<IgnoredValue>,
}

/// A frontmatter value that was not honoured, so its key's default applies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {value} is not a YAML boolean (true or false); using {default}")]
pub struct IgnoredValue {
    /// The frontmatter key.
    pub key: &'static str,
    /// The value as written (JSON notation).
    pub value: String,
    /// The default that applies instead.
    pub default: bool,
}

/// Why a file is not a valid agent definition. Discovery skips the file and reports this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentDefError {
    /// The bytes are not UTF-8 text.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// The file does not start with a `---` line.
    #[error("no YAML frontmatter (the file must start with a line `---`)")]
    MissingFrontmatter,
    /// The opening `---` has no closing `---` line.
    #[error("the frontmatter is not closed (add a line `---` after it)")]
    UnclosedFrontmatter,
    /// The frontmatter is not valid YAML.
    #[error("invalid YAML frontmatter: {0}")]
    Yaml(String),
    /// The frontmatter is valid YAML but not a mapping of keys to values.
    #[error("the frontmatter must be a mapping of keys to values")]
    NotAMapping,
    /// `name` or `description` is absent, empty or not a string.
    #[error("{field} is required (a non-empty string)")]
    Missing {
        /// The key.
        field: &'static str,
    },
    /// A key has a value that makes the definition unusable.
    #[error("invalid {field} {value}: expected {expected}")]
    Invalid {
        /// The key.
        field: &'static str,
        /// The value as written (JSON notation).
        value: String,
        /// What would be accepted.
        expected: &'static str,
    },
}

/// Parses one agent file.
///
/// `bytes` are the whole file (hashed as they are for approval binding), `source` and
/// `file_path` say where it was found. The body after the frontmatter, trimmed, becomes the
/// system prompt.
pub fn parse_agent_def(
    bytes: &[u8],
    source: AgentSource,
    file_path: PathBuf,
) -> Result<ParsedAgentDef, AgentDefError> {
    let content_hash = hex::encode(Sha256::digest(bytes));
    let text = std::str::from_utf8(bytes).map_err(|_| AgentDefError::NotUtf8)?;
    let (yaml, body) = split_frontmatter(text)?;
    let frontmatter = match serde_yaml_ng::from_str::<Value>(yaml) {
        Ok(Value::Mapping(mapping)) => mapping,
        Ok(Value::Null) => Mapping::new(),
        Ok(_) => return Err(AgentDefError::NotAMapping),
        Err(err) => return Err(AgentDefError::Yaml(one_line(&err.to_string()))),
    };

    let name = required_text(&frontmatter, "name")?;
    let description = required_text(&frontmatter, "description")?;
    let model = model_choice(frontmatter.get("model"))?;
    let thinking = thinking_choice(frontmatter.get("thinking"))?;
    let tools = tool_list(frontmatter.get("tools"))?;
    let command = command_argv(frontmatter.get("command"))?;
    let harness = harness_choice(frontmatter.get("harness"))?;
    if command.is_some() && harness != Harness::Pi {
        return Err(AgentDefError::Invalid {
            field: "harness",
            value: render(&Value::String(harness.as_str().to_owned())),
            expected: "no harness beside `command` (a definition runs either its command or a \
                       coding agent)",
        });
    }
    let models = model_map(frontmatter.get("models"))?;
    let budget = budget(frontmatter.get("budget"), frontmatter.get("maxTurns"))?;
    let host = host_name(frontmatter.get("host"))?;
    let fallback = fallback::fallback_list(frontmatter.get("fallback"))?;
    let needs_env = variable_names(frontmatter.get("needs-env"))?;
    let sandbox = choice::<Sandbox>(frontmatter.get("sandbox"), "sandbox", Sandbox::EXPECTED)?;
    let network = choice::<Network>(frontmatter.get("network"), "network", Network::EXPECTED)?
        .unwrap_or_default();
    let limits =
        crate::resources::LimitsLayer::from_json(frontmatter.get("limits").map(to_json).as_ref())
            .map_err(|err| AgentDefError::Invalid {
            field: err.field,
            value: err.value,
            expected: err.expected,
        })?;

    let mut ignored = Vec::new();
    let mut flag = |key: &'static str, default: bool| match frontmatter.get(key) {
        None | Some(Value::Null) => default,
        Some(Value::Bool(value)) => *value,
        Some(other) => {
            ignored.push(IgnoredValue {
                key,
                value: render(other),
                default,
            });
            default
        }
    };
    let omit_system_prompt = flag("omit-system-prompt", false);
    let omit_pi_documentation = flag("omit-pi-documentation", false);
    let omit_context_files = flag("omit-context-files", false);
    let user_invocable = flag("user-invocable", true);

    let extra = frontmatter
        .iter()
        .filter_map(|(key, value)| {
            let key = key_text(key);
            (!KNOWN_KEYS.contains(&key.as_str())).then(|| (key, to_json(value)))
        })
        .collect::<IndexMap<_, _>>();

    let def = AgentDef {
        name,
        description,
        source,
        file_path,
        content_hash,
        model,
        thinking,
        tools,
        command,
        harness,
        models,
        budget,
        fallback,
        host,
        needs_env,
        sandbox,
        network,
        limits,
        omit_system_prompt,
        omit_pi_documentation,
        omit_context_files,
        user_invocable,
        extra,
        system_prompt: body.trim().to_owned(),
    };
    Ok(ParsedAgentDef { def, ignored })
}

/// Splits `---\n<yaml>\n---\n<body>`. A byte-order mark and `\r\n` line ends are accepted.
fn split_frontmatter(text: &str) -> Result<(&str, &str), AgentDefError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(AgentDefError::MissingFrontmatter);
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[yaml_start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(AgentDefError::UnclosedFrontmatter)
}

/// Reads `name` or `description`: a non-empty string. Runs of whitespace (a YAML block scalar's
/// line breaks) become single spaces, so listings stay one line per agent.
fn required_text(frontmatter: &Mapping, field: &'static str) -> Result<String, AgentDefError> {
    let text = match frontmatter.get(field) {
        Some(Value::String(text)) => one_line(text),
        _ => String::new(),
    };
    if text.is_empty() {
        return Err(AgentDefError::Missing { field });
    }
    if text.chars().any(char::is_control) {
        return Err(AgentDefError::Invalid {
            field,
            value: render(&Value::String(text)),
            expected: "text without control characters",
        });
    }
    Ok(text)
}

/// Reads `model`. Shared with [`ModelChoice`]'s deserialiser so both agree.
pub(super) fn model_choice(value: Option<&Value>) -> Result<ModelChoice, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "model",
        value: render(value),
        expected: MODEL_EXPECTED,
    };
    let text = match value {
        None | Some(Value::Null) => return Ok(ModelChoice::Inherit),
        Some(Value::String(text)) => text.trim(),
        Some(other) => return Err(invalid(other)),
    };
    let lowered = text.to_lowercase();
    if text.is_empty() || lowered == "default" || lowered == ModelChoice::INHERIT {
        return Ok(ModelChoice::Inherit);
    }
    // `none` reads like "no model"; the original refused it rather than guess.
    let malformed_path = text.starts_with('/') || text.ends_with('/') || text.contains("//");
    let odd_character = text.chars().any(|c| c.is_whitespace() || c.is_control());
    if lowered == "none" || malformed_path || odd_character {
        return Err(invalid(value.unwrap_or(&Value::Null)));
    }
    Ok(ModelChoice::Explicit(text.to_owned()))
}

/// Reads `thinking`. Shared with [`ThinkingChoice`]'s deserialiser so both agree.
pub(super) fn thinking_choice(value: Option<&Value>) -> Result<ThinkingChoice, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "thinking",
        value: render(value),
        expected: THINKING_EXPECTED,
    };
    let text = match value {
        None | Some(Value::Null) => return Ok(ThinkingChoice::Inherit),
        Some(Value::String(text)) => text.trim().to_lowercase(),
        Some(other) => return Err(invalid(other)),
    };
    if text.is_empty() || text == "default" {
        return Ok(ThinkingChoice::Inherit);
    }
    ThinkingLevel::ALL
        .into_iter()
        .find(|level| level.as_str() == text)
        .map(ThinkingChoice::Level)
        .ok_or_else(|| invalid(value.unwrap_or(&Value::Null)))
}

fn tool_list(value: Option<&Value>) -> Result<Option<Vec<String>>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "tools",
        value: render(value),
        expected: "a comma-separated string or a list of tool names",
    };
    let names: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text.split(',').map(str::to_owned).collect(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(name) => Ok(name.clone()),
                other => Err(invalid(other)),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(invalid(other)),
    };
    let names: Vec<String> = names
        .iter()
        .map(|name| name.trim())
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect();
    // An empty list means "pi's defaults", as in the original, not "no tools at all".
    Ok((!names.is_empty()).then_some(names))
}

const HARNESS_EXPECTED: &str = "one of pi, claude-code, codex, gemini, opencode";

fn harness_choice(value: Option<&Value>) -> Result<Harness, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "harness",
        value: render(value),
        expected: HARNESS_EXPECTED,
    };
    match value {
        None | Some(Value::Null) => Ok(Harness::Pi),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(Harness::Pi),
        Some(Value::String(text)) => text
            .trim()
            .parse()
            .map_err(|_| invalid(value.unwrap_or(&Value::Null))),
        Some(other) => Err(invalid(other)),
    }
}

/// Reads `models`: a mapping from harness names to the model each asks for.
fn model_map(value: Option<&Value>) -> Result<BTreeMap<Harness, String>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "models",
        value: render(value),
        expected: "a mapping from harness names (pi, claude-code, codex, gemini, opencode) to \
                   model names",
    };
    let entries = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Mapping(entries)) => entries,
        Some(other) => return Err(invalid(other)),
    };
    let mut models = BTreeMap::new();
    for (key, model) in entries {
        let Value::String(name) = key else {
            return Err(invalid(value.unwrap_or(&Value::Null)));
        };
        let harness: Harness = name
            .parse()
            .map_err(|_| invalid(value.unwrap_or(&Value::Null)))?;
        if let ModelChoice::Explicit(model) = model_choice(Some(model))? {
            models.insert(harness, model);
        }
    }
    Ok(models)
}

fn command_argv(value: Option<&Value>) -> Result<Option<Vec<String>>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "command",
        value: render(value),
        expected: "a list of strings, the program first (e.g. [python3, sheep.py])",
    };
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Sequence(items)) => items,
        Some(other) => return Err(invalid(other)),
    };
    let argv = items
        .iter()
        .map(|item| match item {
            Value::String(arg) => Some(arg.clone()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>();
    match argv {
        Some(argv)
            if argv
                .first()
                .is_some_and(|program| !program.trim().is_empty()) =>
        {
            Ok(Some(argv))
        }
        _ => Err(invalid(value.unwrap_or(&Value::Null))),
    }
}

/// Whether `name` is an environment variable's name: letters, digits and `_`, not starting with
/// a digit.
pub(super) fn is_variable_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `needs-env: [NAME, …]`: environment variable names (letters, digits and `_`, not starting
/// with a digit), each listed once.
pub(super) fn variable_names(value: Option<&Value>) -> Result<Vec<String>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field: "needs-env",
        value: render(value),
        expected: "a list of environment variable names (letters, digits and _, not starting \
                   with a digit), e.g. [OPENAI_API_KEY]",
    };
    // One name alone may be written without the list.
    let list: Vec<&Value> = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Sequence(items)) => items.iter().collect(),
        Some(single @ Value::String(_)) => vec![single],
        Some(other) => return Err(invalid(other)),
    };
    let mut names = Vec::new();
    for item in list {
        let Value::String(name) = item else {
            return Err(invalid(item));
        };
        if !is_variable_name(name) {
            return Err(invalid(item));
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Ok(names)
}

/// `budget: {turns, toolCalls, tokens, cost}`, and Claude Code's `maxTurns` for the turns a
/// `budget` does not set.
fn budget(
    value: Option<&Value>,
    max_turns: Option<&Value>,
) -> Result<Option<crate::budget::Budget>, AgentDefError> {
    const EXPECTED: &str = "a mapping of turns, toolCalls and tokens (whole numbers, 1 or more) \
                            and cost (a positive number)";
    let invalid =
        |field: &'static str, value: &Value, expected: &'static str| AgentDefError::Invalid {
            field,
            value: render(value),
            expected,
        };
    let mut budget = match value {
        None | Some(Value::Null) => crate::budget::Budget::default(),
        Some(value) => serde_json::from_value::<crate::budget::Budget>(to_json(value))
            .ok()
            .filter(|b| b.check().is_ok())
            .ok_or_else(|| invalid("budget", value, EXPECTED))?,
    };
    match max_turns {
        None | Some(Value::Null) => {}
        Some(value) => {
            let turns = value
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| invalid("maxTurns", value, "a whole number, 1 or more"))?;
            budget.turns.get_or_insert(turns);
        }
    }
    Ok((!budget.is_empty()).then_some(budget))
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(text) => text.clone(),
        other => render(other),
    }
}

/// Converts a YAML value to JSON; YAML that JSON cannot hold (e.g. float map keys) is kept as
/// its YAML text rather than failing the file over a key Shepherd does not even read.
fn to_json(value: &Value) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_else(|_| {
        serde_json::Value::String(
            serde_yaml_ng::to_string(value)
                .map(|text| text.trim_end().to_owned())
                .unwrap_or_default(),
        )
    })
}

/// A value as it appears in messages: JSON notation (strings quoted).
pub(super) fn render(value: &Value) -> String {
    to_json(value).to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A key whose value is one of a closed set's names (`sandbox:`, `network:`); absent or empty
/// means the key's default, anything else is refused naming the accepted values.
fn choice<T: std::str::FromStr>(
    value: Option<&Value>,
    field: &'static str,
    expected: &'static str,
) -> Result<Option<T>, AgentDefError> {
    let invalid = |value: &Value| AgentDefError::Invalid {
        field,
        value: render(value),
        expected,
    };
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => text
            .parse()
            .map(Some)
            .map_err(|_| invalid(value.unwrap_or(&Value::Null))),
        Some(other) => Err(invalid(other)),
    }
}

/// `host:`: the name of a host the user defined (the definition itself lives in the user's
/// settings only, so a project's agent can name a host but never define one).
fn host_name(value: Option<&Value>) -> Result<Option<String>, AgentDefError> {
    const EXPECTED: &str = "the name of a host defined under `hosts` in the user's settings \
                            (lowercase letters, digits, `-`, `_`, `.`)";
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) if crate::hosts::validate_host_name(name).is_ok() => {
            Ok(Some(name.clone()))
        }
        Some(other) => Err(AgentDefError::Invalid {
            field: "host",
            value: render(other),
            expected: EXPECTED,
        }),
    }
}
