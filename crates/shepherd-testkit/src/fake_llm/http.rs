//! Just enough HTTP/1.1 for the fake model server: one request per connection, bodies by
//! `Content-Length` or chunked, replies closed with the connection, and server-sent events.
//!
//! Hand-rolled rather than a crate so the test kit builds fast and the server controls every
//! byte and pause of a streamed reply (what pi's OpenAI and Anthropic clients parse).

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Write};
use std::time::Duration;

/// The largest request head accepted.
const MAX_HEAD: u64 = 64 * 1024;
/// The largest request body accepted (pi sends its whole conversation each time).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path without its query string.
    pub(crate) path: String,
    /// The query string without `?` (empty when none).
    pub(crate) query: String,
    /// Header names in lower case.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

fn bad(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn read_line(reader: &mut impl BufRead, limit: u64) -> io::Result<String> {
    let mut line = String::new();
    reader.take(limit).read_line(&mut line)?;
    Ok(line)
}

/// Reads one request; `None` when the peer closed without sending one.
pub(crate) fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let line = read_line(reader, MAX_HEAD)?;
    if line.is_empty() {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad(format!("bad request line {line:?}")));
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let method = method.to_owned();
    let mut headers = BTreeMap::new();
    let mut head_size = line.len() as u64;
    loop {
        let line = read_line(reader, MAX_HEAD)?;
        head_size += line.len() as u64;
        if line.is_empty() || head_size > MAX_HEAD {
            return Err(bad("request head too long or cut short"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header {line:?}")))?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let length: usize = match headers.get("content-length") {
            Some(value) => value
                .parse()
                .map_err(|_| bad(format!("bad content-length {value:?}")))?,
            None => 0,
        };
        if length > MAX_BODY {
            return Err(bad("request body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Some(Request {
        method,
        path,
        query,
        headers,
        body,
    }))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader, 1024)?;
        let size = line.trim().split(';').next().unwrap_or_default();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| bad(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // Trailers, then the empty line.
            while !read_line(reader, MAX_HEAD)?.trim().is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        read_line(reader, 4)?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes a whole reply, with extra `headers`, and marks the connection closed.
pub(crate) fn write_reply(
    out: &mut impl Write,
    status: u16,
    content_type: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in headers {
        for part in [name.as_str(), ": ", value.as_str(), "\r\n"] {
            head.push_str(part);
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// Writes a JSON reply.
pub(crate) fn write_json(
    out: &mut impl Write,
    status: u16,
    body: &serde_json::Value,
) -> io::Result<()> {
    write_json_with(out, status, &[], body)
}

/// Writes a JSON reply with extra headers.
pub(crate) fn write_json_with(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &serde_json::Value,
) -> io::Result<()> {
    write_reply(
        out,
        status,
        "application/json",
        headers,
        body.to_string().as_bytes(),
    )
}

/// A server-sent event stream: the body ends when the connection closes.
pub(crate) struct Sse<'a, W: Write> {
    out: &'a mut W,
    /// Waits between events; returns false when the server is stopping.
    pause: &'a dyn Fn(Duration) -> bool,
    delay: Duration,
    /// Called once, just before the last event is written (see [`Sse::send_last`]).
    before_last: Option<&'a dyn Fn()>,
}

impl<'a, W: Write> Sse<'a, W> {
    /// Sends the reply head.
    pub(crate) fn start(
        out: &'a mut W,
        pause: &'a dyn Fn(Duration) -> bool,
        delay: Duration,
    ) -> io::Result<Self> {
        out.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
              Connection: close\r\n\r\n",
        )?;
        out.flush()?;
        Ok(Self {
            out,
            pause,
            delay,
            before_last: None,
        })
    }

    /// Calls `hook` just before the last event is written: from then on the reply counts as
    /// answered, since a client may send its next request the moment it reads that event.
    pub(crate) fn before_last(&mut self, hook: &'a dyn Fn()) {
        self.before_last = Some(hook);
    }

    /// Sends the stream's last event.
    pub(crate) fn send_last(&mut self, event: Option<&str>, data: &str) -> io::Result<()> {
        if let Some(hook) = self.before_last.take() {
            hook();
        }
        self.send(event, data)
    }

    /// Sends one event (`data` is one line of JSON or `[DONE]`), then waits the chunk delay.
    pub(crate) fn send(&mut self, event: Option<&str>, data: &str) -> io::Result<()> {
        if let Some(event) = event {
            writeln!(self.out, "event: {event}")?;
        }
        write!(self.out, "data: {data}\n\n")?;
        self.out.flush()?;
        if !self.delay.is_zero() && !(self.pause)(self.delay) {
            return Err(io::Error::other("fake model server stopping"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_content_length_and_chunked_bodies() {
        let raw = b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
        let request = read_request(&mut &raw[..]).unwrap().unwrap();
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(request.body, b"{}");
        assert_eq!(request.query, "x=1");

        let raw = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let request = read_request(&mut &raw[..]).unwrap().unwrap();
        assert_eq!(request.body, b"abcde");
    }

    #[test]
    fn refuses_a_cut_request_and_sees_a_closed_one() {
        assert!(read_request(&mut &b""[..]).unwrap().is_none());
        assert!(read_request(&mut &b"GET / HTTP/1.1\r\nHost: x\r\n"[..]).is_err());
        assert!(read_request(&mut &b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n{}"[..]).is_err());
    }
}
