//! `shepherd-test-mcp`: a one-tool stdio MCP server for tests with real coding agents (see
//! `shepherd_testkit::test_mcp`). Usage: `shepherd-test-mcp --file PATH [--log PATH]
//! [--name NAME]`.

use std::process::ExitCode;

use shepherd_testkit::test_mcp::{Config, serve_stdio};

fn main() -> ExitCode {
    let config = match Config::from_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("shepherd-test-mcp: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("shepherd-test-mcp: starting the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_stdio(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("shepherd-test-mcp: {err}");
            ExitCode::FAILURE
        }
    }
}
