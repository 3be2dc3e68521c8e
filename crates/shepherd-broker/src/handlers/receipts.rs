//! `status` on a message id: where that message is (queued, delivered, read or discarded).
//!
//! The parent may ask about any message of its herd; a sheep only about messages it sent or
//! received, so it learns nothing of what the parent and other sheep say to each other.

use std::sync::Arc;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::MessageReceipt;
use shepherd_core::ids::{MessageId, Participant};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::session::Session;

/// The receipt of `message_id`, as `session` may see it.
pub(crate) fn status(
    broker: &Arc<Broker>,
    session: &Session,
    message_id: &MessageId,
) -> BrokerResult<MessageReceipt> {
    let asker = session.participant();
    let receipt = broker
        .store
        .read(|herd| herd.message_receipt(message_id))
        .filter(|receipt| match &asker {
            Some(Participant::Sheep(me)) => {
                receipt.sender.agent_id() == Some(me) || receipt.target.agent_id() == Some(me)
            }
            _ => true,
        })
        .ok_or_else(|| {
            BrokerError::new(
                ErrorCode::UnknownMessage,
                format!("no message `{message_id}` with a receipt in this herd"),
            )
        })?;
    Ok(receipt)
}
