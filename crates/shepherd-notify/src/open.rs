//! Opening a board page in the person's browser, the one process this crate starts: a
//! notification's action runs `xdg-open`, which hands the link to whatever the desktop opens
//! web pages with.

// `xdg-open` is the desktop's own opener; this module is the only place that starts it.
#![allow(clippy::disallowed_types)]

/// Opens `link` with `xdg-open`, logging a failure to start it.
pub(crate) async fn in_browser(link: &str) {
    let opened = tokio::process::Command::new("xdg-open")
        .arg(link)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await;
    if let Err(err) = opened {
        tracing::warn!(%err, link, "xdg-open could not open the board");
    }
}
