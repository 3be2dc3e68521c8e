//! The `shepherd-fake-llm` program, as shell scripts use it: it announces its port on stdout
//! and in the port file, serves its script, logs requests, and refuses bad arguments.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::client;

const T: Duration = Duration::from_secs(20);

/// Kills the server when the test ends, passed or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.0.kill());
        drop(self.0.wait());
    }
}

#[test]
fn announces_its_port_serves_the_script_and_logs_requests() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"queues": {"sheep": [{"text": "from the file"}]}}"#,
    )
    .unwrap();
    let port_file = dir.path().join("port");
    let log = dir.path().join("requests.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shepherd-fake-llm"))
        .arg("--script")
        .arg(&script)
        .arg("--port-file")
        .arg(&port_file)
        .arg("--log")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let (send, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            drop(send.send(line));
        }
    });
    let line = lines.recv_timeout(T).unwrap().unwrap();
    let port: u16 = line.strip_prefix("LISTENING ").unwrap().parse().unwrap();
    assert_eq!(
        std::fs::read_to_string(&port_file).unwrap(),
        port.to_string()
    );

    let url = format!("http://127.0.0.1:{port}");
    let body = json!({"model": "sheep", "messages": [{"role": "user", "content": "hello"}]});
    let reply = client::post_json(&format!("{url}/v1/chat/completions"), &body, T).unwrap();
    assert_eq!(
        reply.json().unwrap()["choices"][0]["message"]["content"],
        "from the file"
    );
    let state = client::get(&format!("{url}/_state"), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(state["served"], 1);
    // The request reached the log before its reply was written.
    let logged: Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(logged["model"], "sheep");
    assert_eq!(logged["body"]["messages"][0]["content"], "hello");
}

#[test]
fn refuses_bad_arguments_and_scripts() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_shepherd-fake-llm"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let output = run(&["--frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown argument"));

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.json");
    std::fs::write(&script, r#"{"responses": [{"txt": "typo"}]}"#).unwrap();
    let output = run(&["--script", script.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("txt"));
}
