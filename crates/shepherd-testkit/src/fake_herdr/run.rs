//! Processes the fake runs on a pane's behalf: a line typed with Enter runs as `sh -c <line>`
//! (when [`super::FakeOptions::run_typed`] is on) with the pane's creation environment, the
//! `HERDR_*` variables a real pane has and the pane's cwd, its output becoming the pane's
//! screen — so the real `shepherd supervise` can run in a fake pane. A "slow shell start"
//! holds the terminal with a blocked `cat` until the test releases it. Closing a pane hangs up
//! on them as a closing terminal would.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use super::Shared;
use super::model::FakePane;
use std::os::unix::process::CommandExt;

/// Runs `line` in `pane_id`, recording its output and exit code in the pane.
pub(crate) fn run_line(shared: &Arc<Shared>, pane: &mut FakePane, line: &str) {
    let cwd = if Path::new(&pane.cwd).is_dir() {
        pane.cwd.as_str()
    } else {
        "/"
    };
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .envs(&pane.env)
        .env("HERDR_ENV", "1")
        .env("HERDR_PANE_ID", &pane.id)
        .env("HERDR_TAB_ID", &pane.tab_id)
        .env("HERDR_WORKSPACE_ID", &pane.workspace_id)
        .env("HERDR_SOCKET_PATH", &shared.socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let id = pane.id.clone();
    let pumps: Vec<_> = [
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
        let id = id.clone();
        std::thread::spawn(move || pump(&shared, &id, from))
    })
    .collect();
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let status = child.wait();
        for pump in pumps {
            let _done = pump.join();
        }
        let mut state = shared.lock();
        if let Some(pane) = state.pane_any_mut(&id) {
            if pane.running == Some(pid) {
                pane.running = None;
            }
            let code = status.ok().and_then(|s| s.code()).unwrap_or(-1);
            pane.exit_codes.push(code);
        }
        drop(state);
        shared.changed.notify_all();
    });
}

fn pump(shared: &Shared, pane_id: &str, mut from: Box<dyn Read + Send>) {
    let mut buf = [0_u8; 4096];
    while let Ok(read) = from.read(&mut buf) {
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&buf[..read]).into_owned();
        if let Some(pane) = shared.lock().pane_any_mut(pane_id) {
            pane.screen.push_str(&text);
        }
        shared.changed.notify_all();
    }
}

/// Makes a blocked `cat` hold the pane's terminal until [`release_holder`].
pub(crate) fn start_holder(shared: &Arc<Shared>, pane: &mut FakePane) {
    let spawned = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = spawned else {
        return;
    };
    let pid = child.id();
    pane.startup = Some((pid, child.stdin.take()));
    let shared = Arc::clone(shared);
    let id = pane.id.clone();
    std::thread::spawn(move || {
        let _status = child.wait();
        if let Some(pane) = shared.lock().pane_any_mut(&id)
            && pane
                .startup
                .as_ref()
                .is_some_and(|(holder, _)| *holder == pid)
        {
            pane.startup = None;
        }
        shared.changed.notify_all();
    });
}

/// Lets the holder end: its stdin closes, `cat` exits, the shell owns the terminal.
pub(crate) fn release_holder(pane: &mut FakePane) {
    if let Some((_, stdin)) = &mut pane.startup {
        stdin.take();
    }
}

/// What a closing terminal does: SIGHUP to the foreground job's group; the start-up holder
/// is simply ended.
pub(crate) fn hang_up(pane: &mut FakePane) {
    if let Some(pid) = pane.running.and_then(to_pid) {
        let _gone = kill_process_group(pid, Signal::HUP);
    }
    if let Some((holder, stdin)) = &mut pane.startup {
        stdin.take();
        if let Some(pid) = to_pid(*holder) {
            let _gone = kill_process(pid, Signal::KILL);
        }
    }
}

/// Ends whatever still runs (the fake is going away).
pub(crate) fn kill_all(pane: &mut FakePane) {
    if let Some(pid) = pane.running.and_then(to_pid) {
        let _gone = kill_process_group(pid, Signal::KILL);
    }
    hang_up(pane);
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}
