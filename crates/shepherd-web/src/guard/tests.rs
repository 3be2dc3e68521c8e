use super::*;

fn keys() -> Keys {
    Keys {
        token: "t0k3n".into(),
        csrf: "csrf1".into(),
        cookie: "shepherd-web-4000".into(),
        hosts: vec!["127.0.0.1:4000".into(), "localhost:4000".into()],
    }
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

const SIGNED_IN: (&str, &str) = ("cookie", "other=1; shepherd-web-4000=t0k3n");

#[test]
fn the_token_in_the_url_becomes_a_cookie_and_leaves_the_url() {
    let verdict = judge(
        &keys(),
        &Method::GET,
        "/files/a.md",
        Some("x=1&token=t0k3n"),
        &headers(&[("host", "127.0.0.1:4000")]),
    );
    assert_eq!(
        verdict,
        Verdict::SetCookie {
            location: "/files/a.md?x=1".into()
        }
    );
}

#[test]
fn without_the_token_or_with_a_wrong_one_nothing_is_served() {
    let host = ("host", "127.0.0.1:4000");
    for (query, pairs) in [
        (None, vec![host]),
        (Some("token=wrong"), vec![host]),
        (None, vec![host, ("cookie", "shepherd-web-4000=wrong")]),
        (None, vec![host, ("cookie", "shepherd-web-4001=t0k3n")]),
    ] {
        let verdict = judge(&keys(), &Method::GET, "/", query, &headers(&pairs));
        assert!(
            matches!(verdict, Verdict::Refuse(StatusCode::UNAUTHORIZED, _)),
            "{query:?} {pairs:?}: {verdict:?}"
        );
    }
    assert_eq!(
        judge(
            &keys(),
            &Method::GET,
            "/",
            None,
            &headers(&[host, SIGNED_IN])
        ),
        Verdict::Pass
    );
}

#[test]
fn a_foreign_host_is_refused_even_with_the_token() {
    for host in ["evil.example:4000", "127.0.0.1:4001", ""] {
        let verdict = judge(
            &keys(),
            &Method::GET,
            "/",
            Some("token=t0k3n"),
            &headers(&[("host", host), SIGNED_IN]),
        );
        assert!(
            matches!(verdict, Verdict::Refuse(StatusCode::FORBIDDEN, _)),
            "{host}"
        );
    }
}

#[test]
fn a_change_needs_this_origin_and_the_csrf_token() {
    let base = [("host", "localhost:4000"), SIGNED_IN];
    let with = |extra: &[(&'static str, &str)]| {
        let mut pairs = base.to_vec();
        pairs.extend_from_slice(extra);
        judge(&keys(), &Method::POST, "/act", None, &headers(&pairs))
    };
    assert_eq!(
        with(&[("origin", "http://localhost:4000"), (CSRF_HEADER, "csrf1")]),
        Verdict::Pass
    );
    for extra in [
        vec![(CSRF_HEADER, "csrf1")],
        vec![("origin", "http://evil.example"), (CSRF_HEADER, "csrf1")],
        vec![("origin", "http://127.0.0.1:4000"), (CSRF_HEADER, "csrf1")],
        vec![("origin", "http://localhost:4000")],
        vec![("origin", "http://localhost:4000"), (CSRF_HEADER, "csrf2")],
    ] {
        assert!(
            matches!(with(&extra), Verdict::Refuse(StatusCode::FORBIDDEN, _)),
            "{extra:?}"
        );
    }
}
