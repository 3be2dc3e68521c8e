//! A `shepherd web` server and a real headless Chromium (through its WebDriver,
//! `chromedriver`) for the browser tests, and a raw HTTP client for the requests a browser
//! would never send (a foreign Host or Origin, a path that climbs out of the project).
//!
//! Chromium and chromedriver come from Debian's `chromium` and `chromium-driver` packages,
//! which `scripts/setup` installs. Without them a test is skipped with one line saying so,
//! unless `SHEPHERD_REQUIRE_CHROMIUM=1` (CI sets it): then it fails. Each browser test that
//! runs writes its name to `$SHEPHERD_BROWSER_TALLY` when set, and CI fails when none did.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt as _;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use rustix::process::{Pid, Signal, kill_process_group};

use crate::herd_support::World;

/// How long a page may take to show what a test waits for. Generous: a loaded machine, not a
/// target (the web bench measures how fast it really is).
pub const PAGE_LIMIT: Duration = Duration::from_secs(20);

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Whether the browser tests can run: true when Chromium and its driver are installed; false
/// (skipped, saying why) when not and `SHEPHERD_REQUIRE_CHROMIUM` is not `1`; a failure when
/// it is.
pub fn required() -> bool {
    if Path::new(CHROMIUM).is_file() && Path::new(CHROMEDRIVER).is_file() {
        tally();
        return true;
    }
    assert!(
        std::env::var_os("SHEPHERD_REQUIRE_CHROMIUM").is_none_or(|v| v != "1"),
        "Chromium or chromedriver is not installed at {CHROMIUM} / {CHROMEDRIVER} (scripts/setup installs the chromium and chromium-driver packages)"
    );
    eprintln!("skipped: no Chromium at {CHROMIUM} or no chromedriver at {CHROMEDRIVER}");
    false
}

/// Writes this test's name to `$SHEPHERD_BROWSER_TALLY` when that is set: CI counts the browser
/// tests that ran and fails when none did.
fn tally() {
    let Some(file) = std::env::var_os("SHEPHERD_BROWSER_TALLY") else {
        return;
    };
    let name = std::thread::current()
        .name()
        .unwrap_or("a browser test")
        .to_owned();
    let mut tally = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .unwrap();
    writeln!(tally, "{name}").unwrap();
}

/// Waits for `ready` to hold, failing with `what` after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the async check `ready` to hold, failing with `what` after [`PAGE_LIMIT`].
pub async fn eventually(what: &str, mut ready: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + PAGE_LIMIT;
    while !ready().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A free loopback port (free when this returns).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `shepherd web`; stopped when dropped.
pub struct Web {
    child: Child,
    /// The URL it printed, with its one-time token.
    pub url: String,
    /// The URL it printed for its `--serve-name`, when given one.
    pub served_url: Option<String>,
    /// The board's name as the URL gives it: `herd-….localhost:PORT`, what a browser sends as
    /// its Host.
    pub host: String,
    /// Where it listens: `127.0.0.1:PORT`, what the raw client connects to.
    pub addr: String,
    /// The token.
    pub token: String,
    /// The cookie of the session [`Web::cookie`] traded the token for.
    session: std::sync::OnceLock<String>,
}

impl Web {
    /// Starts `shepherd web` in `world`'s project and reads the URL it prints.
    pub fn start(world: &World) -> Self {
        Self::start_with(world, &[], Stdio::inherit())
    }

    /// Like [`Web::start`], with more arguments and its stderr sent to `stderr`.
    pub fn start_with(world: &World, args: &[&str], stderr: Stdio) -> Self {
        // The herd's broker runs before the server follows it, so the world's drop stops it:
        // one the server started itself could still be starting when the test ends.
        world.json(&["broker", "ensure"]);
        let mut all = vec!["web"];
        all.extend_from_slice(args);
        let mut child = world
            .command(&all)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        lines.read_line(&mut line).unwrap();
        let url = line.trim().to_owned();
        // With `--serve-name`, a second line: the URL at that name.
        let served_url = args.contains(&"--serve-name").then(|| {
            let mut served = String::new();
            lines.read_line(&mut served).unwrap();
            served.trim().to_owned()
        });
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("not a URL: {url:?}"));
        let (host, query) = rest.split_once("/?token=").unwrap();
        let port = host.rsplit_once(':').unwrap().1;
        Self {
            child,
            host: host.to_owned(),
            addr: format!("127.0.0.1:{port}"),
            token: query.to_owned(),
            url,
            served_url,
            session: std::sync::OnceLock::new(),
        }
    }

    /// The URL of `path` on this server (no token: the browser has the cookie by then).
    pub fn at(&self, path: &str) -> String {
        format!("http://{}{path}", self.host)
    }

    /// A signed-in session's `Cookie` header value: the first call trades the URL's one-time
    /// token for it (so a browser can no longer use that URL).
    pub fn cookie(&self) -> String {
        self.session
            .get_or_init(|| {
                let signed = http(
                    &self.addr,
                    &format!("GET /?token={}", self.token),
                    &[("Host", &self.host)],
                    "",
                );
                assert_eq!(signed.status, 303, "the token signs in: {signed:?}");
                set_cookie(&signed).unwrap_or_else(|| panic!("no session cookie: {signed:?}"))
            })
            .clone()
    }

    /// A request to this server as its own page would send it: Host, the session's cookie.
    pub fn get(&self, path: &str) -> Reply {
        let cookie = self.cookie();
        http(
            &self.addr,
            &format!("GET {path}"),
            &[("Host", &self.host), ("Cookie", &cookie)],
            "",
        )
    }
}

/// The `name=value` of the cookie a reply sets, if it sets one.
pub fn set_cookie(reply: &Reply) -> Option<String> {
    reply.head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("set-cookie").then(|| {
            value
                .trim()
                .split(';')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
    })
}

impl Web {
    /// Stops the server and gives back what it wrote on stderr (when it was piped).
    pub fn stop(mut self) -> String {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _read = stderr.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// The board's event stream, read raw over HTTP/1.1: each event's name and data.
pub struct EventStream {
    lines: BufReader<TcpStream>,
}

impl EventStream {
    /// Opens it with `cookie` (a signed-in session's `Cookie` header value).
    pub fn open(web: &Web, cookie: &str) -> Self {
        let mut stream = TcpStream::connect(&web.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET /events/board HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nAccept: text/event-stream\r\n\r\n",
            web.host,
            cookie
        )
        .unwrap();
        Self {
            lines: BufReader::new(stream),
        }
    }

    /// The next event that is not a keep-alive.
    pub fn next(&mut self) -> (String, String) {
        self.try_next().expect("the stream ended")
    }

    /// The next event that is not a keep-alive, or `None` once the stream ended.
    pub fn try_next(&mut self) -> Option<(String, String)> {
        let (mut name, mut data) = (String::new(), String::new());
        loop {
            let mut line = String::new();
            if self.lines.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if let Some(value) = line.strip_prefix("event:") {
                name = value.trim().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            } else if line.is_empty() && !name.is_empty() {
                return Some((name, data));
            }
        }
    }
}

/// A response as raw HTTP/1.1 gives it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends one raw HTTP/1.1 request to `addr` (`127.0.0.1:PORT`) with these headers and body.
pub fn http(addr: &str, request_line: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut text = format!("{request_line} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        text.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    text.push_str("\r\n");
    text.push_str(body);
    stream.write_all(text.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {raw:?}"));
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A chromedriver and a headless Chromium session through it, `width` pixels wide. The driver
/// runs in a process group of its own, with the browser it starts: [`Browser::close`] ends the
/// session and the driver, and a test that fails before it gets there leaves nothing either
/// (dropping it ends the whole group).
pub struct Browser {
    driver: Child,
    pub client: Client,
}

impl Browser {
    pub async fn start(width: u32, height: u32) -> Self {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("chromedriver to listen", Duration::from_secs(20), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--hide-scrollbars",
                    "--disable-crash-reporter",
                    "--disable-breakpad",
                    format!("--window-size={width},{height}"),
                ],
                // Notifications allowed, as when the person clicked "Notify me" and said yes.
                "prefs": { "profile.default_content_setting_values.notifications": 1 },
                // A window is never narrower than 500 px; the page is laid out at `width` as
                // a phone would (the test checks the width it got).
                "mobileEmulation": {
                    "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1.0 },
                },
            }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        Self { driver, client }
    }

    /// The first element `locator` finds, waited for ([`PAGE_LIMIT`] at most); a test that
    /// does not get it fails naming `what`, with the page's source.
    pub async fn appears(&self, locator: Locator<'_>, what: &str) -> Element {
        match self
            .client
            .wait()
            .at_most(PAGE_LIMIT)
            .for_element(locator)
            .await
        {
            Ok(element) => element,
            Err(err) => panic!(
                "{what} ({err}); the page: {}",
                self.client.source().await.unwrap_or_default()
            ),
        }
    }

    /// Clicks the element `locator` finds, once it is there. A live region may replace the
    /// element between finding and clicking it (a push re-rendered it): then the new one is
    /// found and clicked, until [`PAGE_LIMIT`].
    pub async fn click(&self, locator: Locator<'_>, what: &str) {
        let deadline = Instant::now() + PAGE_LIMIT;
        loop {
            match self.appears(locator, what).await.click().await {
                Ok(()) => return,
                Err(err) if err.is_stale_element_reference() && Instant::now() < deadline => {}
                Err(err) => panic!("clicking {what}: {err}"),
            }
        }
    }

    /// The page's status line (`#said`, what the last action did), once it starts with `prefix`.
    pub async fn said(&self, prefix: &str) -> String {
        let line = format!("//*[@id='said' and starts-with(normalize-space(.), '{prefix}')]");
        let what = format!("the page says `{prefix}…`");
        let said = self.appears(Locator::XPath(&line), &what).await;
        said.text().await.unwrap()
    }

    /// Ends the browser session, then the driver.
    pub async fn close(self) {
        let _closed = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(group) = Pid::from_raw(self.driver.id() as i32) {
            let _killed = kill_process_group(group, Signal::KILL);
        }
        let _reaped = self.driver.wait();
    }
}
