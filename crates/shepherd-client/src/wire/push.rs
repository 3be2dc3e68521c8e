//! What a broker pushes unasked, read as the protocol's own types.
//!
//! A pushed line is `{"event", "data"}`; each event name has one data type in
//! `shepherd_core::protocol` (the names are `protocol::event`). [`Push::read`] turns the pair
//! into one value per event, so a front end matches on a variant instead of comparing names and
//! reading fields by key.

use serde::de::DeserializeOwned;
use serde_json::Value;
use shepherd_core::protocol::{HerdResult, InboxResult, MergeView, RunView, TerminateData, event};

/// One pushed event.
#[derive(Debug, Clone, PartialEq)]
pub enum Push {
    /// Inbox items for the subscribed participant.
    Inbox(InboxResult),
    /// The herd changed: the same document as a `herd` result.
    Herd(Box<HerdResult>),
    /// A run followed on this connection changed.
    Run(Box<RunView>),
    /// A merge followed on this connection changed.
    Merge(Box<MergeView>),
    /// Broker → supervisor: end the sheep.
    Terminate(TerminateData),
    /// The broker is shutting down.
    Shutdown,
    /// An event this client does not know, or one whose data is not its event's type: passed
    /// on as it came, for the caller to skip.
    Other {
        /// The event name.
        event: String,
        /// Its data.
        data: Value,
    },
}

impl Push {
    /// The event `name` with its `data`, as its type.
    pub fn read(name: String, data: Value) -> Self {
        fn typed<T: DeserializeOwned>(
            name: String,
            data: Value,
            wrap: impl FnOnce(T) -> Push,
        ) -> Push {
            match T::deserialize(&data) {
                Ok(value) => wrap(value),
                Err(_) => Push::Other { event: name, data },
            }
        }
        match name.as_str() {
            event::INBOX => typed(name, data, Push::Inbox),
            event::HERD => typed(name, data, |view| Push::Herd(Box::new(view))),
            event::RUN => typed(name, data, |view| Push::Run(Box::new(view))),
            event::MERGE => typed(name, data, |view| Push::Merge(Box::new(view))),
            event::TERMINATE => typed(name, data, Push::Terminate),
            event::SHUTDOWN => Push::Shutdown,
            _ => Push::Other { event: name, data },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_event_is_read_as_its_type_and_anything_else_is_passed_on() {
        let terminate = Push::read(event::TERMINATE.into(), json!({ "graceMs": 250 }));
        assert_eq!(terminate, Push::Terminate(TerminateData { grace_ms: 250 }));
        assert_eq!(
            Push::read(event::SHUTDOWN.into(), Value::Null),
            Push::Shutdown
        );
        let inbox = Push::read(event::INBOX.into(), json!({ "items": [] }));
        assert_eq!(inbox, Push::Inbox(InboxResult { items: Vec::new() }));
        let herd = Push::read(event::HERD.into(), json!({ "sheep": [] }));
        assert!(matches!(herd, Push::Herd(view) if view.sheep.is_empty()));
        let unreadable = Push::read(event::TERMINATE.into(), json!({ "grace": "soon" }));
        assert_eq!(
            unreadable,
            Push::Other {
                event: event::TERMINATE.into(),
                data: json!({ "grace": "soon" })
            }
        );
        let unknown = Push::read("later".into(), json!(1));
        assert!(matches!(unknown, Push::Other { event, .. } if event == "later"));
    }
}
