//! A broker started in this test process on a private directory, the parent's connection to it,
//! and sheep the test speaks for.
//!
//! A sheep needs a supervisor process: the broker starts one (its `shepherd supervise`) for
//! every spawn, and the supervisor's report that the program runs is what makes the spawn
//! ready. Here the broker's `shepherd` executable is a two-line script that runs this test
//! binary's ignored `fake_supervisor` test instead ([`run_fake_supervisor`]): it starts the
//! sheep's program (a `sleep`), says `supervisor.started` with the pids the broker checks, leaves
//! the sheep's id and capability where the test finds them, and ends the program when the
//! broker says `terminate`. The test then connects as that sheep itself, so the sheep's side of
//! every request is driven from the test through a real client connection.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_broker::BrokerConfig;
use shepherd_broker::clock::SystemClock;
use shepherd_broker::serve::{RunningBroker, start};
use shepherd_client::paths::{BrokerAddress, BrokerPaths};
use shepherd_client::wire::{Client, ClientError};
use shepherd_core::dirs::UserDirs;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role, event, method};

/// The environment variable that makes the `fake_supervisor` test act: the file holding the
/// supervisor's arguments, NUL-separated.
const ARGS_VAR: &str = "SHEPHERD_TEST_SUPERVISOR_ARGS";
/// Where the fake supervisor leaves each sheep's id and token (`<dir>/<agent id>.json`).
const SHEEP_DIR_VAR: &str = "SHEPHERD_TEST_SHEEP_DIR";
/// The longest any wait in these tests may take before it fails the test.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
/// The longest a fake supervisor lives, whatever happens to the test that started it.
const SUPERVISOR_LIFE: Duration = Duration::from_secs(120);

/// One broker in this process, with its own HOME, runtime directory and project.
pub(crate) struct Herd {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) project: PathBuf,
    socket: PathBuf,
    running: Option<RunningBroker>,
    /// The parent's connection.
    pub(crate) parent: Client,
}

/// A sheep the test speaks for, over its own connection.
pub(crate) struct Sheep {
    pub(crate) id: String,
    pub(crate) token: String,
    pub(crate) client: Client,
}

impl Herd {
    /// Starts a broker and connects as its parent.
    pub(crate) async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        let sheep_dir = dir.path().join("sheep");
        for d in [&home, &runtime, &project, &sheep_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = project.canonicalize().unwrap();
        let supervisor = write_supervisor_script(dir.path(), &sheep_dir);
        let (env_home, env_runtime) = (home.clone(), runtime.clone());
        let dirs = UserDirs::resolve(
            |name| match name {
                "HOME" => Some(env_home.clone().into_os_string()),
                "XDG_RUNTIME_DIR" => Some(env_runtime.clone().into_os_string()),
                _ => None,
            },
            rustix::process::getuid().as_raw(),
            &std::env::temp_dir(),
        )
        .unwrap();
        let address = BrokerAddress::new("handlers-test-parent", &project);
        let paths = BrokerPaths::new(&dirs, &address);
        let config = BrokerConfig {
            address,
            paths,
            dirs,
            shepherd_exe: supervisor,
            depth: 0,
            startup_limit: DEADLINE,
            adoption_grace: Duration::from_secs(10),
            orphan_grace: Duration::from_secs(60),
            pi_command: None,
            hello_deadline: Duration::from_secs(10),
        };
        let running = start(config, Arc::new(SystemClock), Vec::new())
            .await
            .unwrap();
        let socket = running.socket().to_path_buf();
        let parent = connect(&socket, Role::Parent, None, None).await.unwrap();
        Self {
            dir,
            home,
            project,
            socket,
            running: Some(running),
            parent,
        }
    }

    /// Writes a user agent definition (no approval needed) that runs `argv`.
    pub(crate) fn define(&self, name: &str, argv: &[&str]) {
        let dir = self.home.join(".pi/agent/agents");
        std::fs::create_dir_all(&dir).unwrap();
        let command = serde_json::to_string(argv).unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: Test sheep {name}.\ncommand: {command}\n---\nA test sheep.\n"
        );
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
    }

    /// Defines `worker`, a sheep whose program only waits to be ended.
    pub(crate) fn define_worker(&self) {
        self.define("worker", &["sleep", "600"]);
    }

    /// A new connection to this broker.
    pub(crate) async fn connect(
        &self,
        role: Role,
        agent_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<Client, ClientError> {
        connect(&self.socket, role, agent_id, token).await
    }

    /// A parent request that must succeed.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        call(&mut self.parent, method, params).await
    }

    /// A parent request that must be refused: its code and message.
    pub(crate) async fn refused(&mut self, method: &str, params: Value) -> (ErrorCode, String) {
        refused(&mut self.parent, method, params).await
    }

    /// Spawns `agent` headless and connects as the new sheep.
    pub(crate) async fn spawn(&mut self, agent: &str) -> (Value, Sheep) {
        let spawned = self
            .call(
                method::SPAWN,
                json!({ "agent": agent, "backend": "headless" }),
            )
            .await;
        let id = spawned["agentId"].as_str().unwrap().to_owned();
        let token = self.sheep_token(&id);
        let client = self
            .connect(Role::Sheep, Some(&id), Some(&token))
            .await
            .unwrap();
        (spawned, Sheep { id, token, client })
    }

    /// The capability of a sheep this broker spawned and that runs: its fake supervisor wrote
    /// it before saying the program runs, which is what makes a spawn ready.
    pub(crate) fn sheep_token(&self, agent_id: &str) -> String {
        let file = self
            .dir
            .path()
            .join("sheep")
            .join(format!("{agent_id}.json"));
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written["agentId"], agent_id, "{written}");
        written["token"].as_str().unwrap().to_owned()
    }

    /// Parent inbox items: waits up to [`DEADLINE`] for the first, acknowledges them all.
    pub(crate) async fn inbox(&mut self) -> Vec<Value> {
        inbox(&mut self.parent).await
    }

    /// The first parent inbox item of type `kind` (`envelope`, `completion`, `notice`…),
    /// fetching and acknowledging until one comes, within [`DEADLINE`].
    pub(crate) async fn inbox_item(&mut self, kind: &str) -> Value {
        tokio::time::timeout(DEADLINE, async {
            loop {
                if let Some(item) = self.inbox().await.into_iter().find(|i| i["type"] == kind) {
                    return item;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {kind} in the parent's inbox within {DEADLINE:?}"))
    }

    /// Stops the broker the way `broker stop` does (every sheep closed first).
    pub(crate) async fn stop(mut self) {
        self.call(method::BROKER_STOP, json!({})).await;
        let running = self.running.take().unwrap();
        tokio::time::timeout(DEADLINE, running.wait())
            .await
            .expect("the broker stops");
    }
}

impl Drop for Herd {
    fn drop(&mut self) {
        // A test that failed before `stop`: end the broker; each fake supervisor sees its
        // connection close and ends its sheep.
        if let Some(running) = &self.running {
            running.shutdown();
        }
    }
}

impl Sheep {
    /// A sheep request that must succeed.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        call(&mut self.client, method, params).await
    }

    /// A sheep request that must be refused: its code and message.
    pub(crate) async fn refused(&mut self, method: &str, params: Value) -> (ErrorCode, String) {
        refused(&mut self.client, method, params).await
    }

    /// The sheep's inbox: waits up to [`DEADLINE`] for the first item, acknowledges them all.
    pub(crate) async fn inbox(&mut self) -> Vec<Value> {
        inbox(&mut self.client).await
    }
}

async fn connect(
    socket: &Path,
    role: Role,
    agent_id: Option<&str>,
    token: Option<&str>,
) -> Result<Client, ClientError> {
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role,
        agent_id: agent_id.map(str::to_owned),
        token: token.map(str::to_owned),
        client: Some("handlers-test".into()),
        session_file: None,
        driver: None,
    };
    let (client, _) = tokio::time::timeout(DEADLINE, Client::open(socket, &hello))
        .await
        .expect("the broker answers hello")?;
    Ok(client)
}

async fn call(client: &mut Client, method: &str, params: Value) -> Value {
    tokio::time::timeout(DEADLINE, client.call_value(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method} answered within {DEADLINE:?}"))
        .unwrap_or_else(|err| panic!("{method}: {err} ({:?})", err.code()))
}

async fn refused(client: &mut Client, method: &str, params: Value) -> (ErrorCode, String) {
    let answer = tokio::time::timeout(DEADLINE, client.call_value(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method} answered within {DEADLINE:?}"));
    match answer {
        Ok(value) => panic!("{method} was accepted: {value}"),
        Err(ClientError::Remote(err)) => (err.code, err.message),
        Err(err) => panic!("{method} failed on the connection, not in the broker: {err}"),
    }
}

async fn inbox(client: &mut Client) -> Vec<Value> {
    let wait_ms = u64::try_from(DEADLINE.as_millis()).unwrap();
    let got = call(client, method::INBOX, json!({ "waitMs": wait_ms })).await;
    let items = got["items"].as_array().cloned().unwrap_or_default();
    if let Some(last) = items.last() {
        call(client, method::ACK, json!({ "seq": last["seq"] })).await;
    }
    items
}

/// The envelope of the one `envelope` item among `items`.
pub(crate) fn only_envelope(items: &[Value]) -> Value {
    let envelopes: Vec<_> = items.iter().filter(|i| i["type"] == "envelope").collect();
    assert_eq!(envelopes.len(), 1, "{items:?}");
    envelopes[0]["envelope"].clone()
}

/// The script the broker runs as its `shepherd` executable: this test binary's
/// `fake_supervisor`, with the supervisor's arguments in a file (the test harness takes no
/// arguments of its own).
fn write_supervisor_script(dir: &Path, sheep_dir: &Path) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let script = dir.join("fake-shepherd");
    let text = format!(
        "#!/bin/sh\nargs='{dir}'/supervise.$$.args\nprintf '%s\\0' \"$@\" > \"$args\"\n\
         exec env {ARGS_VAR}=\"$args\" {SHEEP_DIR_VAR}='{sheep}' '{exe}' --exact fake_supervisor \
         --ignored --test-threads 1 -q\n",
        dir = dir.display(),
        sheep = sheep_dir.display(),
        exe = exe.display(),
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The fake supervisor: does nothing unless this process was started by the script above.
pub(crate) fn run_fake_supervisor() {
    let Some(args_file) = std::env::var_os(ARGS_VAR) else {
        return;
    };
    let args: Vec<String> = std::fs::read_to_string(&args_file)
        .unwrap()
        .split('\0')
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    let after = |flag: &str| {
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1].clone()
    };
    let credential_file = after("--credential-file");
    let program = args[args.iter().position(|a| a == "--").unwrap() + 1..].to_vec();
    let credential = std::fs::read_to_string(&credential_file).unwrap();
    // As the real supervisor does: the sheep never sees its supervisor's credential.
    std::fs::remove_file(&credential_file).unwrap();
    let var = |name: &str| std::env::var(name).unwrap();
    let (socket, agent_id, token) = (
        var("SHEPHERD_SOCKET"),
        var("SHEPHERD_AGENT_ID"),
        var("SHEPHERD_TOKEN"),
    );
    let mut child = std::process::Command::new(&program[0])
        .args(&program[1..])
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sheep_file = PathBuf::from(var(SHEEP_DIR_VAR)).join(format!("{agent_id}.json"));
    let written = json!({ "agentId": agent_id, "token": token }).to_string();
    let partial = sheep_file.with_extension("partial");
    std::fs::write(&partial, written).unwrap();
    std::fs::rename(&partial, &sheep_file).unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pid = child.id();
    runtime.block_on(async {
        let mut client = connect(
            Path::new(&socket),
            Role::Supervisor,
            Some(&agent_id),
            Some(&credential),
        )
        .await
        .unwrap();
        let started = json!({ "pid": pid, "supervisor_pid": std::process::id() });
        client
            .call_value(method::SUPERVISOR_STARTED, started)
            .await
            .unwrap();
        let told = tokio::time::timeout(SUPERVISOR_LIFE, async {
            loop {
                match client.next_push().await {
                    Ok((name, _)) if name == event::TERMINATE => return true,
                    Ok(_) => {}
                    Err(_) => return false,
                }
            }
        })
        .await
        .unwrap_or(false);
        let group = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        let _gone = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        let status = child.wait().unwrap();
        if told {
            let exited = json!({ "code": status.code(), "signal": status.signal(), "tail": "" });
            let _reported = client.call_value(method::SUPERVISOR_EXITED, exited).await;
        }
    });
    std::process::exit(0);
}
