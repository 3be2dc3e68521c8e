//! Inboxes: fetching (with a deadline), acknowledging and subscribing.
//!
//! Items stay in a participant's inbox until acknowledged, so a reader that dies between
//! receiving and acknowledging gets them again (at least once; message ids make duplicates
//! recognisable). Nothing is handed out before the journal holds it. Handing out a message and
//! its acknowledgement mark its receipt delivered and read (`shepherd_core::herd::receipts`).

use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::InboxItem;
use shepherd_core::ids::Participant;
use shepherd_core::protocol::{AckParams, InboxParams, InboxResult, OkResult, event};

use crate::error::BrokerResult;
use crate::state::broker::Broker;
use crate::state::session::{Session, forbidden};

fn participant(session: &Session) -> BrokerResult<Participant> {
    session
        .participant()
        .ok_or_else(|| forbidden("only the parent or a sheep has an inbox"))
}

/// Runs `inbox`: the unacknowledged items, waiting up to `waitMs` for the first one.
pub(crate) async fn inbox(
    broker: &Arc<Broker>,
    session: &Session,
    params: InboxParams,
) -> BrokerResult<InboxResult> {
    let who = participant(session)?;
    let mut signal = broker.store.inbox_signal(&who);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(params.wait_ms);
    loop {
        signal.borrow_and_update();
        let items = broker.store.read(|herd| herd.pending_items(&who));
        if !items.is_empty() || tokio::time::Instant::now() >= deadline {
            handed_out(broker, &who, &items).await?;
            let items = crate::sheep::remote_sheep::for_host(broker, session, items);
            return Ok(InboxResult { items });
        }
        tokio::select! {
            changed = signal.changed() => if changed.is_err() { return Ok(InboxResult { items }) },
            () = tokio::time::sleep_until(deadline) => {}
            () = session.closed.cancelled() => return Ok(InboxResult { items }),
            () = broker.shutdown.cancelled() => return Ok(InboxResult { items }),
        }
    }
}

/// Records that `items` are being handed to `who` (the messages among them are delivered) and
/// waits until that, and the items themselves, are durable: nothing goes out before the journal
/// holds it.
async fn handed_out(
    broker: &Arc<Broker>,
    who: &Participant,
    items: &[InboxItem],
) -> BrokerResult<()> {
    match items.last() {
        Some(last) => {
            broker
                .store
                .commit_durable(|tx| {
                    shepherd_core::herd::delivered(tx, who, last.seq);
                    if let Participant::Sheep(id) = who {
                        shepherd_core::herd::limits::granted(tx, id);
                    }
                    Ok(())
                })
                .await
        }
        None => broker.store.durable_now().await,
    }
}

/// Runs `ack`.
pub(crate) async fn ack(
    broker: &Arc<Broker>,
    session: &Session,
    params: AckParams,
) -> BrokerResult<OkResult> {
    let who = participant(session)?;
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::ack(tx, &who, params.seq);
            Ok(())
        })
        .await?;
    Ok(OkResult::ACK)
}

/// Runs `subscribe`: from now on, every unacknowledged item is pushed to this connection as
/// soon as it is durable (items already waiting are pushed at once).
pub(crate) async fn subscribe(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
) -> BrokerResult<OkResult> {
    let who = participant(session)?;
    let broker = broker.clone();
    let session = session.clone();
    let mut signal = broker.store.inbox_signal(&who);
    tokio::spawn(async move {
        let mut last_pushed = 0;
        loop {
            signal.borrow_and_update();
            let items: Vec<_> = broker
                .store
                .read(|herd| herd.pending_items(&who))
                .into_iter()
                .filter(|item| item.seq > last_pushed)
                .collect();
            if let Some(last) = items.last() {
                if handed_out(&broker, &who, &items).await.is_err() {
                    return;
                }
                last_pushed = last.seq;
                let items = crate::sheep::remote_sheep::for_host(&broker, &session, items);
                session.push(
                    event::INBOX,
                    serde_json::to_value(InboxResult { items }).expect("items serialise"),
                );
            }
            tokio::select! {
                changed = signal.changed() => if changed.is_err() { return },
                () = session.closed.cancelled() => return,
                () = broker.shutdown.cancelled() => return,
            }
        }
    });
    Ok(OkResult::ACK)
}
