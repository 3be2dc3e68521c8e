//! Exactly-once answers for resent requests.
//!
//! A client that loses an answer (its connection dropped, or the broker died and came back)
//! sends the same request again under the same client request id. Three things make that safe:
//! a request still being worked on in this broker is joined rather than run twice
//! ([`once`]); a request that changed the herd left its answer in the herd, journaled in the
//! same commit as the change ([`Store::commit_reply`]), so a resend after a restart gets that
//! answer back; and the requests that take several steps (spawn, delegate, runs) record the id
//! on what they create, so a resend after a restart picks up where the first attempt stopped.

use shepherd_core::error_code::ErrorCode;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shepherd_core::herd::{Event, StoredReply, Tx};
use tokio::sync::watch;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::store::Store;

/// Runs `run` once for `request_id`: a stored answer is returned as it was, a copy still in
/// flight is joined, and otherwise `run` runs and its answer is shared with any copy that
/// arrives meanwhile.
pub(crate) async fn once<F>(broker: &Arc<Broker>, request_id: &str, run: F) -> BrokerResult<Value>
where
    F: Future<Output = BrokerResult<Value>>,
{
    if let Some(stored) = broker
        .store
        .read(|herd| herd.replies.get(request_id).cloned())
    {
        broker.store.durable_now().await?;
        return stored_result(stored);
    }
    let joined = {
        let mut links = broker.links.lock().expect("links lock");
        match links.in_flight.get(request_id) {
            Some(first) => Some(first.subscribe()),
            None => {
                links
                    .in_flight
                    .insert(request_id.to_owned(), watch::Sender::new(None));
                None
            }
        }
    };
    if let Some(mut first) = joined {
        let answered = first
            .wait_for(Option::is_some)
            .await
            .map_err(|_| {
                BrokerError::new(
                    ErrorCode::Internal,
                    "the first copy of this request vanished",
                )
            })?
            .clone();
        return answered.unwrap_or_else(|| Err(BrokerError::new(ErrorCode::Internal, "no answer")));
    }
    let result = run.await;
    let first = broker
        .links
        .lock()
        .expect("links lock")
        .in_flight
        .remove(request_id);
    if let Some(first) = first {
        first.send_replace(Some(result.clone()));
    }
    result
}

/// The stored answer as a result.
fn stored_result(stored: StoredReply) -> BrokerResult<Value> {
    match stored.error {
        Some(error) => Err(BrokerError::new(error.code, error.message)),
        None => Ok(stored.result.unwrap_or(Value::Null)),
    }
}

impl Store {
    /// Applies a command that answers a request, like [`Store::commit`], and keeps its answer
    /// under `request_id` in the same journaled change whenever the command changed anything.
    /// A request already answered gets its stored answer back and changes nothing. Waits until
    /// the change is durable.
    ///
    /// A stored answer read back here is read as the handler's own type `T`; a resend that
    /// arrives once it is stored never gets this far, [`once`] resends it as it was stored.
    pub(crate) async fn commit_reply<T: Serialize + DeserializeOwned>(
        &self,
        request_id: Option<&str>,
        f: impl FnOnce(&mut Tx<'_>) -> BrokerResult<T>,
    ) -> BrokerResult<T> {
        let mut stored = None;
        let committed = self.commit(|tx| {
            if let Some(id) = request_id
                && let Some(reply) = tx.herd().replies.get(id)
            {
                stored = Some(reply.clone());
                return Err(BrokerError::new(ErrorCode::Internal, "answered before"));
            }
            let result = f(tx);
            if let Some(id) = request_id
                && tx.changed()
            {
                let reply = match &result {
                    Ok(value) => StoredReply {
                        result: Some(serde_json::to_value(value).expect("results serialise")),
                        error: None,
                    },
                    Err(err) => StoredReply {
                        result: None,
                        error: Some(err.to_wire()),
                    },
                };
                tx.emit(Event::Replied {
                    request_id: id.to_owned(),
                    reply,
                });
            }
            result
        });
        if let Some(stored) = stored {
            self.durable_now().await?;
            return stored_result(stored).and_then(|value| {
                serde_json::from_value(value).map_err(|err| {
                    BrokerError::new(
                        ErrorCode::Internal,
                        format!(
                            "the answer stored under `{}` is not this request's: {err}",
                            request_id.unwrap_or_default()
                        ),
                    )
                })
            });
        }
        self.durable(committed.pos).await?;
        committed.value
    }
}
