//! What the notification tests and the notification bench share: a real desktop (a D-Bus
//! session bus of their own, an Xvfb display and dunst on them, printing every notification it
//! gets) and a real HTTP receiver for webhooks, each noting when a notification arrived.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long any one awaited event may take.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Whether the desktop tests can run: dbus-daemon, Xvfb and dunst installed; skipped with one
/// line when not, unless `SHEPHERD_REQUIRE_DESKTOP=1` (CI), which fails instead.
pub fn required() -> bool {
    let missing: Vec<&str> = ["dbus-daemon", "Xvfb", "dunst", "dunstctl"]
        .into_iter()
        .filter(|tool| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("SHEPHERD_REQUIRE_DESKTOP").is_none_or(|v| v != "1"),
        "missing {missing:?} (scripts/setup installs the dbus-daemon, xvfb and dunst packages)"
    );
    eprintln!("skipped: no {missing:?}");
    false
}

/// Waits for `ready`, failing with `what` after [`LIMIT`].
pub fn wait_for<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The first line `child` prints.
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().to_owned()
}

/// A session bus, a virtual display and dunst on them; all stopped when dropped.
pub struct Desktop {
    children: Vec<Child>,
    pub bus: String,
    /// What dunst printed, one block per notification it got.
    printed: Arc<Mutex<String>>,
    /// When each piece of it arrived: the printed text's length after it, and the wall clock (ms).
    arrivals: Arc<Mutex<Vec<(usize, i64)>>>,
}

/// This machine's wall clock in ms, the clock the broker stamps a moment with.
pub fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl Desktop {
    pub fn start(dir: &Path) -> Self {
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address=unix:path={}", dir.join("bus").display()))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let address = first_line(&mut bus);
        // Xvfb picks a free display and says which on the descriptor it is given.
        let mut display = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                "800x600x24",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let display_name = format!(":{}", first_line(&mut display));
        let mut dunst = Command::new("dunst")
            .arg("-print")
            .env("DISPLAY", &display_name)
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let printed = Arc::new(Mutex::new(String::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let mut out = dunst.stdout.take().unwrap();
        let (sink, times) = (printed.clone(), arrivals.clone());
        std::thread::spawn(move || {
            let mut chunk = [0_u8; 4096];
            while let Ok(n) = out.read(&mut chunk) {
                if n == 0 {
                    return;
                }
                let mut text = sink.lock().unwrap();
                text.push_str(&String::from_utf8_lossy(&chunk[..n]));
                times.lock().unwrap().push((text.len(), wall_ms()));
            }
        });
        let desktop = Self {
            children: vec![dunst, display, bus],
            bus: address,
            printed,
            arrivals,
        };
        wait_for("dunst to take the notification service", || {
            desktop.dunstctl(&["count"]).status.success().then_some(())
        });
        desktop
    }

    pub fn dunstctl(&self, args: &[&str]) -> std::process::Output {
        Command::new("dunstctl")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .output()
            .unwrap()
    }

    /// Each notification dunst got: its summary and its body.
    pub fn notifications(&self) -> Vec<(String, String)> {
        let printed = self.printed.lock().unwrap().clone();
        let field = |block: &str, name: &str| {
            block
                .split_once(&format!("\t{name}: '"))
                .and_then(|(_, rest)| rest.split_once("'\n"))
                .map(|(value, _)| value.to_owned())
                .unwrap_or_default()
        };
        printed
            .split("\n}")
            .filter(|block| block.contains("appname: 'Shepherd'"))
            .map(|block| (field(block, "summary"), field(block, "body")))
            .collect()
    }
}

impl Desktop {
    /// When the notification titled `summary` reached dunst (wall clock, ms).
    pub fn shown_at(&self, summary: &str) -> Option<i64> {
        let at = self
            .printed
            .lock()
            .unwrap()
            .find(&format!("\tsummary: '{summary}'"))?;
        self.arrivals
            .lock()
            .unwrap()
            .iter()
            .find(|(end, _)| *end > at)
            .map(|(_, ms)| *ms)
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _killed = child.kill();
            let _reaped = child.wait();
        }
    }
}

/// Points `world` at `desktop`'s bus and sets its user settings to notify the desktop and
/// `receiver`'s webhook.
pub fn notify_both(world: &mut crate::herd_support::World, desktop: &Desktop, receiver: &Receiver) {
    world
        .extra_env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), desktop.bus.clone()));
    world.settings(&format!(
        r#"{{"notifyDesktop": true, "notifyWebhook": "{}"}}"#,
        receiver.url
    ));
}

/// An HTTP receiver on loopback that keeps every JSON body posted to `/hook`.
pub struct Receiver {
    pub url: String,
    pub posts: Arc<Mutex<Vec<Value>>>,
    /// When each post arrived (wall clock, ms), in the order of `posts`.
    pub arrived: Arc<Mutex<Vec<i64>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let posts = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let (kept, times) = (posts.clone(), arrived.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |body: String| {
                let (kept, times) = (kept.clone(), times.clone());
                async move {
                    times.lock().unwrap().push(wall_ms());
                    kept.lock()
                        .unwrap()
                        .push(serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body)));
                    "ok"
                }
            }),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            posts,
            arrived,
            _runtime: runtime,
        }
    }

    pub fn titles(&self) -> Vec<String> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .map(|post| post["title"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

pub fn count(titles: &[String], title: &str) -> usize {
    titles.iter().filter(|t| *t == title).count()
}

/// Waits until both channels told `title`, and returns how often each did.
pub fn told_on_both(desktop: &Desktop, receiver: &Receiver, title: &str) -> (usize, usize) {
    wait_for(&format!("{title:?} on the desktop and the webhook"), || {
        let shown: Vec<String> = desktop.notifications().into_iter().map(|n| n.0).collect();
        let posted = receiver.titles();
        (count(&shown, title) > 0 && count(&posted, title) > 0)
            .then(|| (count(&shown, title), count(&posted, title)))
    })
}
