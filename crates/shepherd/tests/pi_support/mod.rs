//! A shepherd pi session under test: a real parent pi in RPC mode with our extension, its sheep
//! real pi processes too, every model a script on one fake model server, and the built
//! `shepherd` on PATH. Nothing reaches the network or the machine's pi state.
//!
//! The parent's model replies are appended turn by turn, because they must name the opaque ids
//! earlier tool calls returned; a sheep step that must wait for the test (to learn its note path,
//! or to be mid-run when the parent acts) is held on a gate of the fake server.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::{FakeLlm, RecordedRequest, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv, PiRpc};

mod options;
mod records;
mod surface;
pub use options::*;
#[allow(unused_imports)]
pub use records::*;
#[allow(unused_imports)]
pub use surface::*;

/// The parent's model id.
pub const PARENT_MODEL: &str = "parent-model";

/// Generous: pi 0.73 takes about 2 s to start, and a sheep is a whole pi.
pub const TURN: Duration = Duration::from_secs(90);

pub struct Shepherd {
    pub fake: FakeLlm,
    pub env: PiEnv,
    pub pi: PiBinary,
    pub backend: Backend,
    pub bin_dir: PathBuf,
    pub runtime: PathBuf,
    pub tmux_dir: PathBuf,
    parent: Option<PiRpc>,
    pub session_id: String,
    /// Parent queue steps appended so far, for messages.
    pub turns: usize,
}

impl Shepherd {
    /// Starts the fake model, the environment and the parent pi (with our extension).
    pub fn start(pi: &PiBinary, backend: Backend, options: &Options) -> Self {
        let mut shepherd = Self::prepare(pi, backend, options);
        let extensions: Vec<String> = options
            .extensions
            .iter()
            .flat_map(|e| ["-e".to_owned(), e.display().to_string()])
            .collect();
        let extra: Vec<&str> = extensions.iter().map(String::as_str).collect();
        shepherd.launch_parent(&extra);
        shepherd
    }

    /// Starts the fake model and the environment, without a parent pi: for a parent run some
    /// other way (in a terminal, see [`Shepherd::tui_launch`]).
    pub fn prepare(pi: &PiBinary, backend: Backend, options: &Options) -> Self {
        let fake = FakeLlm::start(Script::new()).expect("fake model server");
        let mut builder = PiEnv::builder(&fake)
            .model(PARENT_MODEL)
            .default_model(PARENT_MODEL);
        for (_, model) in &options.agents {
            builder = builder.model(model);
        }
        for model in &options.thinking_models {
            builder = builder.thinking_model(model);
        }
        let env = builder.build().expect("pi environment");
        let root = env.root().to_path_buf();
        let bin_dir = root.join("bin");
        let runtime = root.join("run");
        let tmux_dir = root.join("tmux");
        for dir in [&bin_dir, &runtime, &tmux_dir] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_shepherd"), bin_dir.join("shepherd"))
            .unwrap();

        let agents = env.agent_dir().join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        for (name, model) in &options.agents {
            std::fs::write(
                agents.join(format!("{name}.md")),
                format!(
                    "---\nname: {name}\ndescription: Test {name} on a scripted model.\nmodel: fake/{model}\n---\nYou are the test {name}.\n"
                ),
            )
            .unwrap();
        }
        let mut settings = json!({ "backend": backend.name() });
        if let (Some(into), Some(from)) = (settings.as_object_mut(), options.settings.as_object()) {
            into.extend(from.clone());
        }
        let config = env.agent_dir().join("pi-shepherd");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.json"), settings.to_string()).unwrap();

        // The parent pi runs through a wrapper that puts `shepherd` on PATH, tells the broker
        // which pi runs sheep, and gives it private runtime and tmux directories.
        let wrapper = bin_dir.join("parent-pi");
        let mut script = String::from("#!/bin/sh\n");
        for var in [
            "TMUX",
            "TMUX_PANE",
            "SHEPHERD_AGENT_ID",
            "SHEPHERD_SOCKET",
            "SHEPHERD_TOKEN",
            "SHEPHERD_DEPTH",
            "SHEPHERD_BIN",
            "HERDR_ENV",
            "HERDR_PANE_ID",
            "HERDR_SOCKET_PATH",
            "HERDR_WORKSPACE_ID",
        ] {
            script.push_str(&format!("unset {var}\n"));
        }
        let mut vars = vec![
            (
                "PATH".to_owned(),
                format!(
                    "{}:{}",
                    bin_dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
            ("SHEPHERD_PI".to_owned(), pi.path.display().to_string()),
            ("XDG_RUNTIME_DIR".to_owned(), runtime.display().to_string()),
            ("TMUX_TMPDIR".to_owned(), tmux_dir.display().to_string()),
        ];
        vars.extend(
            options
                .env
                .iter()
                .map(|(key, value)| (key.clone(), value.replace("{fake}", &fake.url()))),
        );
        for (key, value) in vars {
            script.push_str(&format!("export {key}={}\n", shell_quote(&value)));
        }
        script.push_str(&format!(
            "exec {} \"$@\"\n",
            shell_quote(&pi.path.display().to_string())
        ));
        std::fs::write(&wrapper, script).unwrap();
        set_executable(&wrapper);

        Self {
            fake,
            env,
            pi: pi.clone(),
            backend,
            bin_dir,
            runtime,
            tmux_dir,
            parent: None,
            session_id: String::new(),
            turns: 0,
        }
    }

    /// The parent pi's interactive TUI (through the wrapper, with our extension), for a test
    /// terminal.
    pub fn tui_launch(&self) -> shepherd_testkit::agents::TuiLaunch {
        let mut env: Vec<(String, std::ffi::OsString)> = self
            .env
            .vars()
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect();
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".to_owned(), path));
        }
        shepherd_testkit::agents::TuiLaunch {
            program: self.bin_dir.join("parent-pi"),
            args: shepherd_testkit::pi::HERMETIC_ARGS
                .iter()
                .map(Into::into)
                .chain([
                    "-e".into(),
                    extension_path().into_os_string(),
                    "--model".into(),
                    format!("fake/{PARENT_MODEL}").into(),
                ])
                .collect(),
            env,
            cwd: self.project(),
        }
    }

    /// Starts the parent pi (through the wrapper, with our extension) and reads its session.
    fn launch_parent(&mut self, extra: &[&str]) {
        let parent_pi = PiBinary {
            version: self.pi.version,
            path: self.bin_dir.join("parent-pi"),
        };
        let extension = extension_path().display().to_string();
        let model = format!("fake/{PARENT_MODEL}");
        let mut args = vec!["-e", extension.as_str(), "--model", model.as_str()];
        args.extend_from_slice(extra);
        let mut parent = PiRpc::spawn(&self.env, &parent_pi, &args).expect("parent pi starts");
        let state = parent
            .call(json!({"type": "get_state"}), TURN)
            .expect("parent pi answers get_state");
        let session_id = state["data"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("get_state without a session id: {state}"))
            .to_owned();
        assert!(
            self.session_id.is_empty() || self.session_id == session_id,
            "a resumed session keeps its id"
        );
        self.session_id = session_id;
        self.parent = Some(parent);
    }

    /// Quits the parent pi (its herd and broker keep running) and resumes the same session in
    /// a new pi process.
    pub fn restart_parent(&mut self) {
        let state = self
            .parent()
            .call(json!({"type": "get_state"}), TURN)
            .expect("get_state");
        let file = state["data"]["sessionFile"]
            .as_str()
            .expect("the session has a file")
            .to_owned();
        let status = self
            .parent
            .take()
            .unwrap()
            .close(TURN)
            .expect("the parent pi exits when its stdin closes");
        assert!(status.success(), "{status}");
        self.launch_parent(&["--session", &file]);
    }

    pub fn parent(&mut self) -> &mut PiRpc {
        self.parent.as_mut().expect("the parent pi runs")
    }

    /// The project directory (the parent's cwd).
    pub fn project(&self) -> PathBuf {
        self.env.work_dir().canonicalize().unwrap()
    }

    /// Appends steps to the parent's model queue.
    pub fn parent_says(&self, steps: impl IntoIterator<Item = Step>) {
        self.fake.append(PARENT_MODEL, steps);
    }

    /// Prompts the parent, whose model answers with `steps`, and waits for the run to end.
    /// Returns the run's records.
    pub fn parent_turn(&mut self, prompt: &str, steps: Vec<Step>) -> Vec<Value> {
        self.parent_says(steps);
        self.turns += 1;
        let parent = self.parent();
        parent.prompt(prompt, TURN).expect("prompt accepted");
        parent
            .wait_run_finished(TURN)
            .expect("the parent's run ends")
    }

    /// Waits for the next parent run (one a notification started) to end.
    pub fn parent_woken(&mut self) -> Vec<Value> {
        let parent = self.parent();
        parent
            .wait_for_event("agent_start", TURN)
            .expect("a notification starts a parent run");
        parent.wait_run_finished(TURN).expect("the woken run ends")
    }

    /// Runs a parent turn that calls one tool, and returns that call's result details.
    pub fn call_tool(&mut self, tool: &str, arguments: Value) -> Value {
        let shown = arguments.to_string();
        let records = self.parent_turn(
            &format!("call {tool}"),
            vec![
                Step::tool_call(tool, arguments),
                Step::text(format!("{tool} done")),
            ],
        );
        tool_result(&records, tool).unwrap_or_else(|| {
            panic!(
                "{tool} {shown} did not succeed; records:\n{}",
                summary(&records)
            )
        })
    }

    /// Runs a parent turn whose tool call must fail; returns the error text.
    pub fn call_tool_failing(&mut self, tool: &str, arguments: Value) -> String {
        let records = self.parent_turn(
            &format!("call {tool}"),
            vec![
                Step::tool_call(tool, arguments),
                Step::text(format!("{tool} failed")),
            ],
        );
        let end = tool_end(&records, tool).expect("the tool ran");
        assert_eq!(end["isError"], json!(true), "{tool} should fail: {end}");
        result_text(&end["result"])
    }

    pub fn spawn(&mut self, agent: &str, label: &str) -> String {
        let details = self.call_tool("shepherd_spawn", json!({"agent": agent, "label": label}));
        assert_eq!(details["backend"], self.backend.name(), "{details}");
        details["id"]
            .as_str()
            .expect("spawn returns an id")
            .to_owned()
    }

    pub fn delegate(&mut self, target: &str, task: &str, timeout: Option<f64>) -> Value {
        let mut args = json!({"target": target, "task": task});
        if let Some(timeout) = timeout {
            args["timeout"] = json!(timeout);
        }
        self.call_tool("shepherd_delegate", args)
    }

    pub fn watch(&mut self, ids: &[&str]) -> Value {
        self.call_tool("shepherd_watch", json!({"id": ids}))
    }

    /// The model requests a model id received so far.
    pub fn requests(&self, model: &str) -> Vec<RecordedRequest> {
        self.fake.requests_for(model)
    }

    /// Waits until `model` has received `count` requests.
    pub fn wait_requests(&self, model: &str, count: usize) -> Vec<RecordedRequest> {
        self.fake
            .wait_until(&format!("{count} requests for {model}"), TURN, |all| {
                all.iter().filter(|r| r.model == model).count() >= count
            })
            .expect("model requests arrive")
            .into_iter()
            .filter(|r| r.model == model)
            .collect()
    }

    /// Waits until a parent model request carries `needle` in one of its messages, and
    /// returns that message's text. A notification may reach the parent's model in a run of its
    /// own, or steer one already running, and two may arrive in one request.
    pub fn wait_parent_input(&self, needle: &str) -> String {
        let found = |r: &RecordedRequest| {
            (r.model == PARENT_MODEL)
                .then(|| {
                    r.messages()
                        .iter()
                        .map(message_text)
                        .find(|text| text.contains(needle))
                })
                .flatten()
        };
        let requests = self
            .fake
            .wait_until(&format!("a parent request with {needle:?}"), TURN, |all| {
                all.iter().any(|r| found(r).is_some())
            })
            .expect("the parent's model is told");
        requests.iter().find_map(found).unwrap()
    }

    /// The parent's requests whose last input contains `needle`.
    pub fn parent_requests_with(&self, needle: &str) -> Vec<RecordedRequest> {
        self.requests(PARENT_MODEL)
            .into_iter()
            .filter(|r| r.last_input_text().contains(needle))
            .collect()
    }

    /// Runs `shepherd` as the parent's herd would see it (same HOME, agent dir, runtime dir).
    pub fn shepherd(&self, args: &[&str]) -> Value {
        let mut command = self.shepherd_command(args);
        command.args(["--parent-session", &self.session_id]);
        parse_output(args, &mut command)
    }

    /// Follows the herd's pushed feed (`shepherd herd --follow --json`) until a view satisfies
    /// `done` (`what` names it in the failure); returns that view.
    pub fn herd_until(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        use std::io::BufRead;
        let mut command = self.shepherd_command(&["herd", "--follow"]);
        command.args(["--parent-session", &self.session_id]);
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, views) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = std::time::Instant::now() + TURN;
        let mut last = String::new();
        let found = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match views.recv_timeout(left) {
                Ok(line) => {
                    let view: Value = serde_json::from_str(&line).unwrap();
                    if done(&view) {
                        break Some(view);
                    }
                    last = line;
                }
                Err(_) => break None,
            }
        };
        let _killed = child.kill();
        let _ended = child.wait();
        found
            .unwrap_or_else(|| panic!("no herd view with {what} within {TURN:?}; the last: {last}"))
    }

    /// Runs a `shepherd` command that is not about the herd (agents, settings) in the project.
    pub fn shepherd_project(&self, args: &[&str]) -> Value {
        let mut command = self.shepherd_command(args);
        parse_output(args, &mut command)
    }

    /// Runs a `shepherd` command in the project that must fail, and returns what it said.
    pub fn shepherd_project_failing(&self, args: &[&str]) -> String {
        let output = self.shepherd_command(args).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !output.status.success(),
            "shepherd {args:?} succeeded: {said}"
        );
        said
    }

    /// `shepherd` in the project with the herd's environment and `--json`, not yet run.
    pub fn shepherd_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_shepherd"));
        self.env.apply(&mut command);
        command
            .args(args)
            .args(["--json", "--project", &self.project().display().to_string()])
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .env("SHEPHERD_PI", &self.pi.path)
            .env_remove("TMUX");
        command
    }

    /// Every UI request of one method the extension made so far.
    pub fn ui_requests(&mut self, method: &str) -> Vec<Value> {
        self.parent()
            .records()
            .iter()
            .filter(|r| r["type"] == "extension_ui_request" && r["method"] == method)
            .cloned()
            .collect()
    }

    /// The first UI request of `method` that satisfies `matches`, waiting for it when it has
    /// not come yet.
    pub fn wait_ui(&mut self, method: &str, mut matches: impl FnMut(&Value) -> bool) -> Value {
        let is = |r: &Value| r["type"] == "extension_ui_request" && r["method"] == method;
        if let Some(found) = self.parent().records().iter().find(|r| is(r) && matches(r)) {
            return found.clone();
        }
        self.parent()
            .wait_for(&format!("a {method} UI request"), TURN, |r| {
                is(r) && matches(r)
            })
            .expect("the UI request comes")
    }

    /// The first UI request of `method` after record `start` that satisfies `matches`, waiting
    /// for it when it has not come yet.
    pub fn wait_ui_since(
        &mut self,
        start: usize,
        method: &str,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Value {
        let is = |r: &Value| r["type"] == "extension_ui_request" && r["method"] == method;
        loop {
            let records = self.parent().records();
            if let Some(found) = records
                .get(start..)
                .into_iter()
                .flatten()
                .find(|r| is(r) && matches(r))
            {
                return found.clone();
            }
            // One more record (an older one the cursor has not passed yet comes back at once).
            self.parent()
                .wait_for(&format!("a {method} UI request"), TURN, |_| true)
                .expect("the UI request comes");
        }
    }

    /// Fails the test when a scripted model received something its script did not expect.
    pub fn assert_no_mismatches(&self) {
        let mismatches = self.fake.mismatches();
        assert!(
            mismatches.is_empty(),
            "the models saw something unexpected: {mismatches:#?}"
        );
    }
}

impl Drop for Shepherd {
    fn drop(&mut self) {
        // Let held replies go, stop the herd (closing every sheep), then the parent.
        for gate in ["note", "hold", "reply", "crash", "planner", "never"] {
            self.fake.release(gate);
        }
        if !self.session_id.is_empty() {
            let _stopped = self
                .shepherd_command(&["broker", "stop", "--parent-session", &self.session_id])
                .output();
        }
        if let Some(parent) = self.parent.take() {
            let _closed = parent.close(Duration::from_secs(10));
        }
        let _killed = Command::new("tmux")
            .arg("kill-server")
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .output();
    }
}

fn parse_output(args: &[&str], command: &mut Command) -> Value {
    let output = command.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| {
        panic!(
            "shepherd {args:?}: {text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    permissions.set_mode(0o755);
    std::fs::set_permissions(path, permissions).unwrap();
}
