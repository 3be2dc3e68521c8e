//! One host's link: a multiplexed OpenSSH connection the broker keeps up.
//!
//! Each host gets one master connection (`ssh -M`, its control socket in the broker's private
//! runtime directory), so every later step — a launch, a read, a note copied — goes over it and
//! costs little more than a local call: a line to a `shepherd remote serve` session kept open
//! on it (`session`), or, with a host's `shepherd` that cannot serve, a session of its own. Once the master answers, the host's
//! `shepherd` says what it has (`hello`) and where the broker's socket goes, and the master
//! forwards the broker's remote socket there (OpenSSH stream-local forwarding), so the host's
//! supervisors and sheep speak the broker protocol unchanged.
//!
//! A keeper thread owns the master: it starts it with a parent-death signal (a crashed broker
//! leaves no connection behind), notices when it ends, and connects again with backoff until
//! the broker stops. The link's state is published on a watch channel, so a spawn waits for it
//! and the sheep's watchdog knows since when a host has been unreachable.

// The link owns its `ssh` processes: the master connection and one session per step.
#![allow(clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shepherd_core::hosts::HostDef;
use shepherd_core::protocol::PROTOCOL_VERSION;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ops::{HelloReply, HelloRequest, Op, op};
use super::session::OpSessions;

/// How long one connection attempt may take (the master answering, `hello`, the forward).
const CONNECT_DEADLINE: Duration = Duration::from_secs(20);
/// The first and the longest wait between two connection attempts.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Where a link stands.
#[derive(Debug, Clone)]
pub(crate) enum LinkState {
    /// Not connected (yet, or any more).
    Down {
        /// Since when the host has been unreachable (`None`: never connected yet).
        since: Option<Instant>,
        /// Why the last attempt failed.
        error: Option<String>,
        /// Attempts made since the link was last up.
        attempts: u32,
    },
    /// Connected, with what the host said.
    Up(Arc<HelloReply>),
}

/// One host's link.
pub(crate) struct HostLink {
    /// The host's name.
    pub(crate) name: String,
    /// Its definition, as it was when the link was made.
    pub(crate) def: HostDef,
    control: PathBuf,
    master_log: PathBuf,
    /// The broker's socket for remote sheep, on this machine.
    listener: PathBuf,
    /// Names the forwarded socket on the host.
    link_name: String,
    state: watch::Sender<LinkState>,
    kept: Mutex<bool>,
    shutdown: CancellationToken,
    /// Open `remote serve` sessions over the master, for the next steps.
    sessions: OpSessions,
}

impl HostLink {
    pub(crate) fn new(
        name: &str,
        def: HostDef,
        ssh_dir: &std::path::Path,
        listener: PathBuf,
        link_name: String,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        // Each link has files of its own: one that replaced another never shares its control
        // socket with the one going away.
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let number = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(Self {
            name: name.to_owned(),
            def,
            control: ssh_dir.join(format!("{name}.{number}.ctl")),
            master_log: ssh_dir.join(format!("{name}.{number}.log")),
            listener,
            link_name,
            state: watch::Sender::new(LinkState::Down {
                since: None,
                error: None,
                attempts: 0,
            }),
            kept: Mutex::new(false),
            shutdown,
            sessions: OpSessions::default(),
        })
    }

    /// The link's state now.
    pub(crate) fn state(&self) -> LinkState {
        self.state.borrow().clone()
    }

    /// Ends this link for good (its definition changed): its keeper stops and its connection
    /// closes.
    pub(crate) fn retire(&self) {
        self.shutdown.cancel();
    }

    /// Who this broker is on the host: the owner of the panes it makes there.
    pub(crate) fn owner(&self) -> String {
        format!("shepherd-link-{}", self.link_name)
    }

    /// Follows the link's state.
    pub(crate) fn subscribe(&self) -> watch::Receiver<LinkState> {
        self.state.subscribe()
    }

    /// What the host said, while the link is up.
    pub(crate) fn hello(&self) -> Option<Arc<HelloReply>> {
        match &*self.state.borrow() {
            LinkState::Up(hello) => Some(hello.clone()),
            LinkState::Down { .. } => None,
        }
    }

    /// Starts the keeper thread once; it keeps the link up until the broker stops.
    pub(crate) fn keep(self: &Arc<Self>) {
        let mut kept = self.kept.lock().expect("link lock");
        if *kept {
            return;
        }
        *kept = true;
        let link = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("link-{}", self.name))
            .spawn(move || link.keeper());
        if let Err(err) = spawned {
            *kept = false;
            self.state.send_replace(LinkState::Down {
                since: None,
                error: Some(format!("cannot start the link's thread: {err}")),
                attempts: 0,
            });
        }
    }

    /// Waits until the link is up (starting it if needed), or says why not by `deadline`.
    pub(crate) async fn up(
        self: &Arc<Self>,
        deadline: Duration,
    ) -> Result<Arc<HelloReply>, String> {
        self.keep();
        let mut state = self.subscribe();
        let until = tokio::time::Instant::now() + deadline;
        // Only an attempt made from now on speaks for the host as it is now.
        let before = match &*state.borrow() {
            LinkState::Down { attempts, .. } => *attempts,
            LinkState::Up(_) => 0,
        };
        loop {
            let failed = match &*state.borrow_and_update() {
                LinkState::Up(hello) => return Ok(hello.clone()),
                // A link that never came up and whose next attempt failed outright (the host
                // refused, `shepherd` is missing there) is reported at once, not after the
                // whole deadline.
                LinkState::Down {
                    since: None,
                    error: Some(error),
                    attempts,
                } if *attempts > before => Some(error.clone()),
                LinkState::Down { .. } => None,
            };
            if let Some(error) = failed {
                return Err(error);
            }
            tokio::select! {
                changed = state.changed() => if changed.is_err() {
                    return Err("the broker is stopping".to_owned());
                },
                () = tokio::time::sleep_until(until) => {
                    return Err(match self.state() {
                        LinkState::Down { error: Some(error), .. } => error,
                        _ => format!("no SSH connection within {} s", deadline.as_secs()),
                    });
                }
            }
        }
    }

    /// The keeper: connect, wait for the master to end, connect again with backoff.
    fn keeper(self: Arc<Self>) {
        let mut backoff = BACKOFF_FIRST;
        let mut attempts = 0;
        let mut since: Option<Instant> = None;
        while !self.shutdown.is_cancelled() {
            attempts += 1;
            match self.connect() {
                Ok((mut master, hello)) => {
                    tracing::info!("link to host {} is up", self.name);
                    self.state.send_replace(LinkState::Up(Arc::new(hello)));
                    backoff = BACKOFF_FIRST;
                    attempts = 0;
                    let ended = self.wait_master(&mut master);
                    // The sessions went with the master.
                    self.sessions.clear();
                    let at = Instant::now();
                    since = Some(at);
                    tracing::warn!("link to host {} dropped: {ended}", self.name);
                    self.state.send_replace(LinkState::Down {
                        since,
                        error: Some(ended),
                        attempts,
                    });
                }
                Err(error) => {
                    tracing::debug!("link to host {}: {error}", self.name);
                    self.state.send_replace(LinkState::Down {
                        since,
                        error: Some(error),
                        attempts,
                    });
                    self.pause(backoff);
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
        self.sessions.clear();
        let _gone = fs_err::remove_file(&self.control);
        let _log = fs_err::remove_file(&self.master_log);
    }

    /// Sleeps `wait`, or less when the broker stops.
    fn pause(&self, wait: Duration) {
        let until = Instant::now() + wait;
        while !self.shutdown.is_cancelled() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50).min(wait));
        }
    }

    /// Waits for the master to end (or kills it when the broker stops); says how it ended.
    fn wait_master(&self, master: &mut Child) -> String {
        loop {
            if self.shutdown.is_cancelled() {
                let _killed = master.kill();
                let _reaped = master.wait();
                return "the broker stopped".to_owned();
            }
            match master.try_wait() {
                Ok(Some(status)) => {
                    let log = self.master_log_tail();
                    return format!("the SSH connection ended ({status}){log}");
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(err) => return format!("the SSH connection cannot be watched: {err}"),
            }
        }
    }

    /// One connection: the master, `hello`, the forward.
    fn connect(&self) -> Result<(Child, HelloReply), String> {
        let _stale = fs_err::remove_file(&self.control);
        let _old_log = fs_err::remove_file(&self.master_log);
        let mut command = Command::new("ssh");
        command
            .args(&self.def.ssh_args)
            .args(["-M", "-N", "-S"])
            .arg(&self.control)
            .args([
                "-o",
                "ControlPersist=no",
                "-o",
                "BatchMode=yes",
                "-o",
                "ServerAliveInterval=2",
                "-o",
                "ServerAliveCountMax=3",
                "-o",
                "ConnectTimeout=15",
                "-E",
            ])
            .arg(&self.master_log)
            .arg(&self.def.destination)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // The keeper thread that spawns the master lives as long as the link, so the master
        // dies only when the broker itself is gone.
        shepherd_term::platform::tie_to_this_process(
            &mut command,
            shepherd_term::platform::NothingMore,
        );
        let mut master = command
            .spawn()
            .map_err(|err| format!("cannot run ssh: {err}"))?;
        let deadline = Instant::now() + CONNECT_DEADLINE;
        let fail = |master: &mut Child, why: String| {
            let _killed = master.kill();
            let _reaped = master.wait();
            why
        };
        loop {
            if let Ok(Some(status)) = master.try_wait() {
                return Err(format!(
                    "ssh to {} failed ({status}){}",
                    self.def.destination,
                    self.master_log_tail()
                ));
            }
            if self.control_answers() {
                break;
            }
            if Instant::now() > deadline || self.shutdown.is_cancelled() {
                return Err(fail(
                    &mut master,
                    format!(
                        "ssh to {} did not connect within {} s{}",
                        self.def.destination,
                        CONNECT_DEADLINE.as_secs(),
                        self.master_log_tail()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let request = HelloRequest {
            link_name: self.link_name.clone(),
            project_path: self.def.project_path.clone(),
            programs: Vec::new(),
        };
        let hello: HelloReply = match self.call::<op::Hello>(&request, deadline) {
            Ok(hello) => hello,
            Err(err) => return Err(fail(&mut master, err)),
        };
        if hello.protocol != PROTOCOL_VERSION {
            return Err(fail(
                &mut master,
                format!(
                    "the host's shepherd {} speaks protocol {}, this one {PROTOCOL_VERSION}; \
                     install the same shepherd version there",
                    hello.version, hello.protocol
                ),
            ));
        }
        let forward = format!(
            "{}:{}",
            hello.link_socket.display(),
            self.listener.display()
        );
        let mut command = self.control_command("forward");
        command.args(["-R", &forward]).arg(&self.def.destination);
        match shepherd_term::process::run_with_deadline(&mut command, deadline) {
            Ok(out) if out.success => Ok((master, hello)),
            Ok(out) => Err(fail(
                &mut master,
                format!(
                    "the host refused to forward the broker's socket to {}: {}",
                    hello.link_socket.display(),
                    out.stderr.trim()
                ),
            )),
            Err(err) => Err(fail(&mut master, format!("ssh -O forward: {err}"))),
        }
    }

    /// `ssh -O <op>` against the master.
    fn control_command(&self, op: &str) -> Command {
        let mut command = Command::new("ssh");
        command
            .args(&self.def.ssh_args)
            .arg("-S")
            .arg(&self.control)
            .args(["-O", op]);
        command
    }

    fn control_answers(&self) -> bool {
        if !self.control.exists() {
            return false;
        }
        let mut command = self.control_command("check");
        command.arg(&self.def.destination);
        shepherd_term::process::run_with_deadline(
            &mut command,
            Instant::now() + Duration::from_secs(5),
        )
        .is_ok_and(|out| out.success)
    }

    fn master_log_tail(&self) -> String {
        let text =
            shepherd_term::process::tail_of_file(&self.master_log, 3, 4096).unwrap_or_default();
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(": {}", text.replace('\n', "; "))
        }
    }

    /// Runs one op on the host over the master and parses its answer: over a `serve` session
    /// when the host's `shepherd` said it serves, else in a session of its own.
    pub(crate) fn call<O: Op>(
        &self,
        request: &O::Request,
        deadline: Instant,
    ) -> Result<O::Reply, String> {
        let op = O::OP.name();
        let started = Instant::now();
        if !self.hello().is_some_and(|hello| hello.serves) {
            let answer = self.call_alone(op, request, deadline);
            tracing::debug!(host = self.name, op, took = ?started.elapsed(), "remote step alone");
            return answer;
        }
        let request = serde_json::to_value(request).expect("remote requests serialise");
        let open = || self.host_command(super::ops::SERVE);
        let answer = self.sessions.call(&self.name, open, op, request, deadline);
        tracing::debug!(host = self.name, op, took = ?started.elapsed(), "remote step");
        serde_json::from_value(answer?).map_err(|err| {
            format!(
                "host {}'s shepherd answered `{op}` with something else: {err}",
                self.name
            )
        })
    }

    /// `ssh … <shepherd> remote <op>` over the master.
    fn host_command(&self, op: &str) -> Command {
        let mut command = Command::new("ssh");
        command
            .args(&self.def.ssh_args)
            .arg("-S")
            .arg(&self.control)
            .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes"])
            .arg(&self.def.destination)
            .arg(format!("{} remote {op}", sh_quote(&self.def.shepherd)));
        command
    }

    /// One op in a session of its own.
    fn call_alone<Req: serde::Serialize, Reply: serde::de::DeserializeOwned>(
        &self,
        op: &str,
        request: &Req,
        deadline: Instant,
    ) -> Result<Reply, String> {
        let input = serde_json::to_vec(request).expect("remote requests serialise");
        let mut command = self.host_command(op);
        let out = shepherd_term::process::run_with_input(&mut command, Some(input), deadline)
            .map_err(|err| format!("`{op}` on host {}: {err}", self.name))?;
        if !out.success {
            let why = out.stderr.trim();
            let why = if out.code == Some(127) {
                format!(
                    "`{}` is not installed on host {} (or not on its PATH; set `shepherd` in \
                     the host's definition): {why}",
                    self.def.shepherd, self.name
                )
            } else {
                format!("`{op}` on host {} failed: {why}", self.name)
            };
            return Err(why);
        }
        serde_json::from_str(&out.stdout).map_err(|err| {
            format!(
                "host {}'s shepherd answered `{op}` with something else ({err}): {}",
                self.name,
                out.stdout.trim()
            )
        })
    }
}

impl HostLink {
    /// The `ssh` command line that reaches the host over this link's master (for git).
    pub(crate) fn ssh_command_line(&self) -> Vec<String> {
        let mut line = vec!["ssh".to_owned()];
        line.extend(self.def.ssh_args.iter().cloned());
        line.extend([
            "-S".to_owned(),
            self.control.display().to_string(),
            "-o".to_owned(),
            "ControlMaster=no".to_owned(),
            "-o".to_owned(),
            "BatchMode=yes".to_owned(),
        ]);
        line
    }
}

/// `text` as one word for a POSIX shell.
pub(crate) fn sh_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@".contains(&b))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// One `hello` over a connection of its own (no master, no forward): what `hosts check`
/// reports. `programs` are looked up on the host's PATH.
pub fn probe(def: &HostDef, programs: Vec<String>) -> Result<HelloReply, String> {
    let request = HelloRequest {
        // The probe's own link name: it forwards nothing.
        link_name: "0".repeat(16),
        project_path: def.project_path.clone(),
        programs,
    };
    let input = serde_json::to_vec(&request).expect("remote requests serialise");
    let mut command = Command::new("ssh");
    command
        .args(&def.ssh_args)
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=15"])
        .arg(&def.destination)
        .arg(format!("{} remote hello", sh_quote(&def.shepherd)));
    let out = shepherd_term::process::run_with_input(
        &mut command,
        Some(input),
        Instant::now() + CONNECT_DEADLINE,
    )
    .map_err(|err| format!("ssh {}: {err}", def.destination))?;
    match out.code {
        Some(0) => serde_json::from_str(&out.stdout)
            .map_err(|err| format!("the host's shepherd answered something else: {err}")),
        Some(255) => Err(format!(
            "ssh {} failed: {}",
            def.destination,
            out.stderr.trim()
        )),
        Some(127) => Err(format!(
            "reachable, but `{}` is not installed there (or not on its PATH): {}",
            def.shepherd,
            out.stderr.trim()
        )),
        _ => Err(format!(
            "reachable, but `{} remote hello` failed: {}",
            def.shepherd,
            out.stderr.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::sh_quote;

    #[test]
    fn words_quote_for_the_remote_shell() {
        assert_eq!(sh_quote("/usr/bin/shepherd"), "/usr/bin/shepherd");
        assert_eq!(sh_quote("my dir/it's"), r"'my dir/it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
