//! What every request passes before a handler sees it, and the headers every response carries.
//!
//! In order: the Host header must be the board's own name, `herd-<label>.localhost` with any
//! port (a page elsewhere that rebinds its own name to 127.0.0.1 sends its own name, and the
//! loopback addresses themselves are refused too, so a cookie is never set for them: 403), or
//! the name given with `--serve-name`, which an HTTPS proxy on this machine (a tailnet's
//! `tailscale serve`) forwards with its Host header kept;
//! the browser must be signed in, either by the token in the URL (the first visit: it is traded
//! for a session in a cookie and the browser is sent to the same path without it, so it leaves
//! the address bar, and the token is spent, so a copy in the history opens nothing) or by that
//! cookie (401 without it); and a request that changes something must come from a page of this
//! server (its Origin, 403 otherwise) and carry the CSRF token the page was given (403
//! otherwise). [`judge`] decides from the request's parts and the herd's [`Access`].

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::access::{Access, SESSION_LIFE, Trade, same_secret};

/// The header a page sends its CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The cookie a signed-in browser carries (on the board's own host name only).
pub(crate) const COOKIE: &str = "shepherd-board";

/// The policy every response carries: nothing but this server's own script, styles, images and
/// event streams; no inline script, no plugins, no framing, no form sent elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The files the binary carries that hold nothing of the herd's: the browser may fetch them
/// without a session (an app's icons and manifest are fetched without cookies when it is
/// installed), though only by the board's own name.
const PUBLIC: &[&str] = &[
    "/assets/style.css",
    "/assets/app.js",
    "/assets/icon-192.png",
    "/assets/icon-512.png",
    "/manifest.webmanifest",
    "/sw.js",
];

/// What a request is checked against.
#[derive(Debug)]
pub(crate) struct Keys {
    /// Who is signed in, and this start's token.
    pub(crate) access: Arc<Access>,
    /// The board's host name, without a port.
    pub(crate) host_name: String,
    /// The name an HTTPS proxy serves the board at too (`--serve-name`), if any.
    pub(crate) serve_name: Option<String>,
    /// The token pages put in the header of what they send.
    pub(crate) csrf: String,
}

impl Keys {
    pub(crate) fn new(access: Arc<Access>, serve_name: Option<String>) -> Self {
        Self {
            host_name: access.host_name(),
            serve_name,
            csrf: access.csrf(),
            access,
        }
    }
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Let it through.
    Pass,
    /// The URL's token was traded: set the session's cookie (`secure`: only over HTTPS) and
    /// send the browser to `location`.
    SignIn {
        session: String,
        location: String,
        secure: bool,
    },
    /// A signed-in browser came with a spent token: send it to `location`, without the token.
    Strip { location: String },
    /// Refuse it, saying why.
    Refuse(StatusCode, &'static str),
}

fn header(headers: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

/// The `token` in a query string, and the query without it.
fn take_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("token=") {
            Some(value) => token = Some(value),
            None => rest.push(pair),
        }
    }
    (token, rest.join("&"))
}

/// Whether `host` (a Host header) is `name`, with or without a port: any port, so an SSH
/// forward from another port reaches it too. No DNS name ends in `.localhost`, so a rebinding
/// page cannot send it.
fn is_our_host(host: &str, name: &str) -> bool {
    let bare = match host.rsplit_once(':') {
        Some((bare, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => bare,
        _ => host,
    };
    bare.eq_ignore_ascii_case(name)
}

/// `name` as `--serve-name` takes it: a DNS name (letters, digits, `-` and `.`, with a dot),
/// not an address and not a `.localhost` name, lowercased; or why not.
pub(crate) fn serve_name(name: &str) -> Result<String, String> {
    let lower = name.trim().to_ascii_lowercase();
    let labels_ok = lower.split('.').all(|label| {
        !label.is_empty()
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    let address = lower.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !labels_ok || !lower.contains('.') || address || lower.ends_with(".localhost") {
        return Err(format!(
            "--serve-name {name} is not a host name to serve the board at: give the name an HTTPS proxy serves it at, such as machine.tailnet-name.ts.net"
        ));
    }
    Ok(lower)
}

/// Whether `host` is a loopback address or `localhost`, which the board does not answer to.
fn is_loopback_name(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
}

/// Judges one request.
pub(crate) fn judge(
    keys: &Keys,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Verdict {
    let host = header(headers, header::HOST).unwrap_or_default();
    // The scheme the browser reached this name by: the board's own name is plain HTTP on
    // loopback; the served name comes through the proxy's HTTPS.
    let scheme = if is_our_host(host, &keys.host_name) {
        "http"
    } else if keys
        .serve_name
        .as_deref()
        .is_some_and(|name| is_our_host(host, name))
    {
        "https"
    } else {
        return Verdict::Refuse(
            StatusCode::FORBIDDEN,
            if is_loopback_name(host) {
                "open the URL `shepherd web` printed: the board answers only at its own name (herd-….localhost), so its cookie reaches no other local server"
            } else {
                "this server does not answer to that Host"
            },
        );
    };
    if (method == Method::GET || method == Method::HEAD) && PUBLIC.contains(&path) {
        return Verdict::Pass;
    }
    let signed_in = || cookie(headers, COOKIE).is_some_and(|c| keys.access.signed_in(c));
    if let (Some(token), rest) = take_token(query.unwrap_or_default())
        && (method == Method::GET || method == Method::HEAD)
    {
        let location = if rest.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{rest}")
        };
        return match keys.access.trade(token) {
            Ok(Trade::Session(session)) => Verdict::SignIn {
                session,
                location,
                secure: scheme == "https",
            },
            Ok(Trade::Refused) if signed_in() => Verdict::Strip { location },
            Ok(Trade::Refused) => Verdict::Refuse(
                StatusCode::UNAUTHORIZED,
                "this link was used already or is from an earlier start of `shepherd web`: each start prints a new one, good for one browser",
            ),
            Err(_) => Verdict::Refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the board could not record the sign-in in the herd's state directory",
            ),
        };
    }
    if !signed_in() {
        return Verdict::Refuse(
            StatusCode::UNAUTHORIZED,
            "open the URL `shepherd web` printed (it carries a one-time token)",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let origin = header(headers, header::ORIGIN);
        if origin != Some(&format!("{scheme}://{host}")) {
            return Verdict::Refuse(
                StatusCode::FORBIDDEN,
                "a change must come from this server's own page",
            );
        }
        if !header(headers, CSRF_HEADER).is_some_and(|c| same_secret(c, &keys.csrf)) {
            return Verdict::Refuse(StatusCode::FORBIDDEN, "missing or wrong CSRF token");
        }
    }
    Verdict::Pass
}

fn see_other(location: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// Puts the protective headers on a response.
fn protect(response: &mut Response) {
    let headers = response.headers_mut();
    // A handler may have set a stricter policy of its own (an SVG's); every other gets this one.
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
    }
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// The middleware: judges the request, then protects whatever answers it.
pub(crate) async fn guard(State(keys): State<Arc<Keys>>, request: Request, next: Next) -> Response {
    let verdict = judge(
        &keys,
        request.method(),
        request.uri().path(),
        request.uri().query(),
        request.headers(),
    );
    let mut response = match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::SignIn {
            session,
            location,
            secure,
        } => {
            let mut response = see_other(&location);
            let cookie = format!(
                "{COOKIE}={session}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{}",
                SESSION_LIFE.as_secs(),
                if secure { "; Secure" } else { "" }
            );
            if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Verdict::Strip { location } => see_other(&location),
        Verdict::Refuse(status, why) => (status, format!("{why}\n")).into_response(),
    };
    protect(&mut response);
    response
}

#[cfg(test)]
#[path = "guard/tests.rs"]
mod tests;
