//! A connection that outlives its broker.
//!
//! A [`Link`] keeps one [`Client`] connection and replaces it when it is lost: it reconnects
//! with backoff (25 ms doubling to 500 ms), starting the broker again when its [`LinkSpec`]
//! allows (a parent, a supervisor), or waiting for someone else to (a sheep), and says `hello`
//! again. A request whose connection was lost before its answer came is sent again under the
//! same client request id, which the broker uses to apply it once and answer it as it did the
//! first time. Everything happens before the caller's deadline: past it, the caller gets
//! `broker_unavailable` (nothing answered) or `broker_unresponsive` (something connected but
//! did not answer), never a hang.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use shepherd_core::protocol::{Call, Hello, HelloResult, calls};
use tokio::time::Instant;

use super::{Client, ClientError, Push, StartSpec, decode, encode, ensure_broker};

/// How a link reaches its broker.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// The broker's socket.
    pub socket: PathBuf,
    /// Who this link speaks for.
    pub hello: Hello,
    /// How to start the broker when none answers; `None` waits for someone else to.
    pub start: Option<StartSpec>,
}

/// A broker connection that reconnects and resends across broker restarts.
#[derive(Debug)]
pub struct Link {
    spec: LinkSpec,
    client: Option<Client>,
    hello: Option<HelloResult>,
    /// Bumped on every new connection, so followers know to subscribe again.
    generation: u64,
}

impl Link {
    /// A link that has not connected yet.
    pub fn new(spec: LinkSpec) -> Self {
        Self {
            spec,
            client: None,
            hello: None,
            generation: 0,
        }
    }

    /// Connects (starting the broker if the spec allows), before `deadline`.
    pub async fn open(spec: LinkSpec, deadline: Instant) -> Result<Self, ClientError> {
        let mut link = Self::new(spec);
        link.reach(deadline).await?;
        Ok(link)
    }

    /// What the broker said to the last `hello`.
    pub fn hello_result(&self) -> Option<&HelloResult> {
        self.hello.as_ref()
    }

    /// How many connections this link has made (a change means pushes must be asked for again).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The socket this link reaches.
    pub fn socket(&self) -> &std::path::Path {
        &self.spec.socket
    }

    /// Forgets the current connection (the next request reconnects).
    pub fn disconnect(&mut self) {
        self.client = None;
    }

    /// Whether a connection is open now.
    pub fn is_connected(&self) -> bool {
        self.client.is_some()
    }

    /// The current connection, making one first if needed, before `deadline`.
    pub async fn reach(&mut self, deadline: Instant) -> Result<&mut Client, ClientError> {
        if self.client.is_none() {
            let (client, hello) = self.connect(deadline).await?;
            self.client = Some(client);
            self.hello = Some(hello);
            self.generation += 1;
        }
        Ok(self.client.as_mut().expect("just connected"))
    }

    async fn connect(&mut self, deadline: Instant) -> Result<(Client, HelloResult), ClientError> {
        let began = Instant::now();
        let mut backoff = Duration::from_millis(25);
        let mut last: Option<ClientError> = None;
        loop {
            if let Some(start) = &self.spec.start {
                let left = deadline.saturating_duration_since(Instant::now());
                match ensure_broker(&self.spec.socket, start, left).await {
                    Err(err @ ClientError::StartRefused(_)) => return Err(err),
                    Err(err) => last = Some(err),
                    Ok(()) => {}
                }
            }
            match tokio::time::timeout_at(deadline, Client::connect(&self.spec.socket)).await {
                Err(_) => return Err(unavailable(&self.spec.socket, last.as_ref())),
                Ok(Ok(mut client)) => {
                    let hello = super::credentialed(&self.spec.hello, &self.spec.socket);
                    match tokio::time::timeout_at(deadline, client.send::<calls::Hello>(&hello))
                        .await
                    {
                        Err(_) => {
                            return Err(ClientError::Timeout {
                                method: calls::Hello::METHOD.name().to_owned(),
                                after: began.elapsed(),
                            });
                        }
                        Ok(Ok(hello)) => return Ok((client, hello)),
                        // A broker that died while we said hello is as absent as one that
                        // never answered: try again.
                        Ok(Err(err)) if err.is_lost() => last = Some(err),
                        Ok(Err(err)) => return Err(err),
                    }
                }
                Ok(Err(err)) => last = Some(err),
            }
            if Instant::now() + backoff >= deadline {
                return Err(unavailable(&self.spec.socket, last.as_ref()));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// The raw path: one request by method name with JSON parameters, answered as JSON, before
    /// `deadline`. Only for tests of the protocol itself (the `raw` feature, which only their
    /// dev-dependencies turn on); front ends send typed ([`Link::send`]).
    #[cfg(feature = "raw")]
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, ClientError> {
        self.exchange(method, params, deadline).await
    }

    /// One request by method name before `deadline`. When the connection is lost first, it
    /// reconnects and sends the same request again under the same client request id.
    async fn exchange(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, ClientError> {
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        let began = Instant::now();
        loop {
            let client = self.reach(deadline).await?;
            let answer = tokio::time::timeout_at(
                deadline,
                client.exchange(method, params.clone(), Some(&request_id)),
            )
            .await;
            match answer {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(err)) if err.is_lost() => self.client = None,
                Ok(Err(err)) => return Err(err),
                Err(_) => {
                    // The answer may still come on this connection; a later request must not
                    // read it as its own.
                    self.client = None;
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        after: began.elapsed(),
                    });
                }
            }
        }
    }

    /// Sends the method `M` with its own parameter type and reads its own result type (the
    /// method table's [`Call`]), waiting before `deadline`. When the connection is lost first,
    /// it reconnects and sends the same request again under the same client request id.
    pub async fn send<M: Call>(
        &mut self,
        params: &M::Params,
        deadline: Instant,
    ) -> Result<M::Result, ClientError> {
        let name = M::METHOD.name();
        let value = self.exchange(name, encode(params)?, deadline).await?;
        decode(name, value)
    }

    /// The next push on the current connection, read as its type; `Closed` when the
    /// connection is lost (reconnect with [`Link::reach`] and ask for the pushes again).
    pub async fn next_event(&mut self) -> Result<Push, ClientError> {
        let (name, data) = self.pushed().await?;
        Ok(Push::read(name, data))
    }

    /// The next push on the current connection as it came, its name and JSON data (the `raw`
    /// feature; see [`Link::request`]); `Closed` when the connection is lost.
    #[cfg(feature = "raw")]
    pub async fn next_push(&mut self) -> Result<(String, Value), ClientError> {
        self.pushed().await
    }

    async fn pushed(&mut self) -> Result<(String, Value), ClientError> {
        let Some(client) = self.client.as_mut() else {
            return Err(ClientError::Closed);
        };
        let push = client.pushed().await;
        if push.as_ref().is_err_and(ClientError::is_lost) {
            self.client = None;
        }
        push
    }
}

fn unavailable(socket: &std::path::Path, last: Option<&ClientError>) -> ClientError {
    let why = last.map_or_else(String::new, |err| format!(": {err}"));
    ClientError::Unavailable(format!("no broker answers on {}{why}", socket.display()))
}
