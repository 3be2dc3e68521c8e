//! Each tool's arguments as the typed value a call is read into (the schema the host shows the
//! model is the tool catalogue's, `catalogue`).
//!
//! The names, meanings and descriptions are the pi tools'. Reading is lenient where pi's is
//! (a legacy `handle` becomes `id`, a JSON list sent as a string is a list, `"5"` is 5 for
//! `timeout` and `lines`, keys that settings own are dropped), and strict about the rest: a
//! missing or mistyped argument, or a value outside its choices, is a tool error naming the
//! argument, the value and what is accepted.

mod budget;
mod run;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use shepherd_core::error_code::ErrorCode;

use super::error::ToolError;
pub(crate) use budget::BudgetArgs;
pub(crate) use run::{Run, RunStep};

pub(crate) use super::catalogue::{
    ACTIONS, DELIVERIES, DONE_STATUSES, HARNESSES, PLACEMENTS, SANDBOXES, SCOPES, SOURCES,
};

/// A checked `harness` argument.
pub(crate) fn harness(
    value: Option<String>,
) -> Result<Option<shepherd_core::harness::Harness>, ToolError> {
    closed("harness", value, HARNESSES)
}

/// A checked `sandbox` argument.
pub(crate) fn sandbox(
    value: Option<String>,
) -> Result<Option<shepherd_core::sandbox::Sandbox>, ToolError> {
    closed("sandbox", value, SANDBOXES)
}

/// A checked argument of a closed set, as its type: `accepted` lists the set's words.
pub(crate) fn closed<T: std::str::FromStr>(
    name: &str,
    value: Option<String>,
    accepted: &[&str],
) -> Result<Option<T>, ToolError> {
    Ok(one_of(name, value, accepted)?.and_then(|word| word.parse().ok()))
}

/// Keys settings own, dropped before reading (as pi's normaliser does).
const DROPPED_KEYS: &[&str] = &[
    "agentScope",
    "confirmProjectAgents",
    "omitSystemPrompt",
    "direction",
];

/// Reads a call's arguments into `T`, after pi's normalisation unless `raw`.
pub(crate) fn read<T: DeserializeOwned>(
    tool: &str,
    args: &Map<String, Value>,
    raw: bool,
) -> Result<T, ToolError> {
    let mut input = args.clone();
    input.retain(|_, value| !value.is_null());
    if !raw {
        normalise(&mut input);
    }
    serde_json::from_value(Value::Object(input))
        .map_err(|err| ToolError::arguments(format!("{tool}: {err}")))
}

fn normalise(input: &mut Map<String, Value>) {
    if let Some(handle) = input.remove("handle")
        && !input.contains_key("id")
    {
        input.insert("id".into(), handle_to_id(handle));
    }
    for key in DROPPED_KEYS {
        input.remove(*key);
    }
    if let Some(Value::String(text)) = input.get("id")
        && text.trim().starts_with('[')
        && let Ok(Value::Array(list)) = serde_json::from_str(text.trim())
    {
        input.insert("id".into(), Value::Array(list));
    }
    for key in ["timeout", "lines", "wait"] {
        if let Some(Value::String(text)) = input.get(key)
            && let Ok(number) = text.trim().parse::<f64>()
        {
            input.insert(key.into(), serde_json::json!(number));
        }
    }
}

fn handle_to_id(handle: Value) -> Value {
    match handle {
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ (Value::Array(_) | Value::Object(_))) => handle_to_id(parsed),
            _ => Value::String(text),
        },
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| match item {
                    Value::Object(mut map) if map.contains_key("id") => {
                        map.remove("id").unwrap_or_default()
                    }
                    other => other,
                })
                .collect(),
        ),
        Value::Object(mut map) if map.contains_key("id") => map.remove("id").unwrap_or_default(),
        other => other,
    }
}

/// `value` when it is one of `accepted`, else an error naming both.
fn one_of(
    name: &str,
    value: Option<String>,
    accepted: &[&str],
) -> Result<Option<String>, ToolError> {
    match value {
        Some(v) if !accepted.contains(&v.as_str()) => Err(ToolError::arguments(format!(
            "{name} `{v}` is not one of {}",
            accepted.join(", ")
        ))),
        other => Ok(other),
    }
}

/// One task id or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Ids {
    One(String),
    Many(Vec<String>),
}

impl Ids {
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(id) => vec![id],
            Self::Many(ids) => ids,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Merge {
    pub(crate) targets: Option<Ids>,
    pub(crate) session: Option<String>,
    pub(crate) only: Option<Vec<String>>,
    pub(crate) skip: Option<Vec<String>>,
    pub(crate) include_failed: Option<bool>,
    pub(crate) into: Option<String>,
    pub(crate) strategy: Option<String>,
    pub(crate) check: Option<String>,
    pub(crate) check_timeout: Option<f64>,
    pub(crate) resolve: Option<String>,
    pub(crate) fix: Option<String>,
    pub(crate) fix_attempts: Option<u32>,
    pub(crate) prune: Option<bool>,
    pub(crate) dry_run: Option<bool>,
    pub(crate) cancel: Option<String>,
    pub(crate) discard: Option<bool>,
    pub(crate) merge_id: Option<String>,
    pub(crate) wait: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Control {
    pub(crate) action: String,
    pub(crate) agent_scope: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Spawn {
    pub(crate) agent: String,
    pub(crate) label: String,
    pub(crate) placement: Option<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) harness: Option<String>,
    pub(crate) isolate: Option<bool>,
    pub(crate) host: Option<String>,
    pub(crate) sandbox: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delegate {
    pub(crate) target: String,
    pub(crate) task: String,
    pub(crate) timeout: Option<f64>,
    pub(crate) stall: Option<f64>,
    #[serde(rename = "sessionName")]
    pub(crate) session_name: Option<String>,
    #[serde(flatten)]
    pub(crate) budget: BudgetArgs,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    pub(crate) target: String,
    pub(crate) message: String,
    pub(crate) task_id: Option<String>,
    pub(crate) thread_id: Option<String>,
    pub(crate) reply_to: Option<String>,
    pub(crate) expects_reply: Option<bool>,
    pub(crate) delivery: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Prompt {
    pub(crate) id: String,
    pub(crate) message: String,
    pub(crate) timeout: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Watch {
    pub(crate) id: Ids,
    pub(crate) wait: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AgentId {
    pub(crate) id: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Read {
    pub(crate) name: String,
    pub(crate) lines: Option<f64>,
    pub(crate) source: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Inbox {
    pub(crate) wait: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Done {
    pub(crate) status: String,
    pub(crate) summary: Option<String>,
    pub(crate) task_id: Option<String>,
}

/// A `wait` argument in seconds: at least 0, at most `bound`; absent means `default`.
pub(crate) fn wait_seconds(wait: Option<f64>, default: f64, bound: f64) -> Result<f64, ToolError> {
    match wait {
        None => Ok(default.min(bound)),
        Some(w) if w.is_finite() && w >= 0.0 => Ok(w.min(bound)),
        Some(w) => Err(ToolError::arguments(format!(
            "wait `{w}` must be a number of seconds from 0 to {bound}"
        ))),
    }
}

/// A timeout in minutes: positive and finite.
pub(crate) fn minutes(name: &str, value: Option<f64>) -> Result<Option<f64>, ToolError> {
    match value {
        Some(m) if !(m.is_finite() && m > 0.0) => Err(ToolError::new(
            ErrorCode::InvalidTimeout,
            format!("{name} `{m}` must be a positive number of minutes"),
        )),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_shapes_are_read_as_pi_reads_them() {
        let args = json!({"handle": "[\"t1\", \"t2\"]", "agentScope": "user"});
        let watch: Watch = read("shepherd_watch", args.as_object().unwrap(), false).unwrap();
        assert_eq!(watch.id.into_vec(), ["t1", "t2"]);
        let args = json!({"id": "t1", "wait": "3"});
        let watch: Watch = read("shepherd_watch", args.as_object().unwrap(), false).unwrap();
        assert_eq!(watch.id.into_vec(), ["t1"]);
        assert_eq!(watch.wait, Some(3.0));
        let args = json!({"name": "w", "lines": "12"});
        let read_args: Read = read("shepherd_read", args.as_object().unwrap(), false).unwrap();
        assert_eq!(read_args.lines, Some(12.0));
    }

    #[test]
    fn bad_arguments_name_the_tool_and_the_field() {
        let err = read::<Spawn>(
            "shepherd_spawn",
            json!({"agent": "w"}).as_object().unwrap(),
            false,
        )
        .unwrap_err();
        assert_eq!(err.code, "invalid_arguments");
        assert!(
            err.message.contains("shepherd_spawn") && err.message.contains("label"),
            "{err}"
        );
        let err = one_of("placement", Some("left".into()), PLACEMENTS).unwrap_err();
        assert_eq!(
            err.message,
            "placement `left` is not one of tab, pane_right, pane_down, workspace"
        );
        assert!(minutes("timeout", Some(0.0)).is_err());
        assert!(wait_seconds(Some(-1.0), 0.0, 25.0).is_err());
        assert_eq!(wait_seconds(Some(99.0), 0.0, 25.0).unwrap(), 25.0);
    }
}
