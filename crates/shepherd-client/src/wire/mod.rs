//! The wire client: what the front ends, supervisors and test sheep use to talk to a broker,
//! and how a broker is started on demand.
//!
//! A [`Client`] is one connection: it says `hello` with its role, then makes requests; pushed
//! lines (`{"event", …}`) that arrive while it waits for a response are kept for
//! [`Client::next_event`]. A [`Link`] is what front ends use: a connection that rides out a
//! broker restart, reconnecting with backoff (starting the broker again when it may) and
//! resending the request in flight under the same client request id, so it is applied once.
//! [`start`] starts a broker with the environment its herd was created with. Every wait here
//! has a deadline.
//!
//! Requests are typed by the method table: `send::<calls::X>(&params)` sends `X` with its own
//! parameter type and reads its own result type, and pushes are read as [`Push`]. The untyped
//! forms that take a method name and JSON (`Client::call_value`, `Client::request`,
//! `Link::request`, `next_push`) are the raw path for tests of the protocol itself, which send
//! what no typed client can: they exist only with the `raw` feature, which only
//! dev-dependencies turn on, so no front end can send an untyped request.

mod link;
mod push;
pub mod start;

pub use link::{Link, LinkSpec};
pub use push::Push;
pub use start::{StartSpec, ensure_broker};

use shepherd_core::error_code::ErrorCode;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shepherd_core::protocol::{
    Call, Hello, HelloResult, Request, Role, ServerLine, WireError, calls,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// A client-side failure.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No broker answers on the socket.
    #[error("cannot connect to the broker at {socket}: {source}")]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The connection failed.
    #[error("broker connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// The broker closed the connection.
    #[error("the broker closed the connection")]
    Closed,
    /// The broker refused the request.
    #[error("{}", .0.message)]
    Remote(WireError),
    /// The broker sent something this client cannot read.
    #[error("unexpected reply from the broker: {0}")]
    Protocol(String),
    /// A broker could not be started.
    #[error("{0}")]
    Start(String),
    /// The broker started and refused to run (it said why); trying again would not help.
    #[error("the broker could not start: {0}")]
    StartRefused(String),
    /// No broker could be reached (or started) before the deadline.
    #[error("{0}")]
    Unavailable(String),
    /// The broker did not answer before the deadline.
    #[error("the broker did not answer `{method}` within {} s (is it stopped or overloaded?)", .after.as_secs())]
    Timeout {
        /// The request.
        method: String,
        /// How long the caller waited.
        after: Duration,
    },
}

impl ClientError {
    /// The stable code: the broker's own for refusals, else a client-side one.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Remote(err) => err.code,
            Self::Connect { .. }
            | Self::Start(_)
            | Self::StartRefused(_)
            | Self::Unavailable(_) => ErrorCode::BrokerUnavailable,
            Self::Io(_) | Self::Closed => ErrorCode::BrokerDisconnected,
            Self::Protocol(_) => ErrorCode::Protocol,
            Self::Timeout { .. } => ErrorCode::BrokerUnresponsive,
        }
    }

    /// Whether the connection was lost (the request may or may not have been applied).
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::Io(_) | Self::Closed)
    }
}

/// Where the key of the herd whose broker listens on `socket` is kept: beside it, named like
/// it (`b-<key>.sock` → `b-<key>.key`).
pub fn herd_key_file(socket: &Path) -> PathBuf {
    socket.with_extension("key")
}

/// `hello` as it is sent to the broker at `socket`: a parent or observer `hello` without a
/// token presents the herd's key.
pub fn credentialed(hello: &Hello, socket: &Path) -> Hello {
    let mut hello = hello.clone();
    if matches!(hello.role, Role::Parent | Role::Observer) && hello.token.is_none() {
        hello.token = read_herd_key(socket);
    }
    hello
}

/// The key of the herd at `socket`, when this process may read it (a sandbox hides it).
pub fn read_herd_key(socket: &Path) -> Option<String> {
    fs_err::read_to_string(herd_key_file(socket))
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|key| !key.is_empty())
}

/// One connection to a broker.
#[derive(Debug)]
pub struct Client {
    lines: Lines<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    next_id: u64,
    pushes: VecDeque<(String, Value)>,
}

impl Client {
    /// Connects to the broker at `socket`.
    pub async fn connect(socket: &Path) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect {
                socket: socket.to_path_buf(),
                source,
            })?;
        let (read, writer) = stream.into_split();
        Ok(Self {
            lines: BufReader::new(read).lines(),
            writer,
            next_id: 1,
            pushes: VecDeque::new(),
        })
    }

    /// Connects and says hello. A parent or observer `hello` without a token presents the
    /// herd's key, read from beside the socket as it connects (a broker writes it when it
    /// starts).
    pub async fn open(socket: &Path, hello: &Hello) -> Result<(Self, HelloResult), ClientError> {
        let mut client = Self::connect(socket).await?;
        let result = client
            .send::<calls::Hello>(&credentialed(hello, socket))
            .await?;
        Ok((client, result))
    }

    /// Sends the method `C` with its own parameter type and reads its own result type (the
    /// method table's [`Call`]), waiting for the answer (pushes arriving meanwhile are kept).
    pub async fn send<C: Call>(&mut self, params: &C::Params) -> Result<C::Result, ClientError> {
        let name = C::METHOD.name();
        let value = self.exchange(name, encode(params)?, None).await?;
        decode(name, value)
    }

    /// The raw path: one request by method name with JSON parameters, answered as JSON. Only
    /// for tests of the protocol itself and benchmarks that send requests by hand (the `raw`
    /// feature, which only their dev-dependencies turn on); a front end sends typed
    /// ([`Client::send`]).
    #[cfg(feature = "raw")]
    pub async fn call_value(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.exchange(method, params, None).await
    }

    /// The raw path with a client request id (the `raw` feature; see [`Client::call_value`]):
    /// one request by method name, tagged with the id when given.
    #[cfg(feature = "raw")]
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        request_id: Option<&str>,
    ) -> Result<Value, ClientError> {
        self.exchange(method, params, request_id).await
    }

    /// One request by method name, tagged with the client request id when given, waiting for
    /// its answer (pushes arriving meanwhile are kept). [`Link`] resends through it.
    pub(crate) async fn exchange(
        &mut self,
        method: &str,
        params: Value,
        request_id: Option<&str>,
    ) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(&Request {
            id,
            method: method.to_owned(),
            params,
            request_id: request_id.map(str::to_owned),
        })
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        loop {
            match self.read_line().await? {
                ServerLine::Response {
                    id: got,
                    result,
                    error,
                } if got == id => {
                    return match error {
                        Some(error) => Err(ClientError::Remote(error)),
                        None => Ok(result.unwrap_or(Value::Null)),
                    };
                }
                ServerLine::Response { .. } => {}
                ServerLine::Push { event, data } => self.pushes.push_back((event, data)),
            }
        }
    }

    /// The next pushed event, read as its type. Cancel-safe: a push is never lost when a select
    /// drops this call.
    pub async fn next_event(&mut self) -> Result<Push, ClientError> {
        let (name, data) = self.pushed().await?;
        Ok(Push::read(name, data))
    }

    /// The next pushed event as it came: its name and JSON data (the `raw` feature; see
    /// [`Client::call_value`]). Cancel-safe.
    #[cfg(feature = "raw")]
    pub async fn next_push(&mut self) -> Result<(String, Value), ClientError> {
        self.pushed().await
    }

    /// The next pushed event as it came. Cancel-safe: a push is never lost when a select drops
    /// this call.
    pub(crate) async fn pushed(&mut self) -> Result<(String, Value), ClientError> {
        if let Some(push) = self.pushes.pop_front() {
            return Ok(push);
        }
        loop {
            if let ServerLine::Push { event, data } = self.read_line().await? {
                return Ok((event, data));
            }
        }
    }

    async fn read_line(&mut self) -> Result<ServerLine, ClientError> {
        let line = self.lines.next_line().await?.ok_or(ClientError::Closed)?;
        serde_json::from_str(&line).map_err(|err| ClientError::Protocol(format!("{err}: {line}")))
    }
}

/// `params` as the JSON a request carries.
fn encode<P: Serialize>(params: &P) -> Result<Value, ClientError> {
    serde_json::to_value(params).map_err(|err| ClientError::Protocol(err.to_string()))
}

/// The answer to `method` as its result type.
fn decode<R: DeserializeOwned>(method: &str, value: Value) -> Result<R, ClientError> {
    serde_json::from_value(value).map_err(|err| ClientError::Protocol(format!("{method}: {err}")))
}
