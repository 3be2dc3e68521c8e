//! The dashboard in a real terminal: a private tmux server whose one pane runs `shepherd herd
//! --tui`, a broker in this process on a clock the test moves by hand (so every age on screen
//! is the same on every run), and a herd of `command` sheep defined by the test. The test
//! drives the herd through its own parent connection and the dashboard through `send-keys`,
//! and reads the dashboard back with `capture-pane`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_broker::BrokerConfig;
use shepherd_broker::clock::ManualClock;
use shepherd_broker::serve::{RunningBroker, start};
use shepherd_client::paths::{BrokerAddress, BrokerPaths};
use shepherd_client::wire::Client;
use shepherd_core::dirs::UserDirs;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};
use shepherd_testkit::agents::TmuxPane;

use crate::herd_support::{World, shepherd_bin, test_sheep_bin};

/// The herd's parent identity (a named herd, as an MCP host or a script would use).
pub const HERD: &str = "dash-test";
/// Where the test clock starts.
pub const T0: i64 = 1_800_000_000_000;
/// How long anything on screen may take to show.
pub const SHOWS: Duration = Duration::from_secs(30);

/// How the dashboard is started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Extra arguments after `herd --tui`.
    pub args: Vec<String>,
    /// Extra environment (`NO_COLOR`, `PAGER`, …).
    pub env: Vec<(String, String)>,
    /// Run it as `sh -c` does this, with `$DASH` standing for the dashboard's command line
    /// (to see what happens after it ends).
    pub wrap: Option<String>,
    pub width: u16,
    pub height: u16,
    /// Follow the command line's own herd of the project, on the real clock (instead of the
    /// test's named herd on the test clock).
    pub cli_herd: bool,
}

pub struct Dash {
    pub pane: TmuxPane,
    pub clock: ManualClock,
    pub runtime: tokio::runtime::Runtime,
    pub broker: Option<RunningBroker>,
    pub client: Client,
    pub world: World,
}

impl Dash {
    /// A world with the usual test sheep defined and its broker running on the test clock; the
    /// dashboard is not started yet (see [`Dash::open`]).
    pub fn new(launch: &Launch) -> Self {
        let world = World::new();
        define_sheep(&world);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let clock = ManualClock::new(T0);
        let broker = runtime.block_on(start_broker(&world, &clock, HERD));
        let socket = broker.socket().to_path_buf();
        let client = runtime.block_on(parent(&socket));
        let pane =
            TmuxPane::start_shell(&command_line(&world, launch), launch.width, launch.height)
                .unwrap();
        Self {
            pane,
            clock,
            runtime,
            broker: Some(broker),
            client,
            world,
        }
    }

    /// The dashboard's own pane on its tmux server, as `$TMUX` and `$TMUX_PANE` name it.
    pub fn caller(&self) -> Value {
        let pane = self
            .pane
            .run(&["display-message", "-p", "-t", "agent", "#{pane_id}"])
            .unwrap();
        json!({
            "tmux": format!("{},0,0", self.pane.socket().display()),
            "tmuxPane": pane.trim(),
        })
    }

    /// One request on the test's own parent connection.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let client = &mut self.client;
        self.runtime
            .block_on(async { client.call_value(method, params).await })
            .unwrap_or_else(|err| panic!("{method}: {err}"))
    }

    /// Spawns `agent` labelled `label` on `backend`; returns its agent id.
    pub fn spawn(&mut self, agent: &str, label: &str, backend: &str) -> String {
        let caller = self.caller();
        let spawned = self.call(
            "spawn",
            json!({ "agent": agent, "label": label, "backend": backend, "caller": caller }),
        );
        spawned["agentId"].as_str().unwrap().to_owned()
    }

    /// Spawns `agent` without waiting for it to start (a sheep that never reports ready).
    pub fn spawn_in_background(&self, agent: &str, label: &str) {
        let socket = self.broker.as_ref().unwrap().socket().to_path_buf();
        let params = json!({ "agent": agent, "label": label, "backend": "headless" });
        self.runtime.spawn(async move {
            let mut client = parent(&socket).await;
            let _answer = client.call_value("spawn", params).await;
        });
    }

    pub fn delegate(&mut self, agent_id: &str, task: &str) -> String {
        let delegated = self.call("delegate", json!({ "target": agent_id, "task": task }));
        delegated["taskId"].as_str().unwrap().to_owned()
    }

    /// Moves the broker's clock on.
    pub fn advance(&self, ms: i64) {
        self.clock.advance(ms);
    }

    /// Waits until the dashboard shows every one of `texts`; returns the screen.
    pub fn shows(&self, texts: &[&str]) -> String {
        shows(&self.pane, texts)
    }

    /// Waits until the dashboard no longer shows `text`; returns the screen.
    pub fn hides(&self, text: &str) -> String {
        let screen = self
            .pane
            .wait_until(&format!("{text:?} gone"), SHOWS, |screen| {
                !screen.contains(text)
            })
            .unwrap_or_else(|err| panic!("{err}"));
        trimmed(&screen)
    }

    pub fn press(&self, keys: &[&str]) {
        self.pane.press(keys).unwrap();
    }

    pub fn type_text(&self, text: &str) {
        self.pane.type_text(text).unwrap();
    }

    /// The sheep's state as the broker tells it.
    pub fn status(&mut self, agent_id: &str) -> Value {
        self.call("status", json!({ "id": agent_id }))
    }

    /// The project path as it appears on screen, for snapshot filters.
    pub fn project(&self) -> String {
        self.world.project.display().to_string()
    }
}

impl Drop for Dash {
    fn drop(&mut self) {
        self.pane.kill();
        if let Some(broker) = self.broker.take() {
            let handle = broker.handle();
            self.runtime.block_on(async {
                handle.stop_herd().await;
                broker.wait().await;
            });
        }
    }
}

/// Waits until `pane` shows every one of `texts`; returns the screen, each line trimmed.
pub fn shows(pane: &TmuxPane, texts: &[&str]) -> String {
    let screen = pane
        .wait_for_all(texts, SHOWS)
        .unwrap_or_else(|err| panic!("{err}"));
    trimmed(&screen)
}

/// `screen` without the blanks that pad each line to the terminal's width.
pub fn trimmed(screen: &str) -> String {
    screen
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}

/// Starts a broker for `identity` in `world`'s project on `clock`, with tmux next to headless.
pub async fn start_broker(world: &World, clock: &ManualClock, identity: &str) -> RunningBroker {
    let dirs = user_dirs(world);
    let address = BrokerAddress::new(identity, &world.project);
    let paths = BrokerPaths::new(&dirs, &address);
    let config = BrokerConfig {
        address,
        paths,
        dirs,
        shepherd_exe: shepherd_bin(),
        depth: 0,
        startup_limit: Duration::from_secs(120),
        adoption_grace: Duration::from_secs(10),
        orphan_grace: Duration::from_secs(60),
        // A pi sheep whose pi never says it is ready: it stays `starting`.
        pi_command: Some(vec![
            "sh".into(),
            "-c".into(),
            "exec sleep 600".into(),
            "never-ready-pi".into(),
        ]),
        hello_deadline: Duration::from_secs(10),
    };
    let tmux: Arc<dyn shepherd_term::Backend> = Arc::new(shepherd_term::tmux::TmuxBackend::new());
    start(config, Arc::new(clock.clone()), vec![tmux])
        .await
        .unwrap()
}

pub fn user_dirs(world: &World) -> UserDirs {
    let home = world.home.clone();
    let runtime = world.runtime.clone();
    UserDirs::resolve(
        |name| match name {
            "HOME" => Some(home.clone().into_os_string()),
            "XDG_RUNTIME_DIR" => Some(runtime.clone().into_os_string()),
            _ => None,
        },
        rustix::process::getuid().as_raw(),
        &std::env::temp_dir(),
    )
    .unwrap()
}

pub async fn parent(socket: &Path) -> Client {
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role: Role::Parent,
        agent_id: None,
        token: None,
        session_file: None,
        driver: None,
        client: Some("dash-test".into()),
    };
    Client::open(socket, &hello).await.unwrap().0
}

/// The sheep every dashboard test can spawn.
fn define_sheep(world: &World) {
    world.define_test_sheep(
        "worker",
        "print compiling {task}; ask shepherd which branch?; print on {reply}; done completed built {reply}",
        None,
    );
    world.define_test_sheep("idler", "print working on {task}; idle", None);
    world.define_test_sheep(
        "blocker",
        "print checking {task}; done blocked need the credentials",
        None,
    );
    world.define_test_sheep("crasher", "print starting {task}; crash 3", None);
    world.define_test_sheep(
        "finisher",
        "print shipping {task}; done completed shipped",
        None,
    );
    // Asks the herd-mate named by its task's first line, who never answers.
    world.define_test_sheep("asker", "ask {task} which port?", None);
    // Not a Shepherd-aware program at all: it shrugs off SIGTERM, so closing it takes the
    // close's grace before SIGKILL ends it.
    world.define(
        "stubborn",
        &[
            "sh".into(),
            "-c".into(),
            "trap '' TERM; echo holding on; while :; do sleep 1; done".into(),
        ],
    );
    // A pi sheep (no `command`), with its model named.
    let dir = world.home.join(".pi/agent/agents");
    std::fs::write(
        dir.join("thinker.md"),
        "---\nname: thinker\ndescription: A pi sheep.\nmodel: fake/model-1\n---\nThink.\n",
    )
    .unwrap();
}

/// The pane's command line: the dashboard with exactly the world's environment, plus the
/// pane's own tmux variables.
pub fn command_line(world: &World, launch: &Launch) -> String {
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let mut env = vec![
        ("HOME".to_owned(), world.home.display().to_string()),
        (
            "XDG_RUNTIME_DIR".to_owned(),
            world.runtime.display().to_string(),
        ),
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
    ];
    env.extend(launch.env.iter().cloned());
    let mut dash = vec![
        shepherd_bin().display().to_string(),
        "herd".into(),
        "--tui".into(),
    ];
    if !launch.cli_herd {
        dash.extend([
            "--parent-session".into(),
            HERD.into(),
            "--frozen-clock".into(),
        ]);
    }
    dash.extend(launch.args.iter().cloned());
    let dash = dash.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ");
    let mut line = format!(
        "cd {} && exec env -i TERM=\"${{TERM:-xterm-256color}}\" TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\"",
        quote(&world.project.display().to_string())
    );
    for (name, value) in &env {
        line.push(' ');
        line.push_str(&quote(&format!("{name}={value}")));
    }
    match &launch.wrap {
        Some(wrap) => {
            line.push_str(" sh -c ");
            line.push_str(&quote(&wrap.replace("$DASH", &dash)));
        }
        None => {
            line.push(' ');
            line.push_str(&dash);
        }
    }
    line
}

/// The test sheep binary must exist before any sheep is defined with it.
pub fn sheep_binary() -> PathBuf {
    test_sheep_bin()
}

/// Insta settings that hide what differs between runs: the project's temporary path (and the
/// padding it changes) and agent ids.
pub fn filters(dash: &Dash) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex_escape(&dash.project()), "[project]");
    settings.add_filter(r"shepherd-agent-[0-9a-f-]{20,}", "[agent id]");
    settings.add_filter(r" +● live", "  ● live");
    settings
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
