//! The allow-listing proxy outside a sandbox with `network: model`.
//!
//! A sheep in a network namespace of its own reaches nothing; the bridge inside passes each
//! connection it wants here, over a unix socket bound into the sandbox, as an HTTP `CONNECT
//! host:port` request (the form every HTTPS proxy client speaks). The proxy connects only to the
//! hosts and ports its sheep's model provider needs and refuses the rest with `403`, so the
//! decision is made outside, where the sheep cannot change it.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The longest request head read before a connection is refused.
const HEAD_LIMIT: usize = 8 * 1024;

/// Where a confined sheep may connect: `host:port` pairs, hosts compared without case.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowList(Vec<(String, u16)>);

impl AllowList {
    /// Reads `host:port` entries; an entry without a valid port is left out.
    pub(crate) fn new<'a>(entries: impl IntoIterator<Item = &'a String>) -> Self {
        Self(
            entries
                .into_iter()
                .filter_map(|entry| split(entry))
                .collect(),
        )
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        self.0
            .iter()
            .any(|(allowed, p)| *p == port && allowed.eq_ignore_ascii_case(host))
    }
}

/// `host:port` or `[v6]:port`, split.
pub(crate) fn split(entry: &str) -> Option<(String, u16)> {
    let (host, port) = entry.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_owned(), port.parse().ok()?))
}

/// Serves the proxy on a socket at `path` until the task is dropped.
pub(crate) fn serve(
    path: &Path,
    allowed: AllowList,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = UnixListener::bind(path)?;
    let allowed = Arc::new(allowed);
    Ok(tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(relay(stream, allowed.clone()));
        }
    }))
}

/// One connection: its `CONNECT` request decided, then its bytes passed both ways.
async fn relay(mut inside: UnixStream, allowed: Arc<AllowList>) {
    let Some(target) = read_connect(&mut inside).await else {
        let _refused = inside.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        return;
    };
    let Some((host, port)) = split(&target).filter(|(host, port)| allowed.allows(host, *port))
    else {
        let _refused = inside
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let Ok(mut outside) = TcpStream::connect((host.as_str(), port)).await else {
        let _refused = inside.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if inside
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .is_ok()
    {
        let _ended = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
    }
}

/// Reads a request head and returns the target of a `CONNECT`; `None` for anything else.
async fn read_connect(stream: &mut UnixStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    // Byte by byte: whatever follows the head belongs to the tunnel, not to the request.
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= HEAD_LIMIT || stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    let mut words = head.lines().next()?.split_whitespace();
    (words.next()? == "CONNECT").then_some(())?;
    words.next().map(str::to_owned)
}
