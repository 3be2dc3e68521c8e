//! The sheep's way out of a sandbox with `network: model`.
//!
//! It runs first inside the sandbox (`shepherd sandbox-enter --bridge`), where the network namespace has only loopback, and then
//! starts the sheep's program as its child. For each allowed endpoint on loopback (a local
//! model server) it listens on the same address inside, so the sheep's configured URL works
//! unchanged; for the rest it offers an HTTP proxy on loopback (`HTTPS_PROXY`, `HTTP_PROXY`).
//! Every connection goes to the allow-listing proxy outside over the unix socket bound in; the
//! bridge itself decides nothing.

// The bridge owns the sheep's process inside the sandbox: it starts and waits for it.
#![allow(clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use shepherd_client::CliError;
use shepherd_core::error_code::ErrorCode;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixStream};

use super::net_proxy::split;

/// Runs the bridge to the proxy at `socket` for the endpoints `allow`, and `program` under it.
pub(super) fn run(
    socket: &Path,
    allow: &[String],
    program: &[String],
) -> Result<ExitCode, CliError> {
    let fail = |what: &str, err: std::io::Error| {
        CliError::new(
            ErrorCode::SpawnFailed,
            format!("sandbox bridge: {what}: {err}"),
        )
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| fail("cannot start", err))?;
    runtime.block_on(async {
        // One listener per port: `localhost:P` and `127.0.0.1:P` are the same endpoint inside.
        let mut listened = std::collections::BTreeSet::new();
        for (host, port) in allow.iter().filter_map(|entry| split(entry)) {
            if is_loopback(&host) && listened.insert(port) {
                let listener = TcpListener::bind(("127.0.0.1", port))
                    .await
                    .map_err(|err| fail(&format!("cannot listen on 127.0.0.1:{port}"), err))?;
                tokio::spawn(forward_all(
                    listener,
                    socket.to_path_buf(),
                    Some(format!("{host}:{port}")),
                ));
            }
        }
        let proxy = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|err| fail("cannot listen for the proxy", err))?;
        let proxy_url = format!(
            "http://127.0.0.1:{}",
            proxy
                .local_addr()
                .map_err(|err| fail("no proxy address", err))?
                .port()
        );
        tokio::spawn(forward_all(proxy, socket.to_path_buf(), None));
        let (program, rest) = program.split_first().expect("clap requires a program");
        let mut command = tokio::process::Command::new(program);
        command.args(rest);
        for name in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
        ] {
            command.env(name, &proxy_url);
        }
        // Loopback endpoints are listened on here: their clients connect directly.
        let no_proxy = ["127.0.0.1", "localhost", "::1"].join(",");
        command
            .env("NO_PROXY", &no_proxy)
            .env("no_proxy", &no_proxy);
        let status = command
            .status()
            .await
            .map_err(|err| fail(&format!("could not run `{program}`"), err))?;
        let code = status.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
        });
        Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
    })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Passes every connection `listener` takes to the proxy: as a `CONNECT` to `target` when it
/// is a loopback endpoint's, else as it comes (its client speaks to a proxy itself).
async fn forward_all(listener: TcpListener, socket: PathBuf, target: Option<String>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(forward(stream, socket.clone(), target.clone()));
    }
}

async fn forward(mut inside: TcpStream, socket: PathBuf, target: Option<String>) {
    let Ok(outside) = UnixStream::connect(&socket).await else {
        return;
    };
    let mut outside = BufReader::new(outside);
    if let Some(target) = target {
        let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
        if outside
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .is_err()
        {
            return;
        }
        let mut status = String::new();
        if outside.read_line(&mut status).await.is_err() || !status.contains(" 200 ") {
            return;
        }
        // The rest of the answer's head, up to its empty line.
        loop {
            let mut line = String::new();
            match outside.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
        }
    }
    let _ended = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
}
