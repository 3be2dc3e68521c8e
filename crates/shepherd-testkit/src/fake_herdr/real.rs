//! A private real Herdr server for one test.
//!
//! The binary is `HERDR_BIN`, else `herdr` on `PATH`. Without one a test skips with a line
//! saying so — unless `SHEPHERD_REQUIRE_HERDR=1` (CI sets it when the binary is there), which
//! makes a missing binary a failure. Each server gets its own directories (config, runtime,
//! home) and socket under a temporary directory, a config with onboarding and network checks
//! off, and runs headless in a session of its own; dropping it stops it, and then ends every
//! process still pointed at its socket, so a test leaves nothing behind. Every test that got a
//! server appends its name to `SHEPHERD_HERDR_TALLY` when that is set, so CI can say how many
//! real-Herdr tests ran.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};

/// How long a server gets to come up or go away.
const SERVER_WAIT: Duration = Duration::from_secs(20);

/// How a private server is set up.
#[derive(Debug, Clone)]
pub struct RealOptions {
    /// The shell Herdr starts in shell panes (`SHELL`).
    pub shell: String,
    /// The private home's `.bashrc`, if any.
    pub bashrc: Option<String>,
    /// Leave `HERDR_SOCKET_PATH` unset, so the socket is Herdr's default one under the private
    /// `XDG_CONFIG_HOME` (and a client with no Herdr variables at all finds it there).
    pub default_socket: bool,
    /// Variables the server (and so every pane) has on top of the test's, as a user's Herdr
    /// has their own (an agent's provider settings). The server's own home and directories
    /// win over these.
    pub env: Vec<(String, std::ffi::OsString)>,
}

impl Default for RealOptions {
    fn default() -> Self {
        Self {
            shell: "/bin/sh".into(),
            bashrc: None,
            default_socket: false,
            env: Vec::new(),
        }
    }
}

/// A real Herdr server, private to one test.
pub struct RealHerdr {
    dir: tempfile::TempDir,
    bin: PathBuf,
    options: RealOptions,
    child: Option<Child>,
    /// Where the running server listens while it is being prepared elsewhere.
    staging: Option<PathBuf>,
}

impl RealHerdr {
    /// The Herdr binary: `HERDR_BIN`, else `herdr` on `PATH`.
    pub fn binary() -> Option<PathBuf> {
        if let Some(bin) = std::env::var_os("HERDR_BIN").filter(|bin| !bin.is_empty()) {
            return Some(PathBuf::from(bin)).filter(|bin| bin.is_file());
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("herdr"))
            .find(|candidate| candidate.is_file())
    }

    /// A server for `test` with the default options; see [`Self::start_with`].
    pub fn start(test: &str) -> Option<Self> {
        Self::start_with(test, RealOptions::default())
    }

    /// A server for `test`, or `None` (after saying so) when no Herdr binary exists. Panics
    /// when the binary is missing but `SHEPHERD_REQUIRE_HERDR=1`, or the server fails.
    pub fn start_with(test: &str, options: RealOptions) -> Option<Self> {
        let Some(bin) = Self::binary() else {
            assert!(
                std::env::var("SHEPHERD_REQUIRE_HERDR").as_deref() != Ok("1"),
                "SHEPHERD_REQUIRE_HERDR=1 but no Herdr binary: set HERDR_BIN or put herdr on PATH"
            );
            println!("skipped {test}: no Herdr (set HERDR_BIN or put herdr on PATH)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("rh")
            .tempdir()
            .expect("a temporary directory");
        let mut herdr = Self {
            dir,
            bin,
            options,
            child: None,
            staging: None,
        };
        herdr.prepare();
        herdr.launch();
        if let Some(tally) = std::env::var_os("SHEPHERD_HERDR_TALLY") {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(tally)
                .expect("the tally file opens");
            file.write_all(format!("{test}\n").as_bytes())
                .expect("the tally is written");
        }
        println!("real Herdr: {test}");
        Some(herdr)
    }

    /// The private base directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The private `XDG_CONFIG_HOME`.
    pub fn config_home(&self) -> PathBuf {
        self.dir().join("config")
    }

    /// The private `HOME` of the server (and its shells).
    pub fn home(&self) -> PathBuf {
        self.dir().join("home")
    }

    /// The API socket.
    pub fn socket(&self) -> PathBuf {
        if let Some(staging) = &self.staging {
            return staging.clone();
        }
        if self.options.default_socket {
            self.config_home().join("herdr").join("herdr.sock")
        } else {
            self.dir().join("herdr.sock")
        }
    }

    /// The Herdr binary in use.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn prepare(&self) {
        let herdr_config = self.config_home().join("herdr");
        for dir in [
            herdr_config.clone(),
            self.dir().join("runtime"),
            self.home(),
        ] {
            std::fs::create_dir_all(dir).expect("private directories");
        }
        std::fs::write(
            herdr_config.join("config.toml"),
            "onboarding = false\n[update]\nversion_check = false\nmanifest_check = false\n",
        )
        .expect("the config is written");
        if let Some(rc) = &self.options.bashrc {
            std::fs::write(self.home().join(".bashrc"), rc).expect("the rc file is written");
        }
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir().join("server.log")).expect("the server log");
        let mut command = Command::new("setsid");
        command
            .arg(&self.bin)
            .arg("server")
            .current_dir(self.dir())
            .envs(self.options.env.iter().map(|(k, v)| (k, v)))
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("XDG_RUNTIME_DIR", self.dir().join("runtime"))
            .env("HOME", self.home())
            .env("SHELL", &self.options.shell)
            .env_remove("HERDR_SOCKET_PATH")
            .env_remove("HERDR_SESSION")
            .env_remove("HERDR_ENV")
            .env_remove("HERDR_PANE_ID")
            .env_remove("HERDR_TAB_ID")
            .env_remove("HERDR_WORKSPACE_ID")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if !self.options.default_socket {
            command.env("HERDR_SOCKET_PATH", self.socket());
        }
        let child = command.spawn().expect("herdr server starts");
        self.child = Some(child);
        let until = Instant::now() + SERVER_WAIT;
        loop {
            if self.request("ping", &json!({})).is_ok() {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("herdr server exited with {status} while starting");
            }
            assert!(
                Instant::now() < until,
                "herdr server did not answer within {SERVER_WAIT:?}"
            );
            // The socket appears a moment before the server listens.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One request to the server; the `result`, or the `error` object as `Err`.
    pub fn request(&self, method: &str, params: &Value) -> Result<Value, Value> {
        let mut stream = UnixStream::connect(self.socket())
            .map_err(|err| json!({"code": "unreachable", "message": err.to_string()}))?;
        let _bounded = stream.set_read_timeout(Some(SERVER_WAIT));
        let line = json!({"id": "test", "method": method, "params": params});
        stream
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|err| json!({"code": "io", "message": err.to_string()}))?;
        let mut reply = String::new();
        BufReader::new(stream)
            .read_line(&mut reply)
            .map_err(|err| json!({"code": "io", "message": err.to_string()}))?;
        let reply: Value = serde_json::from_str(&reply)
            .map_err(|err| json!({"code": "unreadable", "message": err.to_string()}))?;
        match reply.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(reply["result"].clone()),
        }
    }

    /// [`Self::request`], panicking on an error.
    pub fn call(&self, method: &str, params: &Value) -> Value {
        self.request(method, params)
            .unwrap_or_else(|err| panic!("herdr {method} {params}: {err}"))
    }

    /// `kill -9` of the server: it is gone, its socket file stays.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _killed = child.kill();
            let _reaped = child.wait();
        }
    }

    /// Kills the server and starts a new one on the same socket with a fresh session (no
    /// saved layout): pane ids start again at `w1:p1`.
    pub fn restart_fresh(&mut self) {
        self.restart_fresh_then(|_| {});
    }

    /// [`Self::restart_fresh`], letting `prepare` use the new server on a socket of its own
    /// before it takes over the old socket: clients of the old socket meet the new server
    /// only once `prepare` is done (a user who made panes while Shepherd was not looking).
    pub fn restart_fresh_then(&mut self, prepare: impl FnOnce(&Self)) {
        assert!(
            !self.options.default_socket,
            "a staged restart needs its own socket path"
        );
        self.kill9();
        let _fresh = std::fs::remove_file(self.config_home().join("herdr").join("session.json"));
        let target = self.socket();
        let staging = self.dir().join("staging.sock");
        self.staging = Some(staging.clone());
        self.launch();
        prepare(self);
        std::fs::rename(&staging, &target).expect("the new server takes over the socket");
        self.staging = None;
    }

    /// Stops the server the supported way, then makes sure nothing of it is left.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _asked = self.request("server.stop", &json!({}));
            let until = Instant::now() + SERVER_WAIT;
            while child.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _killed = child.kill();
            let _reaped = child.wait();
        }
        self.sweep();
    }

    /// Ends every process whose environment names this server's socket (pane programs and
    /// anything they started), so no test leaves one behind.
    fn sweep(&self) {
        for socket in [self.socket(), self.dir().join("staging.sock")] {
            self.sweep_socket(&socket);
        }
    }

    fn sweep_socket(&self, socket: &Path) {
        let needle = format!("HERDR_SOCKET_PATH={}", socket.display());
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for pid in entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me)
        {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let mentions = environ
                .split(|byte| *byte == 0)
                .any(|var| var == needle.as_bytes());
            if mentions && let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
                let _gone = kill_process(pid, Signal::KILL);
            }
        }
    }
}

impl Drop for RealHerdr {
    fn drop(&mut self) {
        self.stop();
    }
}
