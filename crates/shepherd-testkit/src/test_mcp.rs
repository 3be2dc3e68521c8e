//! The smallest useful MCP server, `shepherd-test-mcp`, for running real coding agents with an
//! MCP server given for one run: one tool, [`TOOL`] (`append_line`), that appends its `line`
//! argument to a file and answers `appended line N: <line>`.
//!
//! A test scripts the fake model to call the tool, then checks three things that each could
//! fail on their own: the line is in the file (the agent started the server and called it), the
//! answer text is in the next model request (the agent passed the result back), and the agent's
//! final text is in its output. The server speaks stdio with the `rmcp` crate, as Shepherd's own
//! MCP front end will. It reports each event of a session (`initialize` with the client's name
//! and protocol version, `list_tools`, each `call`) as a JSON line in a log file and, so that a
//! test can wait for one without polling, as a datagram to a Unix socket ([`Events`]): a TUI
//! test waits for `list_tools` before it types, because Claude Code's TUI connects MCP servers
//! in the background.
//!
//! Usage: `shepherd-test-mcp --file PATH [--log PATH] [--notify SOCKET] [--name NAME]`.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

/// The one tool's name. Agents show it prefixed (`mcp__<server>__append_line` in Claude Code,
/// `mcp_<server>_append_line` in Gemini CLI, `<server>_append_line` in opencode, and inside
/// the namespace `mcp__<server>` in Codex).
pub const TOOL: &str = "append_line";

/// The server name it reports when `--name` is not given.
pub const DEFAULT_NAME: &str = "shepherd-test-mcp";

/// The tool's answer after it appended `line` as the file's line number `count`.
#[must_use]
pub fn answer(count: usize, line: &str) -> String {
    format!("appended line {count}: {line}")
}

/// Where the server writes and what it calls itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file lines are appended to (created when missing).
    pub file: PathBuf,
    /// A JSON-lines log of the session, when wanted.
    pub log: Option<PathBuf>,
    /// A Unix datagram socket each event is also sent to ([`Events`]), when wanted.
    pub notify: Option<PathBuf>,
    /// The server name in the `initialize` answer.
    pub name: String,
}

impl Config {
    /// Parses the command line (without the program name).
    ///
    /// # Errors
    /// A usage message for a missing `--file`, a flag without a value or an unknown flag.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        const USAGE: &str =
            "usage: shepherd-test-mcp --file PATH [--log PATH] [--notify SOCKET] [--name NAME]";
        let mut args = args.into_iter();
        let (mut file, mut log, mut notify) = (None, None, None);
        let mut name = DEFAULT_NAME.to_owned();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
            match arg.as_str() {
                "--file" => file = Some(PathBuf::from(value()?)),
                "--log" => log = Some(PathBuf::from(value()?)),
                "--notify" => notify = Some(PathBuf::from(value()?)),
                "--name" => name = value()?,
                "-h" | "--help" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            }
        }
        let file = file.ok_or(format!("--file is required\n{USAGE}"))?;
        Ok(Self {
            file,
            log,
            notify,
            name,
        })
    }
}

/// The tool's arguments.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AppendLine {
    /// The text to append, as one line.
    pub line: String,
}

/// The server.
#[derive(Debug, Clone)]
pub struct TestMcp {
    config: Config,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TestMcp {
    /// A server for `config`.
    #[must_use]
    pub fn new(config: Config) -> Self {
        Self {
            config,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "append_line",
        description = "Append one line of text to the test file. Answers `appended line N: <line>`."
    )]
    async fn append_line(
        &self,
        Parameters(AppendLine { line }): Parameters<AppendLine>,
    ) -> Result<CallToolResult, ErrorData> {
        self.log(&json!({"event": "call", "tool": TOOL, "line": line}));
        match append(&self.config.file, &line) {
            Ok(count) => Ok(CallToolResult::success(vec![ContentBlock::text(answer(
                count, &line,
            ))])),
            // A tool error the model can read, not a protocol error.
            Err(err) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "cannot append to {}: {err}",
                self.config.file.display()
            ))])),
        }
    }

    /// Appends one JSON line to the log and sends it to the notify socket, for those there
    /// are. Reporting must never fail a call.
    fn log(&self, event: &Value) {
        if let Some(path) = &self.config.log
            && let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path)
        {
            drop(writeln!(file, "{event}"));
        }
        if let Some(path) = &self.config.notify
            && let Ok(socket) = UnixDatagram::unbound()
        {
            drop(socket.send_to(event.to_string().as_bytes(), path));
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.config.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("A test server: append_line appends a line to a file.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.log(&json!({"event": "list_tools"}));
        Ok(ListToolsResult::with_all_items(self.tool_router.list_all()))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.log(&json!({
            "event": "initialize",
            "client": request.client_info.name,
            "client_version": request.client_info.version,
            "protocol": request.protocol_version.to_string(),
        }));
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }
}

/// Appends `line` and a newline; returns how many lines the file has now.
fn append(path: &Path, line: &str) -> std::io::Result<usize> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    drop(file);
    Ok(std::fs::read_to_string(path)?.lines().count())
}

/// Serves one session on stdin/stdout until the client closes it.
///
/// # Errors
/// When the session cannot start (the client never sent `initialize`) or ends abnormally.
pub async fn serve_stdio(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    let server = TestMcp::new(config);
    let logger = server.clone();
    let running = server.serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    logger.log(&json!({"event": "closed", "reason": format!("{reason:?}")}));
    Ok(())
}

/// The receiving end of `--notify`: a Unix datagram socket in a temporary directory that
/// collects the server's events, so a test can wait for one (an event with a deadline).
#[derive(Debug)]
pub struct Events {
    dir: tempfile::TempDir,
    socket: UnixDatagram,
    received: Vec<Value>,
}

/// A wait for an event that passed its deadline.
#[derive(Debug, thiserror::Error)]
#[error("no {event:?} event from the test MCP server within {waited:?}; received: {received:?}")]
pub struct EventTimeout {
    /// The awaited event.
    pub event: String,
    /// How long.
    pub waited: Duration,
    /// What did arrive.
    pub received: Vec<Value>,
}

impl Events {
    /// Binds the socket.
    ///
    /// # Errors
    /// When the temporary directory or the socket cannot be made.
    pub fn bind() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("shepherd-mcp-").tempdir()?;
        let socket = UnixDatagram::bind(dir.path().join("events"))?;
        Ok(Self {
            dir,
            socket,
            received: Vec::new(),
        })
    }

    /// The socket's path, for `--notify`.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("events")
    }

    /// Every event received so far.
    #[must_use]
    pub fn received(&self) -> &[Value] {
        &self.received
    }

    /// Waits until an event named `event` has arrived (now or before); returns it.
    ///
    /// # Errors
    /// [`EventTimeout`] when none arrives within `timeout`.
    pub fn wait_for(&mut self, event: &str, timeout: Duration) -> Result<Value, EventTimeout> {
        let deadline = Instant::now() + timeout;
        let mut buffer = vec![0; 64 * 1024];
        loop {
            if let Some(found) = self.received.iter().find(|e| e["event"] == event) {
                return Ok(found.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let received = !left.is_zero()
                && self.socket.set_read_timeout(Some(left)).is_ok()
                && match self.socket.recv(&mut buffer) {
                    Ok(n) => {
                        if let Ok(value) = serde_json::from_slice(&buffer[..n]) {
                            self.received.push(value);
                        }
                        true
                    }
                    Err(_) => false,
                };
            if !received {
                return Err(EventTimeout {
                    event: event.to_owned(),
                    waited: timeout,
                    received: self.received.clone(),
                });
            }
        }
    }
}
