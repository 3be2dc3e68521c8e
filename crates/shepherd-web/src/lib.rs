//! `shepherd web`: one project's herd and its fieldnotes in a browser.
//!
//! It is a client of the broker like the terminal dashboard: it holds no herd state of its own
//! and follows the herd view the broker pushes (`herd.subscribe`), so it can be stopped and
//! started at any time. Every page is rendered on the server from that view or from the files
//! under the project (read-only); live pages receive their new HTML as server-sent events; the
//! only changes a browser can make are the four actions in `actions`, each one parent request.
//!
//! The parts: `feed` follows the herd, `board` works out the columns and cards (pure), `notes`
//! renders Markdown safely (pure), `files` maps a URL path to a file inside the project and
//! nowhere else, `guard` is the token, Host, Origin and CSRF check every request passes, `html` escapes and
//! encodes, `pages` lays out the HTML, `actions` makes the requests, and `server` ties them to routes.

#![deny(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod actions;
mod board;
mod feed;
mod files;
mod guard;
mod html;
mod notes;
mod pages;
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
    /// The port to listen on (default: a free one).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Listen on this address instead of 127.0.0.1 (the token is still required; anyone who can
    /// reach the address and learns the URL can act as this herd's parent).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<IpAddr>,
    #[command(flatten)]
    pub herd: HerdArgs,
}

/// What the server tells the person who started it, once it listens.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Announcement {
    /// The URL to open, with the token that lets the browser in.
    pub url: String,
    /// The address it listens on.
    pub listen: SocketAddr,
    /// Whether that address is reachable from beyond this machine (`--listen`).
    pub exposed: bool,
}

/// Serves until interrupted; `announce` is called once the server listens, with the URL to open.
pub fn web(
    args: &WebArgs,
    ctx: &Context,
    announce: impl FnOnce(&Announcement),
) -> Result<ExitCode, CliError> {
    let target = target(ctx, &args.herd)?;
    let ip = args.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let address = SocketAddr::new(ip, args.port.unwrap_or(0));
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(address).await.map_err(|err| {
            CliError::new(
                ErrorCode::InvalidArgument,
                format!("cannot listen on {address}: {err} (give a free --port, or leave it out for any free one)"),
            )
            .with_exit(2)
        })?;
        let listen = listener
            .local_addr()
            .map_err(|err| CliError::new(ErrorCode::Internal, err.to_string()))?;
        let server = server::Server::new(target, listen);
        announce(&Announcement {
            url: server.entry_url(),
            listen,
            exposed: !ip.is_loopback(),
        });
        server
            .serve(listener)
            .await
            .map_err(|err| CliError::new(ErrorCode::Internal, format!("web server: {err}")))
    })?;
    Ok(ExitCode::SUCCESS)
}
