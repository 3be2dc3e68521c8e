//! `shepherd web`: one project's herd and its fieldnotes in a browser.
//!
//! It is a client of the broker like the terminal dashboard: it holds no herd state of its own
//! and follows the herd view the broker pushes (`herd.subscribe`), so it can be stopped and
//! started at any time. Every page is rendered on the server from that view or from the files
//! under the project (read-only); live pages receive their new HTML as server-sent events; the
//! only changes a browser can make are the six actions in `actions`, each one parent request.
//!
//! The parts: `access` keeps who is signed in across restarts, `once` makes each change happen
//! once however often it is sent, `feed` follows the herd, `board` works out the columns and
//! cards (pure), `notes` renders Markdown safely (pure), `files` maps a URL path to a file
//! inside the project that is safe to show and nowhere else, `guard` is the Host, session,
//! Origin and CSRF check every request passes, `html` escapes and encodes, `pages` lays out the
//! HTML, `actions` makes the requests (`landing` those of the merge queue, which it follows),
//! `branch` lays out a branch's page (pure), and `server` ties them to routes.

#![deny(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod access;
mod actions;
mod board;
mod branch;
mod feed;
mod files;
mod guard;
mod html;
mod landing;
mod notes;
mod once;
mod pages;
mod patch;
mod server;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use clap::Args;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::{HerdArgs, runtime, target};
use shepherd_core::error_code::ErrorCode;

/// Serve the herd and its fieldnotes to a browser.
#[derive(Debug, Args)]
pub struct WebArgs {
    /// The port to listen on (default: the one this herd's board used last, else a free one).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Listen on this loopback address instead of 127.0.0.1. The board speaks plain HTTP, so it
    /// refuses any other address: reach it from elsewhere through an SSH forward (docs/web.md).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<IpAddr>,
    /// Also answer to this host name, reached over HTTPS through a proxy on this machine that
    /// keeps the Host header, as a tailnet's `tailscale serve` does; the URL to open there is
    /// printed too (docs/web.md).
    #[arg(long, value_name = "HOST")]
    pub serve_name: Option<String>,
    /// Forget every browser signed in to this herd's board before serving: each must open the
    /// newly printed URL.
    #[arg(long)]
    pub revoke_sessions: bool,
    #[command(flatten)]
    pub herd: HerdArgs,
}

/// What the server tells the person who started it, once it listens.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Announcement {
    /// The URL to open, with the one-time token that signs one browser in.
    pub url: String,
    /// The same at the `--serve-name` (the token is good for one browser, at either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_url: Option<String>,
    /// The address it listens on (loopback).
    pub listen: SocketAddr,
}

/// Serves until interrupted; `announce` is called once the server listens, with the URL to open.
pub fn web(
    args: &WebArgs,
    ctx: &Context,
    announce: impl FnOnce(&Announcement),
) -> Result<ExitCode, CliError> {
    let ip = args.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if !ip.is_loopback() {
        return Err(CliError::new(
            ErrorCode::InvalidArgument,
            format!(
                "--listen {ip} is not a loopback address: the board speaks plain HTTP, so it listens on loopback only (127.0.0.1, ::1); reach it from another machine through an SSH forward (docs/web.md)"
            ),
        )
        .with_exit(2));
    }
    let serve_name = args
        .serve_name
        .as_deref()
        .map(guard::serve_name)
        .transpose()
        .map_err(|why| CliError::new(ErrorCode::InvalidArgument, why).with_exit(2))?;
    let target = target(ctx, &args.herd)?;
    let state = |err: std::io::Error| {
        CliError::new(
            ErrorCode::Internal,
            format!("the board's access file: {err}"),
        )
    };
    shepherd_client::paths::ensure_private_dir(&target.paths.state_dir).map_err(state)?;
    let access = std::sync::Arc::new(
        access::Access::open(
            &target
                .paths
                .state_dir
                .join(shepherd_core::board::ACCESS_FILE),
            args.revoke_sessions,
        )
        .map_err(state)?,
    );
    runtime()?.block_on(async {
        let listener = bind(ip, args.port, access.last_port()).await?;
        let listen = listener
            .local_addr()
            .map_err(|err| CliError::new(ErrorCode::Internal, err.to_string()))?;
        access.remember_port(listen.port()).map_err(state)?;
        let server = server::Server::new(target, listen, access, serve_name);
        announce(&Announcement {
            url: server.entry_url(),
            served_url: server.served_url(),
            listen,
        });
        server
            .serve(listener)
            .await
            .map_err(|err| CliError::new(ErrorCode::Internal, format!("web server: {err}")))
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Listens on `port` when given; else on the port served last, so an open page finds the
/// restarted server where it left it; else (or when that one is taken) on any free port.
async fn bind(
    ip: IpAddr,
    port: Option<u16>,
    last: Option<u16>,
) -> Result<tokio::net::TcpListener, CliError> {
    if port.is_none()
        && let Some(last) = last
        && let Ok(listener) = tokio::net::TcpListener::bind(SocketAddr::new(ip, last)).await
    {
        return Ok(listener);
    }
    let address = SocketAddr::new(ip, port.unwrap_or(0));
    tokio::net::TcpListener::bind(address).await.map_err(|err| {
        CliError::new(
            ErrorCode::InvalidArgument,
            format!("cannot listen on {address}: {err} (give a free --port, or leave it out for any free one)"),
        )
        .with_exit(2)
    })
}
