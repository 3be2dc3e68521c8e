//! Attacks from inside the sandbox on what surrounds it: capabilities (the report's A16 — as
//! root, bubblewrap kept them and the sheep unmounted what hid `$HOME`), a nested user and mount
//! namespace to get at what the sandbox's mounts cover, the terminal (F5: `TIOCSTI` into a pane
//! whose shell runs once the sheep is gone; `TIOCLINUX`, Flatpak's CVE-2023-28100), and the
//! host's abstract unix sockets with `network: all` (E9). Each runs in every sandbox it
//! applies to, as root and (in CI) again as an unprivileged user.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use crate::attack_support::{appears, attack, define_attacker};
use crate::herd_support::World;

const MODES: [&str; 4] = [
    "sandbox: workspace\nnetwork: all",
    "sandbox: workspace\nnetwork: none",
    "sandbox: strict\nnetwork: model",
    "sandbox: strict\nnetwork: none",
];

/// A16: what the sheep holds, and what it can undo with it. Its task is the real `$HOME`.
const CAPABILITIES: &str = r#"
home = task()
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True).returncode == 0
findings = {
    "capEff": status["CapEff"].strip(),
    "capBnd": status["CapBnd"].strip(),
    # Unmount the tmpfs over $HOME in a mount namespace of its own, then write the real file.
    "unmounted": run("unshare", "-m", "sh", "-c", "umount -l " + home + " && echo ROOTCAPS >> " + home + "/.bashrc"),
    "remounted": run("unshare", "-m", "mount", "-o", "remount,rw", "/"),
    # A nested user and mount namespace, where it would be root again.
    "nested": run("unshare", "-Urm", "sh", "-c", "umount -l " + home + " && echo NESTED >> " + home + "/.bashrc"),
    "raw": try_(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) and "opened"),
}
done(findings)
"#;

#[test]
fn nothing_inside_holds_a_capability_or_can_unmount_what_hides_home() {
    let world = World::new();
    let bashrc = world.home.join(".bashrc");
    std::fs::write(&bashrc, "# the user's\n").unwrap();
    for mode in MODES {
        define_attacker(&world, "caps", mode, CAPABILITIES);
        let found = attack(&world, "caps", &world.home.display().to_string(), &[]);
        assert_eq!(found["capEff"], "0000000000000000", "{mode}: {found}");
        assert_eq!(found["capBnd"], "0000000000000000", "{mode}: {found}");
        assert_eq!(found["unmounted"], false, "{mode}: {found}");
        assert_eq!(found["remounted"], false, "{mode}: {found}");
        assert_eq!(found["nested"], false, "{mode}: {found}");
        assert!(
            found["raw"].as_str().unwrap().starts_with("refused"),
            "{mode}: {found}"
        );
        assert_eq!(
            std::fs::read_to_string(&bashrc).unwrap(),
            "# the user's\n",
            "{mode}: the real ~/.bashrc was written"
        );
    }
}

/// F5 and TIOCLINUX: push a command line into the terminal, and ask for its console.
const TERMINAL: &str = r#"
import fcntl, termios
proof = task()
def push(fd):
    for ch in "touch " + proof + "\n":
        fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
    return "pushed"
def console(fd):
    fcntl.ioctl(fd, 0x541C, bytes([6, 0]))  # TIOCLINUX, TIOCL_GETSHIFTSTATE
    return "answered"
tty = try_(lambda: os.open("/dev/tty", os.O_RDWR))
findings = {
    "terminal": os.isatty(0),
    "stdin": try_(lambda: push(0)),
    "tty": try_(lambda: push(tty)) if isinstance(tty, int) else tty,
    "console": try_(lambda: console(0)),
}
done(findings)
"#;

#[test]
fn a_confined_sheep_in_a_pane_keeps_its_terminal_but_cannot_type_into_it() {
    let world = World::new().with_private_tmux();
    let proof = world.home.join("proof-tiocsti");
    define_attacker(
        &world,
        "typist",
        "sandbox: workspace\nnetwork: none",
        TERMINAL,
    );
    let found = attack(
        &world,
        "typist",
        &proof.display().to_string(),
        &["--backend", "tmux"],
    );
    assert_eq!(
        found["terminal"], true,
        "a pane sheep keeps its terminal: {found}"
    );
    assert_eq!(found["stdin"], "refused: PermissionError", "{found}");
    assert_eq!(found["tty"], "refused: PermissionError", "{found}");
    assert_eq!(found["console"], "refused: PermissionError", "{found}");
    assert!(!proof.exists(), "the pushed line ran");
}

#[test]
fn a_confined_headless_sheep_has_no_terminal_to_type_into() {
    let world = World::new();
    let proof = world.home.join("proof-tiocsti");
    define_attacker(&world, "typist", "sandbox: strict\nnetwork: none", TERMINAL);
    let found = attack(&world, "typist", &proof.display().to_string(), &[]);
    assert_eq!(found["terminal"], false, "{found}");
    assert!(
        found["tty"].as_str().unwrap().starts_with("refused"),
        "{found}"
    );
    assert!(!proof.exists(), "the pushed line ran");
}

/// E9: the host's abstract unix socket, whose name is the task.
const ABSTRACT: &str = r#"
name = task()
def reach():
    s = socket.socket(socket.AF_UNIX)
    s.connect("\0" + name)
    return "connected"
done({"abstract": try_(reach)})
"#;

#[test]
fn the_hosts_abstract_sockets_are_out_of_reach_with_every_network() {
    let world = World::new();
    let name = format!("shepherd-attack-{}", std::process::id());
    use std::os::linux::net::SocketAddrExt;
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    listener.set_nonblocking(true).unwrap();
    for mode in [
        "sandbox: workspace\nnetwork: all",
        "sandbox: strict\nnetwork: all",
        "sandbox: workspace\nnetwork: model",
        "sandbox: strict\nnetwork: none",
    ] {
        define_attacker(&world, "abstract", mode, ABSTRACT);
        let found = attack(&world, "abstract", &name, &[]);
        assert!(
            found["abstract"].as_str().unwrap().starts_with("refused"),
            "{mode}: {found}"
        );
        assert!(
            matches!(listener.accept(), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
            "{mode}: the host's abstract socket took a connection"
        );
    }
}

/// Pushes `touch <proof>` into its terminal, unconfined: what would happen if a sheep's push got
/// through, for the keep-open wrapper to make harmless.
const PUSH_AND_EXIT: &str = "import fcntl, sys, termios\nfor ch in 'touch ' + sys.argv[1] + '\\n':\n    fcntl.ioctl(0, termios.TIOCSTI, ch.encode())\nopen(sys.argv[1] + '.pushed', 'w').close()\n";

#[test]
fn a_keep_open_pane_throws_away_pushed_input_before_the_users_shell_starts() {
    let world = World::new().with_private_tmux();
    let injector = world.dir.path().join("push.py");
    std::fs::write(&injector, PUSH_AND_EXIT).unwrap();
    let proof = world.home.join("proof-pushed");
    let marker = world.home.join("shell-ran");
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let pane = [
        "sh".to_owned(),
        "-c".to_owned(),
        shepherd_term::herdr::KEEP_OPEN_SCRIPT.to_owned(),
        "shepherd-sheep".to_owned(),
        "python3".to_owned(),
        injector.display().to_string(),
        proof.display().to_string(),
    ]
    .map(|word| quote(&word))
    .join(" ");
    world.tmux(&[
        "new-session",
        "-d",
        "-s",
        "keep-open",
        "-e",
        "SHELL=/bin/sh",
        "-e",
        &format!(
            "SHEPHERD_BIN={}",
            crate::herd_support::shepherd_bin().display()
        ),
        &pane,
    ]);
    let pushed = world.home.join("proof-pushed.pushed");
    assert!(
        appears(&pushed, Duration::from_secs(20)),
        "the push never happened"
    );
    // The user's first line in the pane's shell runs after anything still queued. A line sent
    // before the wrapper flushed is thrown away too, so it is sent again until it runs.
    let ran = (0..10).any(|_| {
        world.tmux(&[
            "send-keys",
            "-t",
            "keep-open",
            &format!("touch {}", marker.display()),
            "Enter",
        ]);
        appears(&marker, Duration::from_secs(2))
    });
    assert!(ran, "the pane's shell never ran a line");
    assert!(!proof.exists(), "the pushed line ran in the user's shell");
}
