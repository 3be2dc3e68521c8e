//! Private OpenSSH servers on 127.0.0.1, each standing in for a remote host.
//!
//! Remote sheep reach their host over plain OpenSSH, so the tests that cover them need a real
//! `sshd`, not a fake: [`LoopbackHost::start`] runs one (`/usr/sbin/sshd`, installed by
//! `scripts/setup` from Debian's packages) in the foreground on a free port, with its own host
//! key, a key pair made for the test as the only authorised key, and its own `HOME` and project
//! directory, so two hosts on one machine do not share files. [`LoopbackHost::ssh_config`]
//! writes a client configuration that names the host by an alias, as a user's `~/.ssh/config`
//! would. Dropping the host, or [`LoopbackHost::kill`], ends its server (a link that drops);
//! [`LoopbackHost::restart`] brings it back on the same port with the same keys.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's `openssh-server` puts the server.
pub const SSHD: &str = "/usr/sbin/sshd";

/// How long a server may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(15);

/// One private `sshd` and the files that make it a host.
pub struct LoopbackHost {
    /// The alias [`LoopbackHost::ssh_config`] gives it.
    pub alias: String,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The host's own `HOME` (sessions on it start with this `HOME`).
    pub home: PathBuf,
    /// A project directory on the host.
    pub project: PathBuf,
    /// The host's private runtime directory (`XDG_RUNTIME_DIR` of its sessions): where its
    /// `shepherd` keeps sockets.
    pub runtime: PathBuf,
    /// The host's tmux directory (`TMUX_TMPDIR` of its sessions): its own tmux server.
    pub tmux: PathBuf,
    dir: tempfile::TempDir,
    server: Option<Child>,
}

/// Whether this machine can run loopback hosts (`sshd` and `ssh-keygen` are installed).
pub fn available() -> bool {
    Path::new(SSHD).is_file() && which("ssh-keygen") && which("ssh")
}

/// Whether a test can run loopback hosts: true when it can; false (the test is skipped, with one
/// line saying why) when it cannot and `SHEPHERD_REQUIRE_SSHD` is not `1`; a failure when it is
/// (CI sets it, so a missing sshd never passes silently).
pub fn required() -> bool {
    if available() {
        return true;
    }
    assert!(
        std::env::var_os("SHEPHERD_REQUIRE_SSHD").is_none_or(|v| v != "1"),
        "sshd is not installed at {SSHD} (scripts/setup installs openssh-server)"
    );
    eprintln!("skipped: no sshd at {SSHD}");
    false
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl LoopbackHost {
    /// Starts a host called `alias`, ready for connections when this returns.
    pub fn start(alias: &str) -> io::Result<Self> {
        Self::start_with_env(alias, &[])
    }

    /// Like [`LoopbackHost::start`], with `vars` in every session's environment too (over
    /// the host's own `HOME`, runtime and tmux directories when they name those): what a
    /// user's login environment on that host would hold, such as a coding agent's settings.
    pub fn start_with_env(alias: &str, vars: &[(String, String)]) -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("sshd-").tempdir()?;
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        let runtime = dir.path().join("run");
        let tmux = dir.path().join("tmux");
        for made in [&home, &project, &runtime, &tmux] {
            std::fs::create_dir_all(made)?;
        }
        keygen(&dir.path().join("host_key"))?;
        keygen(&dir.path().join("client_key"))?;
        std::fs::copy(
            dir.path().join("client_key.pub"),
            dir.path().join("authorized_keys"),
        )?;
        let port = free_port()?;
        let mut env: Vec<(String, String)> = [
            ("HOME", &home),
            ("XDG_RUNTIME_DIR", &runtime),
            ("TMUX_TMPDIR", &tmux),
        ]
        .into_iter()
        .filter(|(name, _)| !vars.iter().any(|(given, _)| given == name))
        .map(|(name, dir)| (name.to_owned(), dir.display().to_string()))
        .collect();
        env.extend(vars.iter().cloned());
        let set_env: Vec<String> = env
            .iter()
            .map(|(name, value)| format!("\"{name}={value}\""))
            .collect();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n\
             AuthorizedKeysFile {authorized}\nPidFile {pid}\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin \
             prohibit-password\nUsePAM no\nStrictModes no\nAllowStreamLocalForwarding yes\n\
             SetEnv {set_env}\nPrintMotd no\nLogLevel VERBOSE\n",
            host_key = dir.path().join("host_key").display(),
            authorized = dir.path().join("authorized_keys").display(),
            pid = dir.path().join("sshd.pid").display(),
            set_env = set_env.join(" "),
        );
        std::fs::write(dir.path().join("sshd_config"), config)?;
        let mut host = Self {
            alias: alias.to_owned(),
            port,
            home,
            project,
            runtime,
            tmux,
            dir,
            server: None,
        };
        host.restart()?;
        Ok(host)
    }

    /// Starts the server again (after [`LoopbackHost::kill`]), on the same port and keys.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        if rustix::process::geteuid().is_root() {
            // The server's privilege separation needs this directory when run as root.
            std::fs::create_dir_all("/run/sshd")?;
        }
        // Its log (every connection, including the readiness probe below) goes to a file
        // beside it: `LoopbackHost::log` reads it when a test needs to know why.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("sshd.log"))?;
        let server = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        self.server = Some(server);
        let deadline = Instant::now() + START_DEADLINE;
        let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port);
        loop {
            if TcpStream::connect(address).is_ok() {
                return Ok(());
            }
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|s| s.try_wait().ok().flatten())
            {
                return Err(io::Error::other(format!("sshd exited at start: {status}")));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("sshd did not listen within 15 s"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What the server logged so far (at `VERBOSE`: each connection and each session).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// How many command sessions the server has started so far (`ssh host command`, also
    /// over a multiplexed connection), as its log says.
    pub fn command_sessions(&self) -> usize {
        self.log()
            .lines()
            .filter(|line| line.contains("Starting session: command"))
            .count()
    }

    /// Ends the server at once, as a dropped link or a host going away would.
    pub fn kill(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _killed = server.kill();
            let _reaped = server.wait();
        }
    }

    /// A client configuration naming this host `alias` (user, port, the test's key, no host
    /// key prompts), written beside the host; pass it with `ssh -F`.
    pub fn ssh_config(&self) -> io::Result<PathBuf> {
        let path = self.dir.path().join("ssh_config");
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| effective_user_name());
        std::fs::write(
            &path,
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n",
                alias = self.alias,
                port = self.port,
                key = self.dir.path().join("client_key").display(),
            ),
        )?;
        Ok(path)
    }
}

impl Drop for LoopbackHost {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The name of the user this process runs as, for an environment that names none (a test run
/// under `env -i`): the host's server accepts only the user it runs as.
fn effective_user_name() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "root".to_owned())
}

fn keygen(path: &Path) -> io::Result<()> {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("ssh-keygen failed: {status}")))
    }
}

/// A port nobody listens on right now.
fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
