//! A tiny blocking HTTP client for talking to the fake model server from tests: its control
//! endpoints, and model requests when a test checks the wire format itself.
//!
//! It speaks only what the fake server speaks (plain HTTP on loopback, one request per
//! connection, replies closed with the connection), so it needs no HTTP crate.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

/// A reply.
#[derive(Debug, Clone)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// Header lines as sent, `name: value`.
    pub headers: Vec<String>,
    /// The body as text.
    pub body: String,
}

impl HttpReply {
    /// The body as JSON.
    ///
    /// # Errors
    /// When it is not JSON.
    pub fn json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.body)
    }

    /// The value of header `name` (any case), the first when repeated.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The `data:` payloads of a server-sent event stream, in order.
    #[must_use]
    pub fn sse_data(&self) -> Vec<&str> {
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect()
    }

    /// The `event:` names of a server-sent event stream, in order.
    #[must_use]
    pub fn sse_events(&self) -> Vec<&str> {
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect()
    }
}

/// Sends one request to `url` (`http://host:port/path`) and reads the whole reply.
///
/// # Errors
/// When the URL is not plain `http://`, the server cannot be reached, or the reply is cut
/// short; each step is bounded by `timeout`.
pub fn request(
    method: &str,
    url: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> io::Result<HttpReply> {
    request_with(method, url, &[], body, timeout)
}

/// [`request`] with extra headers, e.g. `[("x-api-key", "sk-a")]` for a credential.
///
/// # Errors
/// As [`request`].
pub fn request_with(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
    timeout: Duration,
) -> io::Result<HttpReply> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| invalid(format!("{url}: only http:// URLs")))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = authority
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| invalid(format!("{url}: no address")))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         {extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let cut = || io::Error::new(io::ErrorKind::UnexpectedEof, "reply cut short");
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(cut)?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(cut)?;
    Ok(HttpReply {
        status,
        headers: lines.map(str::to_owned).collect(),
        body: body.to_owned(),
    })
}

/// `GET url`.
///
/// # Errors
/// As [`request`].
pub fn get(url: &str, timeout: Duration) -> io::Result<HttpReply> {
    request("GET", url, None, timeout)
}

/// `POST url` with a JSON body.
///
/// # Errors
/// As [`request`].
pub fn post_json(url: &str, body: &Value, timeout: Duration) -> io::Result<HttpReply> {
    request("POST", url, Some(body), timeout)
}
