//! Tying a child process to this one: the child is killed when this process's forking thread
//! ends, and refuses to start when this process is already gone. Three programs need it (the
//! supervisor's sheep, the driver's agent in its pseudo-terminal, the broker's ssh master), and
//! each hands over its command here, so the hook that runs between fork and exec — where only
//! async-signal-safe calls are allowed — is written and argued for once.

// It builds no command: it is handed one to tie before its owner spawns it (a tokio or
// pseudo-terminal command as the `std` command inside it).
#![allow(clippy::disallowed_types)]

use std::io;
use std::process::Command;

/// What a child does between fork and exec after tying itself to its parent, with values
/// prepared before the fork.
///
/// # Safety
///
/// [`BeforeExec::run`] runs in the forked child of a possibly multi-threaded process: it must
/// make only async-signal-safe system calls, allocate nothing and take no lock.
#[allow(unsafe_code)]
pub unsafe trait BeforeExec: Send + Sync + 'static {
    /// Runs in the child; an error keeps the program from starting.
    fn run(&self) -> io::Result<()>;
}

/// Nothing more than the tie.
#[derive(Debug, Clone, Copy)]
pub struct NothingMore;

// SAFETY: does nothing.
#[allow(unsafe_code)]
unsafe impl BeforeExec for NothingMore {
    fn run(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Has the child `command` starts killed (SIGKILL) when the thread that spawns it ends, and
/// refuse to start when this process died before the signal was set; then runs `then`. The
/// signal follows the forking thread, not the process, so the caller spawns from a thread that
/// lives as long as the child should (a single-threaded runtime's main thread, a keeper thread
/// that lives as long as the link). A tokio command is tied through `as_std_mut`, and a
/// pseudo-terminal command by tying the tokio command it is made from (its own hook runs after
/// this one).
pub fn tie_to_this_process(command: &mut Command, then: impl BeforeExec) {
    let parent = std::process::id();
    // SAFETY: the hook runs in the forked child before exec; `die_with_parent` makes only
    // async-signal-safe system calls (prctl, getppid) and allocates nothing, and `then` is
    // bound by `BeforeExec`'s contract to do the same.
    #[allow(unsafe_code)]
    unsafe {
        use std::os::unix::process::CommandExt as _;
        command.pre_exec(move || {
            super::die_with_parent(parent)?;
            then.run()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Refuse;

    /// EPERM: what the child reports to the parent is its error's OS code.
    const REFUSED: i32 = 1;

    // SAFETY: returns an OS error code, built without a system call or an allocation.
    #[allow(unsafe_code)]
    unsafe impl BeforeExec for Refuse {
        fn run(&self) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(REFUSED))
        }
    }

    #[test]
    fn a_tied_child_runs_and_a_refusing_hook_keeps_it_from_starting() {
        let mut ok = Command::new("true");
        tie_to_this_process(&mut ok, NothingMore);
        assert!(ok.status().expect("true runs").success());

        let mut refused = Command::new("true");
        tie_to_this_process(&mut refused, Refuse);
        let err = refused.status().expect_err("the hook refused the start");
        assert_eq!(err.raw_os_error(), Some(REFUSED), "{err}");
    }

    #[test]
    fn a_tied_child_is_killed_when_the_thread_that_started_it_ends() {
        let mut child = std::thread::spawn(|| {
            let mut sleeper = Command::new("sleep");
            sleeper.arg("60");
            tie_to_this_process(&mut sleeper, NothingMore);
            sleeper.spawn().expect("sleep starts")
        })
        .join()
        .expect("the spawning thread ends");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child can be waited for") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _killed = child.kill();
                let _reaped = child.wait();
                panic!("the tied child outlived the thread that started it");
            }
            std::thread::yield_now();
        };
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), Some(9), "{status}");
    }
}
