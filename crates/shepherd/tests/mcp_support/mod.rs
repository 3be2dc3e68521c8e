//! `shepherd mcp` driven by a real MCP client (rmcp's, over the child's stdio), in a private
//! Shepherd world (`herd_support::World`): a host that records every `notifications/message`
//! and `notifications/progress` it receives (waiting for one is an event with a deadline),
//! answers `roots/list` with the roots it is given, and asks for the protocol version it is
//! told to.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]
#![allow(
    deprecated,
    reason = "roots and logging are what 2025-06-18 and 2025-11-25 hosts use"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ListRootsResult,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestMetaObject, Root,
    RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt as _};
use serde_json::Value;
use tokio::sync::Notify;

pub(crate) use crate::herd_support;

pub use herd_support::World;

/// What the host saw from the server.
#[derive(Debug, Default)]
pub struct Seen {
    pub logs: Mutex<Vec<Value>>,
    pub progress: Mutex<Vec<ProgressNotificationParam>>,
    pub roots_asked: Mutex<usize>,
    changed: Notify,
}

/// The recording host.
#[derive(Debug, Clone)]
pub struct Host {
    pub seen: Arc<Seen>,
    version: ProtocolVersion,
    roots: Option<Vec<String>>,
}

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.roots.is_some() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        let mut config =
            ClientConfig::new(capabilities, Implementation::new("mcp-test-host", "1.0"));
        config.protocol_version = self.version.clone();
        config
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        *self.seen.roots_asked.lock().unwrap() += 1;
        let roots = self.roots.clone().unwrap_or_default();
        Ok(ListRootsResult::new(
            roots.into_iter().map(Root::new).collect(),
        ))
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen
            .logs
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
        self.seen.changed.notify_waiters();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.progress.lock().unwrap().push(params);
        self.seen.changed.notify_waiters();
    }
}

/// How the host presents itself.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub version: ProtocolVersion,
    /// `Some`: declare roots and answer with these URIs.
    pub roots: Option<Vec<String>>,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            version: ProtocolVersion::V_2025_11_25,
            roots: None,
        }
    }
}

/// One tool call's outcome.
#[derive(Debug, Clone)]
pub struct Called {
    pub text: String,
    pub is_error: bool,
    pub elapsed: Duration,
}

impl Called {
    /// The first word of the text starting with `prefix` (an id the tool returned).
    pub fn id(&self, prefix: &str) -> String {
        word(&self.text, prefix).unwrap_or_else(|| panic!("no {prefix}… in:\n{}", self.text))
    }
}

/// The first word of `text` starting with `prefix`.
pub fn word(text: &str, prefix: &str) -> Option<String> {
    text.match_indices(prefix).find_map(|(at, _)| {
        let word: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        (word.len() > prefix.len()).then_some(word)
    })
}

/// A running `shepherd mcp` with its host.
pub struct Mcp {
    pub client: RunningService<RoleClient, Host>,
    pub seen: Arc<Seen>,
}

impl Mcp {
    /// Starts `shepherd mcp ARGS` in `world` (cwd: its project) and initialises a session.
    pub async fn start(world: &World, args: &[&str], options: HostOptions) -> Self {
        let mut all = vec!["mcp"];
        all.extend_from_slice(args);
        Self::start_with(world.command(&all), options).await
    }

    /// Starts the server from a prepared command.
    pub async fn start_with(command: std::process::Command, options: HostOptions) -> Self {
        let mut command = tokio::process::Command::from(command);
        command.stderr(std::process::Stdio::inherit());
        let transport = TokioChildProcess::new(command).unwrap();
        let seen = Arc::new(Seen::default());
        let host = Host {
            seen: seen.clone(),
            version: options.version,
            roots: options.roots,
        };
        let client = tokio::time::timeout(Duration::from_secs(20), host.serve(transport))
            .await
            .expect("the MCP session starts within 20 s")
            .unwrap();
        Self { client, seen }
    }

    /// Calls `tool` with `args` (an object), within 90 s.
    pub async fn call(&self, tool: &str, args: Value) -> Called {
        self.call_with(tool, args, None).await
    }

    /// Calls `tool` and returns, with the outcome, the progress notifications sent for it:
    /// those that arrived during the call with `marker` in their message, of one token (rmcp's
    /// client gives every request a progress token of its own).
    pub async fn call_tracked(
        &self,
        tool: &str,
        args: Value,
        marker: &str,
    ) -> (Called, Vec<ProgressNotificationParam>) {
        let before = self.seen.progress.lock().unwrap().len();
        let called = self.call_with(tool, args, None).await;
        let during: Vec<ProgressNotificationParam> = self.seen.progress.lock().unwrap()[before..]
            .iter()
            .filter(|p| p.message.as_deref().is_some_and(|m| m.contains(marker)))
            .cloned()
            .collect();
        let token = during.first().map(|p| p.progress_token.clone());
        let ours = during
            .into_iter()
            .filter(|p| Some(&p.progress_token) == token.as_ref())
            .collect();
        (called, ours)
    }

    async fn call_with(&self, tool: &str, args: Value, token: Option<ProgressToken>) -> Called {
        let mut params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().expect("arguments are an object").clone());
        params.meta = token.map(RequestMetaObject::with_progress_token);
        let started = Instant::now();
        let result = tokio::time::timeout(Duration::from_secs(90), self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{tool} did not answer within 90 s"))
            .unwrap_or_else(|err| panic!("{tool}: protocol error {err}"));
        let elapsed = started.elapsed();
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Called {
            text,
            is_error: result.is_error == Some(true),
            elapsed,
        }
    }

    /// Waits (up to `within`) until a log message matches `matches`; returns it.
    pub async fn wait_log(&self, within: Duration, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let changed = self.seen.changed.notified();
            if let Some(found) = self.seen.logs.lock().unwrap().iter().find(|l| matches(l)) {
                return found.clone();
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!(
                    "no matching notifications/message within {within:?}; got {:#?}",
                    self.seen.logs.lock().unwrap()
                );
            }
        }
    }

    /// Ends the session by closing the server's stdin, and waits for it to exit.
    pub async fn close(self) {
        let _closed = tokio::time::timeout(Duration::from_secs(60), self.client.cancel()).await;
    }
}

/// Every tool the parent server offers.
pub const PARENT_TOOLS: &[&str] = &[
    "shepherd",
    "shepherd_close",
    "shepherd_delegate",
    "shepherd_inbox",
    "shepherd_merge",
    "shepherd_message",
    "shepherd_prompt",
    "shepherd_read",
    "shepherd_resume",
    "shepherd_run",
    "shepherd_spawn",
    "shepherd_status",
    "shepherd_watch",
];

/// Whether a tool's input schema is flat: one object of single-typed properties (arrays of
/// strings or of flat objects), no `$ref`, combinators, type lists or formats anywhere.
pub fn flat(schema: &Value) -> Result<(), String> {
    fn walk(path: &str, schema: &Value, top: bool) -> Result<(), String> {
        let map = schema.as_object().ok_or(format!("{path}: not an object"))?;
        for banned in [
            "$ref", "$defs", "$schema", "anyOf", "oneOf", "allOf", "format", "nullable",
        ] {
            if map.contains_key(banned) {
                return Err(format!("{path}: `{banned}`"));
            }
        }
        let kind = map["type"]
            .as_str()
            .ok_or(format!("{path}: type is not one string"))?;
        if top && kind != "object" {
            return Err(format!("{path}: not an object"));
        }
        if top || kind == "object" {
            for (name, property) in map["properties"]
                .as_object()
                .ok_or(format!("{path}: no properties"))?
            {
                if top && property["description"].as_str().is_none_or(str::is_empty) {
                    return Err(format!("{path}.{name}: no description"));
                }
                walk(&format!("{path}.{name}"), property, false)?;
            }
        } else if kind == "array" {
            walk(&format!("{path}[]"), &map["items"], false)?;
        } else if !["string", "number", "integer", "boolean"].contains(&kind) {
            return Err(format!("{path}: type {kind}"));
        }
        Ok(())
    }
    walk("input", schema, true)
}

/// An agent definition for the test sheep with `script`.
pub fn sheep(world: &World, name: &str, script: &str) {
    world.define_test_sheep(name, script, None);
}
