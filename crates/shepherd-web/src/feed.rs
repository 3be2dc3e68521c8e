//! The server's line to the herd: `herd.subscribe` on a connection of its own, each pushed view
//! kept as the latest in a watch channel that every open page follows. Nothing is asked on a
//! timer; the view is the broker's, never edited here.
//!
//! When the connection drops the feed reconnects (starting the broker again, as every
//! parent-side command does, unless it stopped on purpose: then it waits for one somebody else
//! starts, once a second).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shepherd_broker::client::{ClientError, Link, LinkSpec};
use shepherd_client::connect::{Target, broker_timeout, hello, start_spec};
use shepherd_core::protocol::{HerdResult, Role, event, method};
use tokio::sync::watch;
use tokio::time::Instant;

/// How long to wait between attempts to reach a broker that is not there.
const RETRY: Duration = Duration::from_secs(1);

/// What the pages know of the herd: its latest view, or why there is none.
#[derive(Debug, Clone)]
pub(crate) enum Herd {
    /// Not reached yet.
    Connecting,
    /// The herd as the broker last pushed it.
    View(Arc<HerdResult>),
    /// The broker cannot be reached (the reason); still trying.
    Unreachable(String),
}

/// Follows `target`'s herd until every receiver of `latest` is gone.
pub(crate) async fn follow(target: Target, latest: watch::Sender<Herd>) {
    let start = start_spec(&target).ok();
    let spec = |may_start: bool| LinkSpec {
        socket: target.paths.socket.clone(),
        hello: hello(Role::Parent, None, None),
        start: start.clone().filter(|_| may_start),
    };
    let mut may_start = true;
    let mut link = Link::new(spec(may_start));
    loop {
        let timeout = broker_timeout().unwrap_or(Duration::from_secs(15));
        let subscribed = match link.reach(Instant::now() + timeout).await {
            Ok(_) => {
                link.request(method::HERD_SUBSCRIBE, json!({}), Instant::now() + timeout)
                    .await
            }
            Err(err) => Err(err),
        };
        match subscribed.and_then(|value| {
            serde_json::from_value::<HerdResult>(value)
                .map_err(|err| ClientError::Protocol(err.to_string()))
        }) {
            Ok(view) => {
                if latest.send(Herd::View(Arc::new(view))).is_err() {
                    return;
                }
            }
            Err(err) => {
                if latest.send(Herd::Unreachable(err.to_string())).is_err() {
                    return;
                }
                link.disconnect();
                tokio::time::sleep(RETRY).await;
                continue;
            }
        }
        let stopped = loop {
            match link.next_push().await {
                Ok((name, data)) if name == event::HERD => {
                    let Ok(view) = serde_json::from_value::<HerdResult>(data) else {
                        continue;
                    };
                    if latest.send(Herd::View(Arc::new(view))).is_err() {
                        return;
                    }
                }
                Ok((name, _)) if name == event::SHUTDOWN => break true,
                Ok(_) => {}
                Err(_) => break false,
            }
        };
        link.disconnect();
        if stopped {
            // Someone stopped it: follow whichever broker comes next, without starting one.
            may_start = false;
            link = Link::new(spec(may_start));
            tokio::time::sleep(RETRY).await;
        } else if !may_start {
            may_start = true;
            link = Link::new(spec(may_start));
        }
    }
}
