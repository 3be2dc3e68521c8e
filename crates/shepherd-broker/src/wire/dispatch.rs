//! Routes each request to its handler after checking that the caller's role allows it.
//!
//! This is the one module that knows every handler: the server hands it each request, and
//! no handler reaches back up to the server or to start-up.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shepherd_core::protocol::{Request, Role, method};

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
    let allowed = match name.as_str() {
        method::SPAWN
        | method::RESUME
        | method::DELEGATE
        | method::RUN_SUBMIT
        | method::RUN_CANCEL
        | method::MESSAGE
        | method::WATCH
        | method::CLOSE
        | method::FOCUS
        | method::PRUNE
        | method::BROKER_STOP => role == Role::Parent,
        method::WAIT
        | method::HERD
        | method::RESOLVE
        | method::HERD_SUBSCRIBE
        | method::READ
        | method::RUN_ATTACH => {
            matches!(role, Role::Parent | Role::Observer)
        }
        method::STATUS | method::BROKER_STATUS => role != Role::Supervisor,
        method::INBOX | method::ACK | method::SUBSCRIBE => {
            matches!(role, Role::Parent | Role::Sheep)
        }
        method::TELL | method::DONE | method::REPORT | method::HERD_MATES => role == Role::Sheep,
        method::SUPERVISOR_STARTED | method::SUPERVISOR_EXITED | method::SUPERVISOR_OUTPUT => {
            role == Role::Supervisor
        }
        method::HELLO => {
            return Err(BrokerError::new(
                ErrorCode::InvalidRequest,
                "hello was already said on this connection",
            ));
        }
        other => {
            return Err(BrokerError::new(
                ErrorCode::UnknownMethod,
                format!(
                    "unknown method `{other}`; see the protocol reference for the methods a broker accepts"
                ),
            ));
        }
    };
    if !allowed {
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
    match request_id.filter(|_| crate::wire::resend::keyed(&name)) {
        Some(id) => {
            let routed = route(broker, session, &name, params, Some(&id));
            crate::wire::resend::once(broker, &id, routed).await
        }
        None => route(broker, session, &name, params, None).await,
    }
}

/// Runs an allowed request; `rid` is its client request id when it changes the herd.
async fn route(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    name: &str,
    params: Value,
    rid: Option<&str>,
) -> BrokerResult<Value> {
    match name {
        method::SPAWN => {
            reply(crate::handlers::spawn::spawn(broker, parse(name, params)?, rid).await)
        }
        method::RESUME => {
            reply(crate::handlers::resume::resume(broker, parse(name, params)?, rid).await)
        }
        method::DELEGATE => {
            reply(crate::handlers::parent::delegate(broker, parse(name, params)?, rid).await)
        }
        method::MESSAGE => {
            crate::handlers::parent::message(broker, parse(name, params)?, rid).await
        }
        method::RUN_SUBMIT => crate::run::submit(broker, session, parse(name, params)?, rid).await,
        method::RUN_ATTACH => crate::run::attach(broker, session, &parse(name, params)?),
        method::RUN_CANCEL => crate::run::cancel(broker, &parse(name, params)?).await,
        method::WATCH => crate::handlers::parent::watch(broker, parse(name, params)?, rid).await,
        method::WAIT => {
            reply(crate::handlers::parent::wait(broker, session, parse(name, params)?).await)
        }
        method::STATUS => reply(crate::handlers::parent::status(
            broker,
            session,
            parse(name, params)?,
        )),
        method::HERD => reply(crate::handlers::parent::herd(broker)),
        method::RESOLVE => reply(crate::handlers::parent::resolve(
            broker,
            &parse(name, params)?,
        )),
        method::HERD_SUBSCRIBE => reply(crate::handlers::herd_feed::subscribe(broker, session)),
        method::READ => reply(crate::handlers::parent::read(broker, parse(name, params)?).await),
        method::CLOSE => reply(crate::handlers::close::close(broker, parse(name, params)?).await),
        method::PRUNE => reply(crate::handlers::close::prune(broker).await),
        method::INBOX => {
            reply(crate::handlers::inbox::inbox(broker, session, parse(name, params)?).await)
        }
        method::ACK => {
            reply(crate::handlers::inbox::ack(broker, session, parse(name, params)?).await)
        }
        method::SUBSCRIBE => reply(crate::handlers::inbox::subscribe(broker, session).await),
        method::HERD_MATES => reply(crate::handlers::sheep::mates(broker, session)),
        method::TELL => {
            crate::handlers::sheep::tell(broker, session, parse(name, params)?, rid).await
        }
        method::DONE => {
            crate::handlers::sheep::done(broker, session, parse(name, params)?, rid).await
        }
        method::REPORT => {
            crate::handlers::sheep::report(broker, session, parse(name, params)?, rid).await
        }
        method::SUPERVISOR_STARTED => {
            reply(crate::handlers::supervisor::started(broker, session, parse(name, params)?).await)
        }
        method::SUPERVISOR_EXITED => {
            reply(crate::handlers::supervisor::exited(broker, session, parse(name, params)?).await)
        }
        method::SUPERVISOR_OUTPUT => crate::sheep::printed::output(broker, session).await,
        method::FOCUS => reply(crate::handlers::focus::focus(broker, parse(name, params)?).await),
        method::BROKER_STATUS => reply(Ok(crate::handlers::broker_requests::status(broker))),
        method::BROKER_STOP => reply(crate::handlers::broker_requests::stop(broker).await),
        _ => unreachable!("every allowed method is dispatched"),
    }
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
