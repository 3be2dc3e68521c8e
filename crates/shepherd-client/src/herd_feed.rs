//! A front end's line to the herd: `herd.subscribe` on a connection of its own, and every
//! pushed view after it, handed over as [`FeedEvent`]s. Nothing is asked on a timer. The
//! dashboard and the web board both follow the herd this way.
//!
//! When the connection drops because the broker died, the link reconnects — starting the
//! broker again, as every parent-side command does — subscribes again and says so. When the
//! broker stopped on purpose (it pushed `shutdown`: `broker stop`, or its project went away),
//! the feed does not start it again; it keeps trying to reach one that somebody else starts,
//! once a second.

use std::time::Duration;

use crate::wire::{Link, LinkSpec, Push};
use shepherd_core::protocol::{HerdResult, NoParams, Role, calls};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::connect::{Target, broker_timeout, hello, start_spec};

/// How long to wait between attempts to reach a broker that stopped on purpose.
const RETRY_STOPPED: Duration = Duration::from_secs(1);

/// What the feed tells the loop.
#[derive(Debug)]
pub enum FeedEvent {
    /// Following the herd; `again` when this is not the first connection.
    Connected { again: bool },
    /// The herd as the broker pushed it.
    View(Box<HerdResult>),
    /// The connection dropped; reconnecting.
    Lost,
    /// The broker said it is shutting down.
    Stopped,
    /// The broker could not be reached (the reason); still trying.
    Unreachable(String),
}

/// Follows `target`'s herd until the receiver of `events` goes away.
pub async fn follow(target: Target, events: UnboundedSender<FeedEvent>) {
    let start = start_spec(&target).ok();
    let spec = |may_start: bool| LinkSpec {
        socket: target.paths.socket.clone(),
        hello: hello(Role::Parent, None, None),
        start: start.clone().filter(|_| may_start),
    };
    let mut may_start = true;
    let mut link = Link::new(spec(may_start));
    let mut connections = 0_u32;
    loop {
        let timeout = broker_timeout().unwrap_or(Duration::from_secs(15));
        let subscribed = match link.reach(Instant::now() + timeout).await {
            Ok(_) => {
                link.send::<calls::HerdSubscribe>(&NoParams {}, Instant::now() + timeout)
                    .await
            }
            Err(err) => Err(err),
        };
        let view = match subscribed {
            Ok(view) => view,
            Err(err) => {
                if events
                    .send(FeedEvent::Unreachable(err.to_string()))
                    .is_err()
                {
                    return;
                }
                link.disconnect();
                tokio::time::sleep(RETRY_STOPPED).await;
                continue;
            }
        };
        connections += 1;
        let sent = events
            .send(FeedEvent::Connected {
                again: connections > 1,
            })
            .and_then(|()| events.send(FeedEvent::View(Box::new(view))));
        if sent.is_err() {
            return;
        }
        let stopped = loop {
            match link.next_event().await {
                Ok(Push::Herd(view)) => {
                    if events.send(FeedEvent::View(view)).is_err() {
                        return;
                    }
                }
                Ok(Push::Shutdown) => break true,
                Ok(_) => {}
                Err(_) => break false,
            }
        };
        let said = if stopped {
            FeedEvent::Stopped
        } else {
            FeedEvent::Lost
        };
        if events.send(said).is_err() {
            return;
        }
        link.disconnect();
        if stopped {
            // Someone stopped it: follow whichever broker comes next, without starting one.
            may_start = false;
            link = Link::new(spec(may_start));
            tokio::time::sleep(RETRY_STOPPED).await;
        } else if !may_start {
            // It died rather than stopped: starting it again is what every parent does.
            may_start = true;
            link = Link::new(spec(may_start));
        }
    }
}
