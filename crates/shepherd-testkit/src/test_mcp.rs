//! The smallest useful MCP server, `shepherd-test-mcp`, for running real coding agents with an
//! MCP server given for one run: one tool, [`TOOL`] (`append_line`), that appends its `line`
//! argument to a file and answers `appended line N: <line>`.
//!
//! A test scripts the fake model to call the tool, then checks three things that each could
//! fail on their own: the line is in the file (the agent started the server and called it), the
//! answer text is in the next model request (the agent passed the result back), and the agent's
//! final text is in its output. The server speaks stdio with the `rmcp` crate, as Shepherd's own
//! MCP front end will, and can log each session (the client's name and protocol version, each
//! call) as JSON lines for tests to read.
//!
//! Usage: `shepherd-test-mcp --file PATH [--log PATH] [--name NAME]`.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, InitializeRequestParams, InitializeResult,
    ServerCapabilities, ServerConfig,
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
    /// The server name in the `initialize` answer.
    pub name: String,
}

impl Config {
    /// Parses the command line (without the program name).
    ///
    /// # Errors
    /// A usage message for a missing `--file`, a flag without a value or an unknown flag.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        const USAGE: &str = "usage: shepherd-test-mcp --file PATH [--log PATH] [--name NAME]";
        let mut args = args.into_iter();
        let (mut file, mut log, mut name) = (None, None, DEFAULT_NAME.to_owned());
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
            match arg.as_str() {
                "--file" => file = Some(PathBuf::from(value()?)),
                "--log" => log = Some(PathBuf::from(value()?)),
                "--name" => name = value()?,
                "-h" | "--help" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            }
        }
        let file = file.ok_or(format!("--file is required\n{USAGE}"))?;
        Ok(Self { file, log, name })
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

    /// Appends one JSON line to the log, if there is one. Logging must never fail a call.
    fn log(&self, event: &Value) {
        if let Some(path) = &self.config.log
            && let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path)
        {
            drop(writeln!(file, "{event}"));
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
