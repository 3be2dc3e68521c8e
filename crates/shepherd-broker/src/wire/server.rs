//! The socket server: one task per connection, one task per request.
//!
//! A connection's first request must be `hello`, which fixes its [`Session`] (role and, for
//! sheep and supervisors, the authenticated agent). After that every request runs in its own
//! task, so a slow `spawn` never holds up a `message` on the same connection; responses and
//! pushes are written by one writer task per connection, in the order they are produced.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use serde_json::Value;
use shepherd_core::protocol::{
    Hello, HelloResult, Method, PROTOCOL_VERSION, Request, Role, ServerLine,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{BrokerError, BrokerResult};
use crate::state::auth::Peer;
use crate::state::broker::Broker;
use crate::state::session::Session;

/// Accepts connections until the broker shuts down; `remote` for the socket forwarded to hosts.
pub(crate) async fn accept_loop(broker: Arc<Broker>, listener: UnixListener, remote: bool) {
    loop {
        tokio::select! {
            () = broker.shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(handle_connection(broker.clone(), stream, remote));
                }
                Err(err) => tracing::warn!("accept failed: {err}"),
            }
        }
    }
}

async fn handle_connection(broker: Arc<Broker>, stream: UnixStream, remote: bool) {
    // Through the remote socket the peer is the local `ssh`: it says nothing of the caller.
    let peer = if remote {
        Peer::default()
    } else {
        Peer::of(&stream)
    };
    let (read, mut write) = stream.into_split();
    let (out, mut out_rx) = mpsc::unbounded_channel::<String>();
    let closed = CancellationToken::new();
    let reader_done = closed.clone();
    let writer = tokio::spawn(async move {
        loop {
            let line = tokio::select! {
                biased;
                line = out_rx.recv() => line,
                () = reader_done.cancelled() => {
                    // Flush what was answered before the connection ended, then stop.
                    while let Ok(mut line) = out_rx.try_recv() {
                        line.push('\n');
                        if write.write_all(line.as_bytes()).await.is_err() {
                            break;
                        }
                    }
                    None
                }
            };
            let Some(mut line) = line else { break };
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                reader_done.cancel();
                break;
            }
        }
    });

    broker.client_delta(true);
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    let mut session: Option<Arc<Session>> = None;
    let hello_deadline = broker.config.hello_deadline;
    let hello_by = tokio::time::Instant::now() + hello_deadline;
    loop {
        let line = tokio::select! {
            () = broker.shutdown.cancelled() => break,
            () = closed.cancelled() => break,
            // A connection that never says who it is does not hold the broker.
            () = tokio::time::sleep_until(hello_by), if session.is_none() => {
                respond(&out, 0, Err(BrokerError::new(
                    ErrorCode::HelloTimeout,
                    format!("no `hello` within {} ms; closing the connection", hello_deadline.as_millis()),
                )));
                break;
            }
            line = read_line(&mut reader, &mut buf) => line,
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io) => break,
            Err(LineError::TooLong) => {
                respond(
                    &out,
                    0,
                    Err(BrokerError::new(
                        ErrorCode::RequestTooLarge,
                        format!(
                            "a request line longer than {MAX_REQUEST_LINE} bytes was refused; closing the connection"
                        ),
                    )),
                );
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let request: Request = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(err) => {
                respond(
                    &out,
                    0,
                    Err(BrokerError::new(
                        ErrorCode::InvalidRequest,
                        format!("not a request: {err}"),
                    )),
                );
                continue;
            }
        };
        match &session {
            None => {
                let result = hello(&broker, &request, (&peer, remote), &out, &closed).await;
                match result {
                    Ok((granted, value)) => {
                        session = Some(granted);
                        respond(&out, request.id, Ok(value));
                    }
                    Err(err) => respond(&out, request.id, Err(err)),
                }
            }
            Some(session) => {
                let broker = broker.clone();
                let session = session.clone();
                tokio::spawn(async move {
                    let id = request.id;
                    let stopping = Method::from_name(&request.method) == Some(Method::BrokerStop);
                    let result = crate::wire::dispatch::dispatch(&broker, &session, request).await;
                    let stop = stopping && result.is_ok();
                    respond(&session.out, id, result);
                    if stop {
                        // The answer is queued ahead of the shutdown; the writer drains it.
                        broker.shutdown.cancel();
                    }
                });
            }
        }
    }
    if let Some(session) = &session {
        if broker.shutdown.is_cancelled() {
            // An orderly stop says so (a crash cannot): clients then know not to bring the
            // broker straight back.
            session.push(shepherd_core::protocol::event::SHUTDOWN, Value::Null);
        }
        crate::run::connection_closed(&broker, session);
        crate::handlers::supervisor::connection_closed(&broker, session).await;
    }
    closed.cancel();
    drop(out);
    let _writer_done = writer.await;
    broker.client_delta(false);
}

/// Longest request line accepted: a longer one is refused and its connection closed, so one
/// client cannot make the broker hold an unbounded line in memory.
pub(crate) const MAX_REQUEST_LINE: usize = 1024 * 1024;

enum LineError {
    Io,
    TooLong,
}

/// The next line (without its newline), reading at most [`MAX_REQUEST_LINE`] bytes for it;
/// `None` at the end of the stream.
async fn read_line(
    reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>,
    buf: &mut Vec<u8>,
) -> Result<Option<String>, LineError> {
    use tokio::io::AsyncReadExt as _;
    buf.clear();
    let limit = u64::try_from(MAX_REQUEST_LINE).unwrap_or(u64::MAX) + 1;
    let read = (&mut *reader)
        .take(limit)
        .read_until(b'\n', buf)
        .await
        .map_err(|_| LineError::Io)?;
    if read == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_REQUEST_LINE {
        return Err(LineError::TooLong);
    }
    String::from_utf8(std::mem::take(buf))
        .map(Some)
        .map_err(|_| LineError::Io)
}

fn respond(out: &mpsc::UnboundedSender<String>, id: u64, result: BrokerResult<Value>) {
    let line = match result {
        Ok(value) => ServerLine::Response {
            id,
            result: Some(value),
            error: None,
        },
        Err(err) => ServerLine::Response {
            id,
            result: None,
            error: Some(err.to_wire()),
        },
    };
    let _closed = out.send(serde_json::to_string(&line).expect("responses serialise"));
}

/// Lists a parent connection in `broker.status` until it closes.
fn track_parent(
    broker: &Arc<Broker>,
    hello: &Hello,
    peer_pid: Option<u32>,
    closed: &CancellationToken,
) {
    let number = broker
        .connections
        .track_parent(shepherd_core::protocol::ParentConnection {
            client: hello.client.clone(),
            pid: peer_pid,
            driver: hello.driver.clone(),
        });
    let (broker, closed) = (Arc::downgrade(broker), closed.clone());
    tokio::spawn(async move {
        closed.cancelled().await;
        if let Some(broker) = broker.upgrade() {
            broker.connections.forget_parent(number);
        }
    });
}

/// The checks a parent or observer `hello` passes: the herd's key, and a process that can be
/// vouched for.
fn check_herd_member(broker: &Broker, peer: &Peer, hello: &Hello) -> BrokerResult<()> {
    crate::state::auth::check_herd_key(&broker.connections, &broker.config.paths.key, hello)?;
    crate::state::auth::check_peer(&broker.store, peer, hello.role)
}

async fn hello(
    broker: &Arc<Broker>,
    request: &Request,
    (peer, remote): (&Peer, bool),
    out: &mpsc::UnboundedSender<String>,
    closed: &CancellationToken,
) -> BrokerResult<(Arc<Session>, Value)> {
    if Method::from_name(&request.method) != Some(Method::Hello) {
        return Err(BrokerError::new(
            ErrorCode::HelloRequired,
            format!(
                "the first request on a connection must be `hello`, not `{}`",
                request.method
            ),
        ));
    }
    let hello: Hello = serde_json::from_value(request.params.clone())
        .map_err(|err| BrokerError::invalid_params(Method::Hello.name(), &err))?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(BrokerError::new(
            ErrorCode::ProtocolMismatch,
            format!(
                "this broker speaks protocol {PROTOCOL_VERSION}, the client {}; use the same shepherd version for both",
                hello.protocol
            ),
        ));
    }
    if remote {
        crate::state::auth::check_remote(broker, &hello)?;
    }
    let agent_id = match hello.role {
        Role::Parent => {
            check_herd_member(broker, peer, &hello)?;
            if let Some(file) = hello.session_file.as_deref() {
                broker.fieldnotes().set_parent_session_file(file)?;
            }
            track_parent(broker, &hello, peer.pid, closed);
            None
        }
        Role::Observer => {
            check_herd_member(broker, peer, &hello)?;
            None
        }
        Role::Sheep | Role::Supervisor => {
            Some(crate::state::auth::check_token(&broker.store, &hello)?)
        }
    };
    let session = Arc::new(Session {
        role: hello.role,
        agent_id,
        out: out.clone(),
        closed: closed.clone(),
        follows_herd: Arc::default(),
        peer_pid: peer.pid,
        remote,
    });
    if hello.role == Role::Supervisor {
        crate::sheep::supervisor_link::attach(&broker.links, &session);
    }
    let result = HelloResult {
        protocol: PROTOCOL_VERSION,
        broker_id: broker.config.address.key.clone(),
        parent_identity: broker.config.address.identity.clone(),
        project_root: broker.config.address.project_root.display().to_string(),
        role: hello.role,
    };
    Ok((
        session,
        serde_json::to_value(result).expect("hello result serialises"),
    ))
}
