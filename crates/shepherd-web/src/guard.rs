//! What every request passes before a handler sees it, and the headers every response carries.
//!
//! In order: the Host header must name this server as the browser reached it (a page on some
//! other site that rebinds its own name to 127.0.0.1 sends its own name, and is refused: 403);
//! the token must come along, either in the URL (the first visit: it is put in a cookie and the
//! browser is sent to the same path without it, so it leaves the address bar and the history)
//! or in that cookie (401 without it); and a request that changes something must come from a
//! page of this server (its Origin, 403 otherwise) and carry the CSRF token the page was given
//! (403 otherwise). The check itself is a pure function of the request's parts, tested here.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The header a page sends its CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The policy every response carries: nothing but this server's own script, styles, images and
/// event streams; no inline script, no plugins, no framing, no form sent elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The secrets and names a request is checked against.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// The token in the printed URL, then in the cookie.
    pub(crate) token: String,
    /// The token pages put in the header of what they send.
    pub(crate) csrf: String,
    /// The cookie's name (with the port: cookies are per host, not per port).
    pub(crate) cookie: String,
    /// The Host values this server answers to (`127.0.0.1:PORT`, `localhost:PORT`, …).
    pub(crate) hosts: Vec<String>,
}

/// What becomes of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Let it through.
    Pass,
    /// The token came in the URL: set the cookie and send the browser to `location`.
    SetCookie { location: String },
    /// Refuse it, saying why.
    Refuse(StatusCode, &'static str),
}

/// Compares two secrets in time that does not depend on where they differ.
fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0_u8, |acc, (a, b)| acc | (a ^ b))
            == 0
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

/// Judges one request.
pub(crate) fn judge(
    keys: &Keys,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Verdict {
    let host = header(headers, header::HOST).unwrap_or_default();
    if !keys.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Verdict::Refuse(
            StatusCode::FORBIDDEN,
            "this server does not answer to that Host",
        );
    }
    if let (Some(token), rest) = take_token(query.unwrap_or_default()) {
        if !same_secret(token, &keys.token) {
            return Verdict::Refuse(StatusCode::UNAUTHORIZED, "wrong token");
        }
        if method == Method::GET {
            let location = if rest.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{rest}")
            };
            return Verdict::SetCookie { location };
        }
    } else if !cookie(headers, &keys.cookie).is_some_and(|c| same_secret(c, &keys.token)) {
        return Verdict::Refuse(
            StatusCode::UNAUTHORIZED,
            "open the URL `shepherd web` printed (it carries the token)",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let origin = header(headers, header::ORIGIN);
        if origin != Some(&format!("http://{host}")) {
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

/// Puts the protective headers on a response.
fn protect(response: &mut Response) {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// The middleware: judges the request, then protects whatever answers it.
pub(crate) async fn guard(
    State(keys): State<std::sync::Arc<Keys>>,
    request: Request,
    next: Next,
) -> Response {
    let verdict = judge(
        &keys,
        request.method(),
        request.uri().path(),
        request.uri().query(),
        request.headers(),
    );
    let mut response = match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::SetCookie { location } => {
            let cookie = format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                keys.cookie, keys.token
            );
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::SEE_OTHER;
            if let (Ok(cookie), Ok(location)) = (
                HeaderValue::from_str(&cookie),
                HeaderValue::from_str(&location),
            ) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
        }
        Verdict::Refuse(status, why) => (status, format!("{why}\n")).into_response(),
    };
    protect(&mut response);
    response
}

#[cfg(test)]
#[path = "guard/tests.rs"]
mod tests;
