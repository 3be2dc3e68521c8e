//! The server's line to the herd: the shared follower (`shepherd_client::herd_feed`), each
//! pushed view kept as the latest in a watch channel that every open page follows. Nothing is
//! asked on a timer; the view is the broker's, never edited here. The follower reconnects on
//! its own (starting the broker again unless it stopped on purpose).

use std::sync::Arc;

use shepherd_client::connect::Target;
use shepherd_client::herd_feed::{self, FeedEvent};
use shepherd_core::protocol::HerdResult;
use tokio::sync::{mpsc, watch};

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
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let follower = tokio::spawn(herd_feed::follow(target, events_tx));
    while let Some(event) = events.recv().await {
        let herd = match event {
            FeedEvent::View(view) => Herd::View(Arc::from(view)),
            FeedEvent::Unreachable(why) => Herd::Unreachable(why),
            // A herd whose broker was stopped is not shown as if it were still there (a reply
            // field on it would start a new broker); the follower waits for one to start.
            FeedEvent::Stopped => {
                Herd::Unreachable("it was stopped (`shepherd broker stop`)".to_owned())
            }
            // A page keeps showing the last view while the follower reconnects.
            FeedEvent::Connected { .. } | FeedEvent::Lost => continue,
        };
        if latest.send(herd).is_err() {
            break;
        }
    }
    // No page is left to tell: stop following.
    follower.abort();
}
