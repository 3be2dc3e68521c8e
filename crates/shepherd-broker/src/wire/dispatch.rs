//! Routes each request to its handler after checking that the caller's role allows it.
//!
//! This is the one module that knows every handler: the server hands it each request, and
//! no handler reaches back up to the server or to start-up.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shepherd_core::protocol::{Method, Request, Role};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::session::{Session, forbidden};

/// Runs one request for `session`.
pub(crate) async fn dispatch(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    request: Request,
) -> BrokerResult<Value> {
    let Request {
        method: name,
        params,
        request_id,
        ..
    } = request;
    let role = session.role;
    let Some(method) = Method::from_name(&name) else {
        return Err(BrokerError::new(
            ErrorCode::UnknownMethod,
            format!(
                "unknown method `{name}`; see the protocol reference for the methods a broker accepts"
            ),
        ));
    };
    if method == Method::Hello {
        return Err(hello_again());
    }
    if !method.allows(role) {
        return Err(forbidden(&format!(
            "a {} connection may not call `{name}`",
            role_name(role)
        )));
    }
    if let Some(id) = &request_id
        && !shepherd_core::protocol::valid_request_id(id)
    {
        return Err(BrokerError::new(
            ErrorCode::InvalidRequest,
            format!(
                "requestId `{id}` must be 1 to {} printable ASCII characters",
                shepherd_core::protocol::MAX_REQUEST_ID
            ),
        ));
    }
    match request_id.filter(|_| method.keyed()) {
        Some(id) => {
            let routed = route(broker, session, method, params, Some(&id));
            crate::wire::resend::once(broker, &id, routed).await
        }
        None => route(broker, session, method, params, None).await,
    }
}

/// Runs an allowed request; `rid` is its client request id when it changes the herd.
async fn route(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    method: Method,
    params: Value,
    rid: Option<&str>,
) -> BrokerResult<Value> {
    let name = method.name();
    match method {
        Method::Spawn => {
            reply(crate::handlers::spawn::spawn(broker, parse(name, params)?, rid).await)
        }
        Method::Resume => {
            reply(crate::handlers::resume::resume(broker, parse(name, params)?, rid).await)
        }
        Method::Delegate => reply(
            crate::handlers::parent::delegate(
                broker,
                parse(name, params)?,
                crate::handlers::parent::RunNote::default(),
                rid,
            )
            .await,
        ),
        Method::Message => {
            crate::handlers::parent::message(broker, parse(name, params)?, rid).await
        }
        Method::RunSubmit => crate::run::submit(broker, session, parse(name, params)?, rid).await,
        Method::RunAttach => crate::run::attach(broker, session, &parse(name, params)?),
        Method::RunCancel => crate::run::cancel(broker, &parse(name, params)?).await,
        Method::MergeSubmit => {
            crate::land::submit(broker, session, parse(name, params)?, rid).await
        }
        Method::MergeAttach => crate::land::attach(broker, session, &parse(name, params)?),
        Method::MergeCancel => crate::land::cancel(broker, session, &parse(name, params)?).await,
        Method::MergePreview => crate::land::preview(broker, parse(name, params)?).await,
        Method::NotesWrite => {
            let params = parse(name, params)?;
            let fieldnotes = broker.fieldnotes();
            reply(
                tokio::task::spawn_blocking(move || fieldnotes.write(params))
                    .await
                    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))
                    .and_then(|written| written),
            )
        }
        Method::Watch => crate::handlers::parent::watch(broker, parse(name, params)?, rid).await,
        Method::Wait => {
            reply(crate::handlers::parent::wait(broker, session, parse(name, params)?).await)
        }
        Method::Status => reply(crate::handlers::parent::status(
            broker,
            session,
            parse(name, params)?,
        )),
        Method::Herd => reply(crate::handlers::parent::herd(broker)),
        Method::Resolve => reply(crate::handlers::parent::resolve(
            broker,
            &parse(name, params)?,
        )),
        Method::HerdSubscribe => reply(crate::handlers::herd_feed::subscribe(broker, session)),
        Method::Read => reply(crate::handlers::parent::read(broker, parse(name, params)?).await),
        Method::Close => reply(crate::handlers::close::close(broker, parse(name, params)?).await),
        Method::Prune => reply(crate::handlers::close::prune(broker).await),
        Method::Inbox => {
            reply(crate::handlers::inbox::inbox(broker, session, parse(name, params)?).await)
        }
        Method::Ack => {
            reply(crate::handlers::inbox::ack(broker, session, parse(name, params)?).await)
        }
        Method::Subscribe => reply(crate::handlers::inbox::subscribe(broker, session).await),
        Method::HerdMates => reply(crate::handlers::sheep::mates(broker, session)),
        Method::Tell => {
            crate::handlers::sheep::tell(broker, session, parse(name, params)?, rid).await
        }
        Method::Done => {
            crate::handlers::sheep::done(broker, session, parse(name, params)?, rid).await
        }
        Method::Report => {
            crate::handlers::sheep::report(broker, session, parse(name, params)?, rid).await
        }
        Method::SupervisorStarted => {
            reply(crate::handlers::supervisor::started(broker, session, parse(name, params)?).await)
        }
        Method::SupervisorExited => {
            reply(crate::handlers::supervisor::exited(broker, session, parse(name, params)?).await)
        }
        Method::SupervisorOutput => crate::sheep::printed::output(broker, session).await,
        Method::Focus => reply(crate::handlers::focus::focus(broker, parse(name, params)?).await),
        Method::BrokerStatus => reply(Ok(crate::handlers::broker_requests::status(broker))),
        Method::BrokerStop => {
            // A merge's check is killed and its worktree removed first; the target stays at its
            // last verified landing.
            crate::land::stop_all(broker).await;
            reply(crate::handlers::broker_requests::stop(broker).await)
        }
        // Answered when the connection opens; refused above on an open one.
        Method::Hello => Err(hello_again()),
    }
}

/// The refusal of a second `hello` on a connection.
fn hello_again() -> BrokerError {
    BrokerError::new(
        ErrorCode::InvalidRequest,
        "hello was already said on this connection",
    )
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Parent => "parent",
        Role::Sheep => "sheep",
        Role::Observer => "observer",
        Role::Supervisor => "supervisor",
    }
}

fn parse<T: DeserializeOwned>(method: &str, params: Value) -> BrokerResult<T> {
    let params = if params.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        params
    };
    serde_json::from_value(params).map_err(|err| BrokerError::invalid_params(method, &err))
}

fn reply<T: Serialize>(result: BrokerResult<T>) -> BrokerResult<Value> {
    result.map(|value| serde_json::to_value(value).expect("results serialise"))
}
