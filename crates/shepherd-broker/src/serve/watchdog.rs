//! The broker's watch on its own socket and project, woken by the kernel rather than a clock.
//!
//! A broker nobody can reach and whose project is gone would run forever: once the project
//! folder is gone, the herd is closed and the broker stops. A socket deleted under a live
//! project is bound again, so the herd stays reachable. Both are checked when inotify reports
//! something deleted or moved in the runtime directory or the project folder itself, so an
//! idle broker makes no wake-ups of its own; only where inotify cannot be had does it fall
//! back to looking every few seconds.

use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::UnixListener;

use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;
use shepherd_client::paths::ensure_private_dir;

/// How often a broker without inotify looks at its socket and project.
const POLL_EVERY: Duration = Duration::from_secs(5);

/// What the runtime directory is watched for: the socket (or the directory) deleted or moved.
const RUNTIME_EVENTS: WatchFlags = WatchFlags::DELETE
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR);

/// What the project folder is watched for: itself deleted or moved away.
const PROJECT_EVENTS: WatchFlags = WatchFlags::DELETE_SELF
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR);

/// Watches until the broker shuts down or its project and socket are both gone.
pub(super) async fn watchdog_loop(broker: Arc<Broker>) {
    let watch = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
        .map_err(std::io::Error::from)
        .and_then(register);
    match watch {
        Ok(watch) => watched(broker, watch).await,
        Err(err) => {
            tracing::warn!("inotify is not available ({err}); looking at the socket every 5 s");
            polled(broker).await;
        }
    }
}

/// Hands the inotify descriptor to tokio's reactor, which then owns it.
fn register(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is an open descriptor that always returns the same raw value, and
    // the `AsyncFd` owns it until it is dropped: what `register` asks of its argument.
    #[allow(unsafe_code)]
    let registered = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
    registered.map_err(std::io::Error::from)
}

async fn watched(broker: Arc<Broker>, watch: AsyncFd<OwnedFd>) {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 4096];
    loop {
        add_watches(&broker.config, &watch);
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            ready = watch.readable() => {
                let Ok(mut ready) = ready else { return };
                // Drain every queued event (what happened is re-read from the disk below).
                // Readiness is cleared only by the read that finds the queue empty, so an event
                // that arrives while draining is never lost.
                loop {
                    let read = ready.try_io(|fd| {
                        let mut events = inotify::Reader::new(fd.get_ref(), &mut buffer);
                        events.next().map(drop).map_err(std::io::Error::from)
                    });
                    match read {
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => {
                            tracing::warn!("reading inotify events failed: {err}");
                            ready.clear_ready();
                            break;
                        }
                        Err(_queue_empty) => break,
                    }
                }
            }
        }
        if check(&broker).await == Verdict::Stopped {
            return;
        }
    }
}

async fn polled(broker: Arc<Broker>) {
    let mut every = tokio::time::interval(POLL_EVERY);
    every.tick().await;
    loop {
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        if check(&broker).await == Verdict::Stopped {
            return;
        }
    }
}

/// (Re)adds both watches; adding a watch that exists keeps it, and a folder that is gone has
/// nothing to watch.
fn add_watches(config: &BrokerConfig, watch: &AsyncFd<OwnedFd>) {
    let runtime_dir = &config.paths.runtime_dir;
    let project = &config.address.project_root;
    let _runtime = inotify::add_watch(watch.get_ref(), runtime_dir, RUNTIME_EVENTS);
    let _project = inotify::add_watch(watch.get_ref(), project, PROJECT_EVENTS);
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Running,
    Stopped,
}

/// Closes the herd when project and socket are both gone; binds a deleted socket again.
async fn check(broker: &Arc<Broker>) -> Verdict {
    let socket = broker.config.paths.socket.clone();
    let project_gone = !broker.config.address.project_root.is_dir();
    let socket_gone = !socket.exists();
    if project_gone && socket_gone {
        tracing::warn!("the project folder and the socket are gone; closing the herd");
        super::stop_and_exit(broker).await;
        return Verdict::Stopped;
    }
    if socket_gone {
        tracing::warn!(
            "the socket {} was removed; binding it again",
            socket.display()
        );
        let rebound = ensure_private_dir(&broker.config.paths.runtime_dir)
            .and_then(|()| UnixListener::bind(&socket))
            .and_then(|listener| {
                fs_err::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
                    .map(|()| listener)
            });
        match rebound {
            Ok(listener) => {
                tokio::spawn(crate::wire::server::accept_loop(
                    broker.clone(),
                    listener,
                    false,
                ));
            }
            Err(err) => tracing::error!("could not bind {} again: {err}", socket.display()),
        }
    }
    Verdict::Running
}
