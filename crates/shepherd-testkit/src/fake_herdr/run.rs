//! Processes the fake runs on a pane's behalf, when [`super::FakeOptions::run_processes`] is
//! on: a `layout.apply` pane's program runs for real as the leader of a session of its own
//! (like a terminal's process), with the pane's creation environment, the `HERDR_*` variables a
//! real pane has and the pane's cwd; a line typed with Enter into a shell pane runs as
//! `sh -c <line>`. Their output becomes the pane's screen; a program that ends ends its pane.
//!
//! `pane.close` ends them as Herdr does (HUP, then TERM, then KILL to every process of the
//! pane's session: [`super::session`]), answering only then, while holding every other request.
//!
//! A shell slow to read its rc file ([`super::FakeOptions::slow_shell_rc`]) is modelled the
//! way Herdr shows it: the shell owns its terminal at once, but a line typed during the rc
//! file's run is read by the rc file (`rc-file read: [<line>]`) and never runs.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::Shared;
use super::model::FakePane;
use super::model::Leaving;

fn pane_command(shared: &Shared, pane: &FakePane, program: &str) -> Command {
    let cwd = if Path::new(&pane.cwd).is_dir() {
        pane.cwd.as_str()
    } else {
        "/"
    };
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .envs(&pane.env)
        .env("HERDR_ENV", "1")
        .env("HERDR_PANE_ID", &pane.id)
        .env("HERDR_TAB_ID", &pane.tab_id)
        .env("HERDR_WORKSPACE_ID", &pane.workspace_id)
        .env("HERDR_SOCKET_PATH", &shared.socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Starts a `layout.apply` pane's program as a session leader; its end ends the pane.
pub(crate) fn start_program(shared: &Arc<Shared>, pane: &mut FakePane) {
    let Some(argv) = pane.command.clone().filter(|argv| !argv.is_empty()) else {
        return;
    };
    // `setsid` makes the program lead a session of its own and then execs it (same pid).
    let mut command = pane_command(shared, pane, "setsid");
    command.args(&argv).stdin(Stdio::piped());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            pane.screen.push_str(&format!("herdr: {err}\n"));
            return;
        }
    };
    pane.shell_pid = child.id();
    pane.real_root = true;
    pane.stdin = child.stdin.take();
    let id = pane.terminal_id.clone();
    let pumps = pump_output(shared, &id, &mut child);
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let status = child.wait();
        for pump in pumps {
            let _done = pump.join();
        }
        let mut state = shared.lock();
        let code = status.ok().and_then(|s| s.code()).unwrap_or(-1);
        let pane_id = state
            .panes()
            .iter()
            .find(|p| p.terminal_id == id && !p.closed && !p.closing)
            .map(|p| p.id.clone());
        if let Some(pane_id) = pane_id {
            if let Some(pane) = state.pane_mut(&pane_id) {
                pane.exit_codes.push(code);
            }
            state.remove_pane(&pane_id, Leaving::Exited);
        }
        drop(state);
        shared.changed.notify_all();
    });
}

/// Runs a line typed into a shell pane, recording its output and exit code in the pane.
pub(crate) fn run_line(shared: &Arc<Shared>, pane: &mut FakePane, line: &str) {
    let mut command = pane_command(shared, pane, "sh");
    command
        .arg("-c")
        .arg(line)
        .stdin(Stdio::null())
        // A shell runs a job in a process group of its own, which owns the terminal.
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            pane.screen.push_str(&format!("sh: {err}\n"));
            return;
        }
    };
    let pid = child.id();
    pane.running = Some(pid);
    let id = pane.terminal_id.clone();
    let pumps = pump_output(shared, &id, &mut child);
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let status = child.wait();
        for pump in pumps {
            let _done = pump.join();
        }
        let mut state = shared.lock();
        let pane = state
            .panes()
            .iter()
            .find(|p| p.terminal_id == id)
            .map(|p| p.id.clone());
        if let Some(pane) = pane.and_then(|id| state.pane_any_mut(&id)) {
            if pane.running == Some(pid) {
                pane.running = None;
            }
            pane.exit_codes
                .push(status.ok().and_then(|s| s.code()).unwrap_or(-1));
        }
        drop(state);
        shared.changed.notify_all();
    });
}

fn pump_output(
    shared: &Arc<Shared>,
    terminal: &str,
    child: &mut std::process::Child,
) -> Vec<std::thread::JoinHandle<()>> {
    [
        child
            .stdout
            .take()
            .map(|out| Box::new(out) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|err| Box::new(err) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|from| {
        let shared = Arc::clone(shared);
        let terminal = terminal.to_owned();
        std::thread::spawn(move || pump(&shared, &terminal, from))
    })
    .collect()
}

fn pump(shared: &Shared, terminal: &str, mut from: Box<dyn Read + Send>) {
    let mut buf = [0_u8; 4096];
    while let Ok(read) = from.read(&mut buf) {
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&buf[..read]).into_owned();
        let mut state = shared.lock();
        let id = state
            .panes()
            .iter()
            .find(|p| p.terminal_id == terminal)
            .map(|p| p.id.clone());
        if let Some(pane) = id.and_then(|id| state.pane_any_mut(&id)) {
            pane.screen.push_str(&text);
        }
        drop(state);
        shared.changed.notify_all();
    }
}
