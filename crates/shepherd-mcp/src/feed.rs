//! Push where the host allows: inbox items the broker pushes are passed on to the host as
//! `notifications/message` (MCP logging) the moment they are durable.
//!
//! The feed holds one subscribed broker connection for the server's life. Completions,
//! replies, questions, stale-wait reminders and notices each become one log message whose
//! `data` is `{text, item}`: the words the model would read, and the item itself. Nothing is
//! acknowledged here: hosts accept these messages but do not show them to the model today, so
//! the items stay in the inbox for `shepherd_inbox` (or `shepherd_watch`) to report, and
//! correctness never depends on a notification arriving. A lost connection is made again (a
//! crashed broker is restarted by the reconnect); after a broker stopped on purpose, the feed
//! waits for the next tool call before it reconnects, so it never brings a stopped broker
//! straight back by itself.

#![allow(
    deprecated,
    reason = "MCP logging is deprecated for protocol 2026-07-28, but it is what 2025-06-18 and 2025-11-25 hosts accept"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::json;
use shepherd_client::wire::Link;
use shepherd_client::wire::Push;
use shepherd_core::envelope::Kind;
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::protocol::{NoParams, calls};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::herd::Herd;
use super::words;

/// What both servers offer: tools, and log messages for what the broker pushes.
pub(crate) fn capabilities() -> rmcp::model::ServerCapabilities {
    rmcp::model::ServerCapabilities::builder()
        .enable_tools()
        .enable_logging()
        .build()
}

/// The lowest level a client asked for (`logging/setLevel`), as a number.
#[derive(Debug)]
pub(crate) struct Level(AtomicU8);

impl Level {
    /// `info` until the client says otherwise.
    pub(crate) fn new() -> Self {
        Self(AtomicU8::new(rank(LoggingLevel::Info)))
    }

    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    pub(crate) fn allows(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// How urgent an item is: a question or a stale wait asks for an answer, a completion or a
/// reply for attention, a plain message or a notice is information.
pub(crate) fn level_of(item: &InboxItem) -> LoggingLevel {
    match &item.payload {
        Payload::StaleWait(_) => LoggingLevel::Warning,
        Payload::Envelope { envelope } if envelope.expects_reply => LoggingLevel::Warning,
        Payload::Completion { .. } => LoggingLevel::Notice,
        Payload::Envelope { envelope } if envelope.kind == Kind::Reply => LoggingLevel::Notice,
        _ => LoggingLevel::Info,
    }
}

/// The words for an item, or `None` for an item not worth a message.
pub(crate) type Words = Box<dyn Fn(&InboxItem) -> Option<String> + Send + Sync>;

/// What the feed needs from the server.
pub(crate) struct Feed {
    /// A connection of the feed's own (never pooled: it receives the pushes).
    pub(crate) link: Link,
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) level: Arc<Level>,
    pub(crate) stop: CancellationToken,
    /// Signalled on every tool call: a feed idle after an orderly broker stop goes on.
    pub(crate) wake: Arc<Notify>,
    /// The words for an item.
    pub(crate) words: Words,
    /// The logger name in each message.
    pub(crate) logger: &'static str,
}

impl Feed {
    /// Runs until the server stops.
    pub(crate) async fn run(self) {
        let Self {
            mut link,
            peer,
            level,
            stop,
            wake,
            words,
            logger,
        } = self;
        let mut subscribed = 0;
        let mut last_seq = 0;
        let mut backoff = Duration::from_millis(50);
        loop {
            if stop.is_cancelled() {
                return;
            }
            if link.generation() != subscribed || !link.is_connected() {
                let deadline = Instant::now() + Duration::from_secs(15);
                let subscribed_now = tokio::select! {
                    answer = link.send::<calls::Subscribe>(&NoParams {}, deadline) => answer.is_ok(),
                    () = stop.cancelled() => return,
                };
                if !subscribed_now {
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = stop.cancelled() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
                backoff = Duration::from_millis(50);
                subscribed = link.generation();
            }
            let push = tokio::select! {
                push = link.next_event() => push,
                () = stop.cancelled() => return,
            };
            match push {
                Ok(Push::Inbox(pushed)) => {
                    for item in &pushed.items {
                        if item.seq <= last_seq {
                            continue;
                        }
                        last_seq = item.seq;
                        send(&peer, &level, logger, &words, item).await;
                    }
                }
                Ok(Push::Shutdown) => {
                    // Stopped on purpose: come back only when the model uses a tool again.
                    link.disconnect();
                    tokio::select! {
                        () = wake.notified() => {}
                        () = stop.cancelled() => return,
                    }
                }
                Ok(_) => {}
                Err(_) => link.disconnect(),
            }
        }
    }
}

async fn send(
    peer: &Peer<RoleServer>,
    level: &Level,
    logger: &str,
    words: &Words,
    item: &InboxItem,
) {
    let item_level = level_of(item);
    if !level.allows(item_level) {
        return;
    }
    let Some(text) = words(item) else {
        return;
    };
    let message =
        LoggingMessageNotificationParam::new(item_level, json!({ "text": text, "item": item }))
            .with_logger(logger);
    let sent = peer.notify_logging_message(message).await;
    if let Err(err) = sent {
        tracing::debug!("notifications/message not sent: {err}");
    }
}

/// Parent inbox items in words, display names from `herd`.
pub(crate) fn parent_words(herd: Arc<Herd>) -> Words {
    Box::new(move |item| {
        if let Payload::Completion { completions, .. } = &item.payload {
            for completion in completions {
                herd.remember(completion.agent_id.as_str(), &completion.display_name);
            }
        }
        words::inbox_item(item, &|id| herd.known_name(id))
    })
}
