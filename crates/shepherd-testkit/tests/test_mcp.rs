//! `shepherd-test-mcp` through a real MCP client (rmcp's, over the child's stdio): it offers
//! exactly one tool with a flat schema, appends each line and answers with the count, reports a
//! write failure as a tool error the model can read, logs the session to a file and to a
//! datagram socket, and refuses bad arguments.

use std::process::Command as StdCommand;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt as _, TokioChildProcess};
use serde_json::{Value, json};
use shepherd_testkit::test_mcp::{Events, TOOL, answer};

const BIN: &str = env!("CARGO_BIN_EXE_shepherd-test-mcp");
const T: Duration = Duration::from_secs(20);

fn call(line: &str) -> CallToolRequestParams {
    let arguments = json!({ "line": line });
    CallToolRequestParams::new(TOOL).with_arguments(arguments.as_object().unwrap().clone())
}

#[tokio::test]
async fn offers_one_tool_appends_lines_answers_with_the_count_and_logs_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines.txt");
    let log = dir.path().join("mcp.jsonl");
    let mut events = Events::bind().unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.arg("--file")
            .arg(&file)
            .arg("--log")
            .arg(&log)
            .arg("--notify")
            .arg(events.path())
            .arg("--name")
            .arg("test");
    }))
    .unwrap();
    let session = async {
        let client = ().serve(transport).await.unwrap();
        let info = client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "test");

        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, TOOL);
        let schema = Value::Object((*tools[0].input_schema).clone());
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["line"]["type"], "string");
        assert_eq!(schema["required"], json!(["line"]));

        for (count, line) in [(1, "first"), (2, "second line")] {
            let result = client.call_tool(call(line)).await.unwrap();
            let result = serde_json::to_value(&result).unwrap();
            assert_eq!(result["content"][0]["text"], answer(count, line));
            assert_ne!(result["isError"], json!(true));
        }
        client.cancel().await.unwrap();
    };
    tokio::time::timeout(T, session).await.unwrap();

    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "first\nsecond line\n"
    );
    // Each event is logged before the client hears the answer to its request.
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = logged
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..4], ["initialize", "list_tools", "call", "call"]);
    assert_eq!(logged[0]["client"], "rmcp");
    assert_eq!(logged[3]["line"], "second line");
    // The same events came as datagrams.
    let initialize = events.wait_for("initialize", T).unwrap();
    assert_eq!(initialize["client"], "rmcp");
    events.wait_for("list_tools", T).unwrap();
    let timeout = events
        .wait_for("never", Duration::from_millis(50))
        .unwrap_err();
    let kinds: Vec<&str> = timeout
        .received
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    // `closed` follows once the server saw the client go, if that happened yet.
    assert_eq!(kinds[..4], ["initialize", "list_tools", "call", "call"]);
}

#[tokio::test]
async fn a_file_it_cannot_write_is_a_tool_error_not_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("missing-dir").join("lines.txt");
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.arg("--file").arg(&file);
    }))
    .unwrap();
    let session = async {
        let client = ().serve(transport).await.unwrap();
        let result = client.call_tool(call("x")).await.unwrap();
        let result = serde_json::to_value(&result).unwrap();
        assert_eq!(result["isError"], json!(true));
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("cannot append to ")
        );
        client.cancel().await.unwrap();
    };
    tokio::time::timeout(T, session).await.unwrap();
}

#[test]
fn refuses_bad_arguments_with_usage() {
    for args in [
        &[][..],
        &["--file"][..],
        &["--file", "f", "--port", "1"][..],
    ] {
        let output = StdCommand::new(BIN).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("usage: shepherd-test-mcp"), "{stderr}");
    }
}
