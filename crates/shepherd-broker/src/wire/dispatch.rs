//! Routes each request to its handler after checking that the caller's role allows it.
//!
//! This is the one module that knows every handler: the server hands it each request, and
//! no handler reaches back up to the server or to start-up. Each handler is held to its line
//! of the method table by [`Handlers`]: it takes that line's parameters and answers its
//! result, and [`handle`] is the one place a request's JSON becomes those types and back.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use serde_json::Value;
use shepherd_core::protocol::*;

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
        && !valid_request_id(id)
    {
        return Err(BrokerError::new(
            ErrorCode::InvalidRequest,
            format!("requestId `{id}` must be 1 to {MAX_REQUEST_ID} printable ASCII characters"),
        ));
    }
    let keyed = request_id.filter(|_| method.keyed());
    let route = Route {
        broker,
        session,
        rid: keyed.as_deref(),
    };
    let answer = handle(&route, method, params);
    match keyed.as_deref() {
        Some(id) => crate::wire::resend::once(broker, id, answer).await,
        None => answer.await,
    }
}

/// An allowed request on its way to its handler: the broker, the caller's session, and the
/// client request id when the method changes the herd (a resend must find what its first copy
/// did). Its [`Handlers`] are the table's lines, each typed by its line.
struct Route<'a> {
    broker: &'a Arc<Broker>,
    session: &'a Arc<Session>,
    rid: Option<&'a str>,
}

impl Handlers for Route<'_> {
    type Error = BrokerError;

    fn invalid_params(method: Method, err: serde_json::Error) -> BrokerError {
        BrokerError::invalid_params(method.name(), &err)
    }

    // Answered when the connection opens; refused above on an open one.
    async fn hello(&self, _: Hello) -> BrokerResult<HelloResult> {
        Err(hello_again())
    }

    async fn spawn(&self, params: SpawnParams) -> BrokerResult<SpawnResult> {
        crate::handlers::spawn::spawn(self.broker, params, self.rid).await
    }

    async fn delegate(&self, params: DelegateParams) -> BrokerResult<DelegateResult> {
        let note = crate::handlers::parent::RunNote::default();
        crate::handlers::parent::delegate(self.broker, params, note, self.rid).await
    }

    async fn message(&self, params: MessageParams) -> BrokerResult<MessageResult> {
        crate::handlers::parent::message(self.broker, params, self.rid).await
    }

    async fn watch(&self, params: WatchParams) -> BrokerResult<WatchResult> {
        crate::handlers::parent::watch(self.broker, params, self.rid).await
    }

    async fn wait(&self, params: WaitParams) -> BrokerResult<WaitResult> {
        crate::handlers::parent::wait(self.broker, self.session, params).await
    }

    async fn status(&self, params: StatusParams) -> BrokerResult<StatusResult> {
        crate::handlers::parent::status(self.broker, self.session, params)
    }

    async fn close(&self, params: CloseParams) -> BrokerResult<CloseResult> {
        crate::handlers::close::close(self.broker, params).await
    }

    async fn resume(&self, params: ResumeParams) -> BrokerResult<SpawnResult> {
        crate::handlers::resume::resume(self.broker, params, self.rid).await
    }

    async fn herd(&self, _: NoParams) -> BrokerResult<HerdResult> {
        crate::handlers::parent::herd(self.broker)
    }

    async fn resolve(&self, params: ResolveParams) -> BrokerResult<ResolveResult> {
        crate::handlers::parent::resolve(&self.broker.store, &params)
    }

    async fn herd_subscribe(&self, _: NoParams) -> BrokerResult<HerdResult> {
        crate::handlers::herd_feed::subscribe(self.broker, self.session)
    }

    async fn herd_mates(&self, _: NoParams) -> BrokerResult<HerdMatesResult> {
        crate::handlers::sheep::mates(&self.broker.store, self.session)
    }

    async fn prune(&self, _: NoParams) -> BrokerResult<PruneResult> {
        crate::handlers::close::prune(self.broker).await
    }

    async fn read(&self, params: ReadParams) -> BrokerResult<ReadResult> {
        crate::handlers::parent::read(self.broker, params).await
    }

    async fn subscribe(&self, _: NoParams) -> BrokerResult<OkResult> {
        crate::handlers::inbox::subscribe(self.broker, self.session).await
    }

    async fn inbox(&self, params: InboxParams) -> BrokerResult<InboxResult> {
        crate::handlers::inbox::inbox(self.broker, self.session, params).await
    }

    async fn ack(&self, params: AckParams) -> BrokerResult<OkResult> {
        crate::handlers::inbox::ack(self.broker, self.session, params).await
    }

    async fn tell(&self, params: MessageParams) -> BrokerResult<MessageResult> {
        crate::handlers::sheep::tell(self.broker, self.session, params, self.rid).await
    }

    async fn done(&self, params: DoneParams) -> BrokerResult<DoneResult> {
        crate::handlers::sheep::done(self.broker, self.session, params, self.rid).await
    }

    async fn report(&self, params: ReportParams) -> BrokerResult<OkResult> {
        crate::handlers::sheep::report(self.broker, self.session, params, self.rid).await
    }

    async fn supervisor_started(&self, params: SupervisorStarted) -> BrokerResult<OkResult> {
        crate::handlers::supervisor::started(self.broker, self.session, params).await
    }

    async fn supervisor_exited(&self, params: SupervisorExited) -> BrokerResult<OkResult> {
        crate::handlers::supervisor::exited(self.broker, self.session, params).await
    }

    async fn supervisor_output(&self, _: NoParams) -> BrokerResult<OkResult> {
        crate::sheep::printed::output(self.broker, self.session).await
    }

    async fn focus(&self, params: FocusParams) -> BrokerResult<FocusResult> {
        crate::handlers::focus::focus(self.broker, params).await
    }

    async fn broker_status(&self, _: NoParams) -> BrokerResult<BrokerStatus> {
        Ok(crate::handlers::broker_requests::status(self.broker))
    }

    async fn broker_stop(&self, _: NoParams) -> BrokerResult<StopResult> {
        // A merge's check is killed and its worktree removed first; the target stays at its
        // last verified landing.
        crate::land::stop_all(self.broker).await;
        crate::handlers::broker_requests::stop(self.broker).await
    }

    async fn run_submit(&self, params: RunSubmitParams) -> BrokerResult<RunView> {
        crate::run::submit(self.broker, self.session, params, self.rid).await
    }

    async fn run_attach(&self, params: RunIdParams) -> BrokerResult<RunView> {
        crate::run::attach(self.broker, self.session, &params)
    }

    async fn run_cancel(&self, params: RunIdParams) -> BrokerResult<RunView> {
        crate::run::cancel(self.broker, &params).await
    }

    async fn merge_submit(&self, params: MergeParams) -> BrokerResult<MergeView> {
        crate::land::submit(self.broker, self.session, params, self.rid).await
    }

    async fn merge_attach(&self, params: MergeIdParams) -> BrokerResult<MergeView> {
        crate::land::attach(self.broker, self.session, &params)
    }

    async fn merge_cancel(&self, params: MergeIdParams) -> BrokerResult<MergeView> {
        crate::land::cancel(self.broker, self.session, &params).await
    }

    async fn merge_preview(&self, params: MergeParams) -> BrokerResult<MergePreview> {
        crate::land::preview(self.broker, params).await
    }

    async fn notes_write(&self, params: NotesWriteParams) -> BrokerResult<NotesWriteResult> {
        let fieldnotes = self.broker.fieldnotes();
        tokio::task::spawn_blocking(move || fieldnotes.write(params))
            .await
            .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))
            .and_then(|written| written)
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
