//! The broker's methods, declared once: each one's name, the roles that may call it, its
//! parameters and result types, and whether a resend of it must be recognised. Everything that
//! lists methods is made from this table: the [`Method`] enum the broker dispatches on, the
//! [`method`] name constants, the typed [`Call`] markers a client sends ([`calls`]), the
//! [`Handlers`] a server implements (one method per line, typed by it) with [`handle`], which
//! carries a request from JSON to its handler and back, and the methods of the JSON Schema (and
//! so of the generated TypeScript types). Adding a method is one line here and its handler; a
//! handler whose parameters or result differ from its line does not compile.
//!
//! Untyped JSON here is only what crosses the wire: the request's parameters before they are
//! decoded, the answer once encoded, and each schema entry's JSON Schema document.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::*;

/// Parameters of a method that takes none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NoParams {}

// Whatever such a request carries is ignored, as it always was: the broker never read it.
impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| NoParams {})
    }
}

/// A method with its parameter and result types, for a client that sends it typed.
pub trait Call {
    /// The method.
    const METHOD: Method;
    /// What it is sent with.
    type Params: Serialize + DeserializeOwned;
    /// What it answers.
    type Result: Serialize + DeserializeOwned;
}

macro_rules! methods {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident / $handler:ident = $konst:ident, $name:literal, $params:ty => $result:ty,
        [$($role:ident),*], keyed: $keyed:literal;
    )*) => {
        /// Every broker method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Method {
            /// Every method, in the order the schema lists them.
            pub const ALL: &[Method] = &[$(Method::$variant,)*];

            /// The name on the wire.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                }
            }

            /// The method `name` names, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(Method::$variant),)*
                    _ => None,
                }
            }

            /// The roles that may call it (none for `hello`, which opens a session instead).
            pub fn roles(self) -> &'static [Role] {
                match self {
                    $(Method::$variant => &[$(Role::$role),*],)*
                }
            }

            /// Whether a connection of `role` may call it.
            pub fn allows(self, role: Role) -> bool {
                self.roles().contains(&role)
            }

            /// Whether it changes the herd, so a resend under the same client request id must
            /// be answered from the first run rather than run again. Reads, subscriptions and
            /// naturally idempotent requests (ack, close, prune) run again harmlessly.
            pub fn keyed(self) -> bool {
                match self {
                    $(Method::$variant => $keyed,)*
                }
            }
        }

        /// Method names, for code that speaks the wire without a [`Call`] type.
        pub mod method {
            $($(#[doc = $doc])* pub const $konst: &str = $name;)*
        }

        /// One marker type per method, naming its [`Call`]: `link.send::<calls::Spawn>(&params, …)`.
        pub mod calls {
            $($(#[doc = $doc])* #[derive(Debug, Clone, Copy)] pub struct $variant;)*
        }

        $(impl Call for calls::$variant {
            const METHOD: Method = Method::$variant;
            type Params = $params;
            type Result = $result;
        })*

        /// A server of the table: one handler per method, taking that method's parameters and
        /// answering its result. [`handle`] decodes a request for its handler and encodes the
        /// answer; nothing else in a server touches a request's JSON.
        pub trait Handlers: Sync {
            /// Why a request failed.
            type Error: Send;

            /// The refusal of parameters that do not decode as `method`'s.
            fn invalid_params(method: Method, err: serde_json::Error) -> Self::Error;

            $(
                $(#[doc = $doc])*
                fn $handler(
                    &self,
                    params: $params,
                ) -> impl Future<Output = Result<$result, Self::Error>> + Send;
            )*
        }

        /// Runs `method` on `handlers`: decodes `params` (none, `null`, reads as `{}`) as the
        /// method's parameters, calls its handler and encodes the answer.
        pub async fn handle<H: Handlers>(
            handlers: &H,
            method: Method,
            params: Value,
        ) -> Result<Value, H::Error> {
            let params = if params.is_null() {
                Value::Object(serde_json::Map::new())
            } else {
                params
            };
            match method {
                $(Method::$variant => {
                    let params: $params = serde_json::from_value(params)
                        .map_err(|err| H::invalid_params(method, err))?;
                    let result: $result = handlers.$handler(params).await?;
                    Ok(serde_json::to_value(result).expect("results serialise"))
                })*
            }
        }

        /// Each method's schema entry, `{params, result}`, in table order.
        pub(super) fn schema_entries(
            generator: &mut schemars::SchemaGenerator,
        ) -> Vec<(&'static str, Value)> {
            vec![$(($name, super::schema::method_entry::<$params, $result>(generator)),)*]
        }
    };
}

methods! {
    /// Opens a session on a connection.
    Hello / hello = HELLO, "hello", Hello => HelloResult, [], keyed: false;
    /// Parent: start a sheep.
    Spawn / spawn = SPAWN, "spawn", SpawnParams => SpawnResult, [Parent], keyed: true;
    /// Parent: hand a sheep a tracked task.
    Delegate / delegate = DELEGATE, "delegate", DelegateParams => DelegateResult, [Parent], keyed: true;
    /// Parent: message a sheep.
    Message / message = MESSAGE, "message", MessageParams => MessageResult, [Parent], keyed: true;
    /// Parent: register a durable watcher.
    Watch / watch = WATCH, "watch", WatchParams => WatchResult, [Parent], keyed: true;
    /// Parent or observer: wait on this connection for tasks to settle.
    Wait / wait = WAIT, "wait", WaitParams => WaitResult, [Parent, Observer], keyed: false;
    /// Parent, sheep or observer: one sheep's status, or all.
    Status / status = STATUS, "status", StatusParams => StatusResult, [Parent, Sheep, Observer], keyed: false;
    /// Parent: close a sheep.
    Close / close = CLOSE, "close", CloseParams => CloseResult, [Parent], keyed: false;
    /// Parent: reopen a closed or exited sheep on its own session.
    Resume / resume = RESUME, "resume", ResumeParams => SpawnResult, [Parent], keyed: true;
    /// Parent or observer: the herd.
    Herd / herd = HERD, "herd", NoParams => HerdResult, [Parent, Observer], keyed: false;
    /// Parent or observer: the sheep or task a short name (id prefix, display name) stands for.
    Resolve / resolve = RESOLVE, "resolve", ResolveParams => ResolveResult, [Parent, Observer], keyed: false;
    /// Parent or observer: the herd now, then pushed `herd` events whenever it changes.
    HerdSubscribe / herd_subscribe = HERD_SUBSCRIBE, "herd.subscribe", NoParams => HerdResult, [Parent, Observer], keyed: false;
    /// Sheep: its herd-mates (ids, display names, agents, states; no task texts).
    HerdMates / herd_mates = HERD_MATES, "herd.mates", NoParams => HerdMatesResult, [Sheep], keyed: false;
    /// Parent: drop records of sheep that are gone.
    Prune / prune = PRUNE, "prune", NoParams => PruneResult, [Parent], keyed: false;
    /// Parent or observer: a sheep's recent output.
    Read / read = READ, "read", ReadParams => ReadResult, [Parent, Observer], keyed: false;
    /// Parent or sheep: push inbox items on this connection as they arrive.
    Subscribe / subscribe = SUBSCRIBE, "subscribe", NoParams => OkResult, [Parent, Sheep], keyed: false;
    /// Parent or sheep: fetch inbox items, waiting up to a deadline.
    Inbox / inbox = INBOX, "inbox", InboxParams => InboxResult, [Parent, Sheep], keyed: false;
    /// Parent or sheep: acknowledge inbox items.
    Ack / ack = ACK, "ack", AckParams => OkResult, [Parent, Sheep], keyed: false;
    /// Sheep: message the parent or a herd-mate.
    Tell / tell = TELL, "tell", MessageParams => MessageResult, [Sheep], keyed: true;
    /// Sheep: settle its task.
    Done / done = DONE, "done", DoneParams => DoneResult, [Sheep], keyed: true;
    /// Sheep: report its run's lifecycle.
    Report / report = REPORT, "report", ReportParams => OkResult, [Sheep], keyed: true;
    /// Supervisor: the sheep's program runs.
    SupervisorStarted / supervisor_started = SUPERVISOR_STARTED, "supervisor.started", SupervisorStarted => OkResult, [Supervisor], keyed: false;
    /// Supervisor: the sheep's program ended.
    SupervisorExited / supervisor_exited = SUPERVISOR_EXITED, "supervisor.exited", SupervisorExited => OkResult, [Supervisor], keyed: false;
    /// Supervisor: the sheep printed something (its last line is read again).
    SupervisorOutput / supervisor_output = SUPERVISOR_OUTPUT, "supervisor.output", NoParams => OkResult, [Supervisor], keyed: false;
    /// Parent: bring a visible sheep's pane to the front of the caller's terminal.
    Focus / focus = FOCUS, "focus", FocusParams => FocusResult, [Parent], keyed: false;
    /// Parent, sheep or observer: the broker's own status.
    BrokerStatus / broker_status = BROKER_STATUS, "broker.status", NoParams => BrokerStatus, [Parent, Sheep, Observer], keyed: false;
    /// Parent: stop the broker (closing every sheep first).
    BrokerStop / broker_stop = BROKER_STOP, "broker.stop", NoParams => StopResult, [Parent], keyed: false;
    /// Parent: submit a run (single, parallel or chain) for the broker to carry out.
    RunSubmit / run_submit = RUN_SUBMIT, "run.submit", RunSubmitParams => RunView, [Parent], keyed: true;
    /// Parent or observer: follow a run's progress until it finishes.
    RunAttach / run_attach = RUN_ATTACH, "run.attach", RunIdParams => RunView, [Parent, Observer], keyed: false;
    /// Parent: cancel a run.
    RunCancel / run_cancel = RUN_CANCEL, "run.cancel", RunIdParams => RunView, [Parent], keyed: false;
    /// Parent: land branches Shepherd made, one by one, into a target branch (a merge queue).
    MergeSubmit / merge_submit = MERGE_SUBMIT, "merge.submit", MergeParams => MergeView, [Parent], keyed: true;
    /// Parent or observer: follow a merge until it is over.
    MergeAttach / merge_attach = MERGE_ATTACH, "merge.attach", MergeIdParams => MergeView, [Parent, Observer], keyed: false;
    /// Parent: cancel a merge (the target stays at its last verified landing).
    MergeCancel / merge_cancel = MERGE_CANCEL, "merge.cancel", MergeIdParams => MergeView, [Parent], keyed: false;
    /// Parent: what a merge would land, in order, and what would conflict, changing nothing.
    MergePreview / merge_preview = MERGE_PREVIEW, "merge.preview", MergeParams => MergePreview, [Parent], keyed: false;
    /// Parent: change the project's fieldnotes (what `shepherd notes` writes), in its session's
    /// next group commit.
    NotesWrite / notes_write = NOTES_WRITE, "notes.write", NotesWriteParams => NotesWriteResult, [Parent], keyed: false;
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_read_back_as_its_method() {
        for &method in Method::ALL {
            assert_eq!(Method::from_name(method.name()), Some(method));
        }
        assert_eq!(Method::from_name("spawn "), None);
        assert_eq!(Method::ALL.len(), 35);
    }

    #[test]
    fn a_method_without_parameters_ignores_what_it_is_sent() {
        for sent in [
            serde_json::json!({}),
            serde_json::json!({"id": "x"}),
            serde_json::json!("text"),
            serde_json::json!([1, 2]),
            serde_json::json!(7),
        ] {
            assert_eq!(
                serde_json::from_value::<NoParams>(sent).ok(),
                Some(NoParams {})
            );
        }
    }

    #[test]
    fn only_hello_is_open_to_no_role_and_only_changes_are_keyed() {
        let roleless: Vec<_> = Method::ALL
            .iter()
            .filter(|m| m.roles().is_empty())
            .collect();
        assert_eq!(roleless, [&Method::Hello]);
        assert!(Method::Spawn.keyed() && !Method::Status.keyed() && !Method::Close.keyed());
        assert!(Method::Status.allows(Role::Sheep) && !Method::Status.allows(Role::Supervisor));
    }
}
