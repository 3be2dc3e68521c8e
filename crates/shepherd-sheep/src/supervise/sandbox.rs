//! The sheep's sandbox: bubblewrap around the program the supervisor starts.
//!
//! The supervisor itself stays outside, so it keeps its broker connection, its credential and
//! its view of the machine; only the sheep's program (and whatever it starts) runs inside. The
//! broker says what the sheep may see beyond its working directory (`--sandbox-read`,
//! `--sandbox-write`) and which hosts it may reach; the supervisor adds what it knows on the
//! machine the sheep runs on (its working directory, `$HOME`, the broker socket, the `shepherd`
//! binary), so the same arguments work on a remote host. Inside: the system read-only, a
//! private `/tmp`, an empty `$HOME` and runtime directory, the working directory writable, and
//! the broker reachable only through the socket the sheep's own credential opens.
//!
//! With `network: model` or `none` the sheep gets a network namespace of its own, which has
//! nothing but loopback; for `model` a bridge inside ([`super::net_bridge`]) carries the
//! connections to the allowed hosts to the supervisor's allow-listing proxy outside
//! ([`super::net_proxy`]) over a unix socket bound into the sandbox, the way Anthropic's
//! sandbox runtime and Flatpak's proxies pass a network through a mount.

use std::path::{Path, PathBuf};

use clap::Args;
use shepherd_core::sandbox::{Network, Sandbox};

/// Where the proxy's socket directory appears inside the sandbox.
pub(super) const NET_DIR_INSIDE: &str = "/tmp/.shepherd-net";
/// The proxy's socket in that directory.
pub(super) const NET_SOCKET: &str = "proxy.sock";

/// What the broker asks of the sandbox.
#[derive(Debug, Clone, Default, Args)]
pub struct SandboxArgs {
    /// Confine the sheep with bubblewrap.
    #[arg(long, value_enum, default_value_t = Sandbox::Off)]
    pub sandbox: Sandbox,
    /// What the confined sheep may reach over the network.
    #[arg(long, value_enum, default_value_t = Network::All)]
    pub sandbox_network: Network,
    /// A directory or file the confined sheep may read (repeatable).
    #[arg(long, value_name = "PATH")]
    pub sandbox_read: Vec<PathBuf>,
    /// A directory or file the confined sheep may change (repeatable).
    #[arg(long, value_name = "PATH")]
    pub sandbox_write: Vec<PathBuf>,
    /// A directory hidden from the confined sheep unless bound again (repeatable; `strict`
    /// hides the project this way).
    #[arg(long, value_name = "PATH")]
    pub sandbox_hide: Vec<PathBuf>,
    /// `HOST:PORT` the confined sheep may reach with `network: model` (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub sandbox_allow: Vec<String>,
    /// A program the confined sheep runs that its command line does not name (another
    /// agent's binary, which its driver starts): its installation is made readable
    /// (repeatable).
    #[arg(long, value_name = "PATH")]
    pub sandbox_program: Vec<PathBuf>,
}

/// What the supervisor knows on the machine the sheep runs on.
pub(super) struct Surroundings<'a> {
    /// The sheep's working directory (writable).
    pub(super) cwd: &'a Path,
    /// `$HOME`, hidden.
    pub(super) home: Option<&'a Path>,
    /// `$XDG_RUNTIME_DIR`, hidden (other herds' sockets live there).
    pub(super) runtime_dir: Option<&'a Path>,
    /// The broker socket the sheep reports to.
    pub(super) socket: &'a Path,
    /// The `shepherd` binary's directory, readable (the sheep runs `shepherd done`).
    pub(super) exe_dir: Option<&'a Path>,
    /// The directory holding the network proxy's socket, for `network: model`.
    pub(super) net_dir: Option<&'a Path>,
    /// The `shepherd` binary, which runs the bridge for `network: model`.
    pub(super) exe: &'a Path,
    /// `PATH`, where the program's bare name is found.
    pub(super) path: Option<std::ffi::OsString>,
    /// Whether the sheep runs headless (else in a pane, keeping its terminal).
    pub(super) headless: bool,
}

/// One mount the sandbox makes over the read-only system.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    ReadOnly(PathBuf),
    Writable(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Self::ReadOnly(path) | Self::Writable(path) => path,
        }
    }
}

/// The bubblewrap command line that runs `program` confined as `args` asks.
pub(super) fn bwrap_command(
    args: &SandboxArgs,
    around: &Surroundings<'_>,
    program: &[String],
) -> Vec<String> {
    let mut argv: Vec<String> = [
        "bwrap",
        "--die-with-parent",
        // A user namespace of its own, every capability dropped and no further user namespaces:
        // even run by root, nothing inside can unmount what hides `$HOME` or remount `/`.
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-cgroup-try",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
    ]
    .map(str::to_owned)
    .to_vec();
    if around.headless {
        // No controlling terminal at all: nothing inside can push input into one.
        argv.push("--new-session".to_owned());
    }
    if args.sandbox_network != Network::All {
        argv.push("--unshare-net".to_owned());
    }
    let hidden: Vec<&Path> = around
        .home
        .into_iter()
        .chain(around.runtime_dir)
        .chain(args.sandbox_hide.iter().map(PathBuf::as_path))
        .filter(|path| path.is_absolute() && *path != Path::new("/"))
        .collect();
    for path in &hidden {
        argv.extend(["--tmpfs".to_owned(), shown(path)]);
    }
    let mut mounts: Vec<Mount> = Vec::new();
    mounts.extend(around.exe_dir.map(|dir| Mount::ReadOnly(dir.to_owned())));
    // The sandbox's /tmp is a fresh one: a program kept under the real one is hidden too.
    let masked: Vec<&Path> = hidden.iter().copied().chain([Path::new("/tmp")]).collect();
    let installs = super::programs::Installs {
        hidden: &masked,
        home: around.home,
        path: around.path.clone(),
    };
    mounts.extend(
        installs
            .dirs(program, &args.sandbox_program)
            .into_iter()
            .map(Mount::ReadOnly),
    );
    mounts.extend(args.sandbox_read.iter().cloned().map(Mount::ReadOnly));
    mounts.extend(args.sandbox_write.iter().cloned().map(Mount::Writable));
    // Nothing git-related is read from the working directory (a `.git` file there is the
    // sheep's to write): the broker, which made any worktree, names what of git to bind.
    mounts.push(Mount::Writable(around.cwd.to_owned()));
    mounts.push(Mount::Writable(around.socket.to_owned()));
    // A parent is mounted before what lies inside it, so the inner mount is the one that counts.
    mounts.sort_by_key(|mount| mount.path().components().count());
    mounts.dedup();
    for mount in &mounts {
        let (flag, path) = match mount {
            Mount::ReadOnly(path) => ("--ro-bind-try", path),
            Mount::Writable(path) => ("--bind-try", path),
        };
        argv.extend([flag.to_owned(), shown(path), shown(path)]);
    }
    if let Some(dir) = around
        .net_dir
        .filter(|_| args.sandbox_network == Network::Model)
    {
        argv.extend(["--bind".to_owned(), shown(dir), NET_DIR_INSIDE.to_owned()]);
    }
    // The sandbox's /tmp is its own: a TMPDIR from outside would name a directory not there.
    argv.extend(["--setenv", "TMPDIR", "/tmp"].map(str::to_owned));
    // The sheep's own tools say so when what they run is missing inside.
    argv.extend([
        "--setenv".to_owned(),
        "SHEPHERD_SANDBOX".to_owned(),
        args.sandbox.as_str().to_owned(),
    ]);
    argv.extend(["--chdir".to_owned(), shown(around.cwd), "--".to_owned()]);
    // The first program inside guards the terminal and scopes the sandbox, then runs the sheep
    // (through the bridge to the proxy, with `network: model`).
    argv.extend([shown(around.exe), "sandbox-enter".to_owned()]);
    if args.sandbox_network == Network::Model {
        argv.extend([
            "--bridge".to_owned(),
            format!("{NET_DIR_INSIDE}/{NET_SOCKET}"),
        ]);
        for allowed in &args.sandbox_allow {
            argv.extend(["--allow".to_owned(), allowed.clone()]);
        }
    }
    argv.push("--".to_owned());
    argv.extend(program.iter().cloned());
    argv
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around<'a>(cwd: &'a Path, home: &'a Path) -> Surroundings<'a> {
        Surroundings {
            cwd,
            home: Some(home),
            runtime_dir: None,
            socket: Path::new("/run/user/1/shepherd/b.sock"),
            exe_dir: Some(Path::new("/opt/shepherd/bin")),
            net_dir: Some(Path::new("/run/user/1/shepherd/net-x")),
            exe: Path::new("/opt/shepherd/bin/shepherd"),
            path: None,
            headless: true,
        }
    }

    fn position(argv: &[String], wanted: &[&str]) -> usize {
        argv.windows(wanted.len())
            .position(|window| window.iter().zip(wanted).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{wanted:?} not in {argv:?}"))
    }

    #[test]
    fn home_is_hidden_before_what_is_bound_inside_it_and_the_program_comes_last() {
        let args = SandboxArgs {
            sandbox: Sandbox::Workspace,
            sandbox_write: vec![PathBuf::from("/home/u/.pi/agent")],
            sandbox_read: vec![PathBuf::from("/home/u/project")],
            ..SandboxArgs::default()
        };
        let cwd = PathBuf::from("/home/u/project/sub");
        let argv = bwrap_command(
            &args,
            &around(&cwd, Path::new("/home/u")),
            &["sh".into(), "-c".into(), "true".into()],
        );
        let home = position(&argv, &["--tmpfs", "/home/u"]);
        let project = position(
            &argv,
            &["--ro-bind-try", "/home/u/project", "/home/u/project"],
        );
        let sub = position(
            &argv,
            &["--bind-try", "/home/u/project/sub", "/home/u/project/sub"],
        );
        assert!(home < project && project < sub, "{argv:?}");
        assert!(!argv.contains(&"--unshare-net".to_owned()), "{argv:?}");
        assert_eq!(
            &argv[argv.len() - 7..],
            [
                "--",
                "/opt/shepherd/bin/shepherd",
                "sandbox-enter",
                "--",
                "sh",
                "-c",
                "true"
            ]
        );
        position(
            &argv,
            &["--unshare-user", "--disable-userns", "--cap-drop", "ALL"],
        );
        position(&argv, &["--new-session"]);
    }

    #[test]
    fn a_git_file_in_the_working_directory_binds_nothing_and_a_read_only_git_wins() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("sub");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join(".git"), "gitdir: /worktrees/x\n").unwrap();
        let args = SandboxArgs {
            sandbox: Sandbox::Workspace,
            sandbox_read: vec![cwd.join(".git")],
            ..SandboxArgs::default()
        };
        let argv = bwrap_command(&args, &around(&cwd, Path::new("/h")), &["sh".into()]);
        assert!(
            !argv.windows(2).any(|w| w[0] == "--bind-try" && w[1] == "/"),
            "{argv:?}"
        );
        let shown_cwd = cwd.display().to_string();
        let shown_git = cwd.join(".git").display().to_string();
        let writable = position(&argv, &["--bind-try", &shown_cwd, &shown_cwd]);
        let read_only = position(&argv, &["--ro-bind-try", &shown_git, &shown_git]);
        assert!(
            writable < read_only,
            "the read-only .git is mounted over the writable directory: {argv:?}"
        );
        assert_eq!(
            argv.iter().filter(|a| a.as_str() == "--bind-try").count(),
            2,
            "the working directory and the socket, nothing more: {argv:?}"
        );
    }

    #[test]
    fn network_model_runs_the_bridge_with_the_allowed_hosts_in_a_namespace_of_its_own() {
        let args = SandboxArgs {
            sandbox: Sandbox::Strict,
            sandbox_network: Network::Model,
            sandbox_allow: vec!["127.0.0.1:4000".into()],
            ..SandboxArgs::default()
        };
        let cwd = PathBuf::from("/w");
        let argv = bwrap_command(&args, &around(&cwd, Path::new("/h")), &["pi".into()]);
        assert!(argv.contains(&"--unshare-net".to_owned()), "{argv:?}");
        position(
            &argv,
            &["--bind", "/run/user/1/shepherd/net-x", NET_DIR_INSIDE],
        );
        position(
            &argv,
            &[
                "/opt/shepherd/bin/shepherd",
                "sandbox-enter",
                "--bridge",
                "/tmp/.shepherd-net/proxy.sock",
                "--allow",
                "127.0.0.1:4000",
                "--",
                "pi",
            ],
        );
    }
}
