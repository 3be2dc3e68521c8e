use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    keys: Keys,
    /// `herd-….localhost:4000`
    host: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let access = Arc::new(Access::open(&dir.path().join("web.json"), false).unwrap());
    let keys = Keys::new(access, Some("box.tail1234.ts.net".into()));
    let host = format!("{}:4000", keys.host_name);
    Fixture {
        _dir: dir,
        keys,
        host,
    }
}

impl Fixture {
    fn token(&self) -> String {
        self.keys.access.entry_token().unwrap()
    }

    /// Signs in with the entry token; the cookie header it gives.
    fn sign_in(&self) -> String {
        let query = format!("token={}", self.token());
        match self.judge(&Method::GET, "/", Some(&query), &[]) {
            Verdict::SignIn { session, .. } => format!("other=1; {COOKIE}={session}"),
            other => panic!("not signed in: {other:?}"),
        }
    }

    fn judge(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        extra: &[(&'static str, &str)],
    ) -> Verdict {
        let mut map = HeaderMap::new();
        map.append("host", HeaderValue::from_str(&self.host).unwrap());
        for (name, value) in extra {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        judge(&self.keys, method, path, query, &map)
    }
}

#[test]
fn the_token_in_the_url_is_traded_for_a_session_once_and_leaves_the_url() {
    let fx = fixture();
    let query = format!("x=1&token={}", fx.token());
    let Verdict::SignIn {
        session,
        location,
        secure: false,
    } = fx.judge(&Method::GET, "/files/a.md", Some(&query), &[])
    else {
        panic!("signed in");
    };
    assert_eq!(location, "/files/a.md?x=1");
    let cookie = format!("{COOKIE}={session}");
    assert_eq!(
        fx.judge(&Method::GET, "/", Some(&query), &[]),
        Verdict::Refuse(
            StatusCode::UNAUTHORIZED,
            "this link was used already or is from an earlier start of `shepherd web`: each start prints a new one, good for one browser"
        ),
        "a second browser with the same URL gets nothing"
    );
    assert_eq!(
        fx.judge(
            &Method::GET,
            "/files/a.md",
            Some(&query),
            &[("cookie", &cookie)]
        ),
        Verdict::Strip {
            location: "/files/a.md?x=1".into()
        },
        "the signed-in browser that opens it again is just sent on"
    );
    assert_eq!(
        fx.judge(&Method::GET, "/", None, &[("cookie", &cookie)]),
        Verdict::Pass
    );
}

#[test]
fn without_a_session_nothing_is_served() {
    let fx = fixture();
    let token = fx.token();
    for (query, cookie) in [
        (None, None),
        (Some("token=wrong".to_owned()), None),
        (None, Some(format!("{COOKIE}=wrong"))),
        (None, Some(format!("{COOKIE}={token}"))),
        (None, Some(format!("shepherd-web-4000={token}"))),
    ] {
        let extra: Vec<(&'static str, &str)> =
            cookie.iter().map(|c| ("cookie", c.as_str())).collect();
        let verdict = fx.judge(&Method::GET, "/", query.as_deref(), &extra);
        assert!(
            matches!(verdict, Verdict::Refuse(StatusCode::UNAUTHORIZED, _)),
            "{query:?} {cookie:?}: {verdict:?}"
        );
    }
    assert_eq!(
        fx.keys.access.entry_token(),
        Some(token),
        "nothing spent it"
    );
}

#[test]
fn only_the_boards_own_name_is_answered_at_any_port() {
    let mut fx = fixture();
    let cookie = fx.sign_in();
    let name = fx.keys.host_name.clone();
    for host in [name.clone(), format!("{name}:8765"), name.to_uppercase()] {
        fx.host = host.clone();
        assert_eq!(
            fx.judge(&Method::GET, "/", None, &[("cookie", &cookie)]),
            Verdict::Pass,
            "{host}"
        );
    }
    for host in [
        "127.0.0.1:4000",
        "localhost:4000",
        "[::1]:4000",
        "evil.example:4000",
        "herd-0000000000000000.localhost:4000",
        &format!("x.{name}:4000"),
        &format!("{name}:40x0"),
        "",
    ] {
        fx.host = host.to_owned();
        let verdict = fx.judge(&Method::GET, "/", None, &[("cookie", &cookie)]);
        assert!(
            matches!(verdict, Verdict::Refuse(StatusCode::FORBIDDEN, _)),
            "{host}: {verdict:?}"
        );
    }
}

#[test]
fn a_change_needs_this_origin_and_the_csrf_token() {
    let fx = fixture();
    let cookie = fx.sign_in();
    let origin = format!("http://{}", fx.host);
    let csrf = fx.keys.csrf.clone();
    let with = |extra: &[(&'static str, &str)]| {
        let mut pairs = vec![("cookie", cookie.as_str())];
        pairs.extend_from_slice(extra);
        fx.judge(&Method::POST, "/act", None, &pairs)
    };
    assert_eq!(
        with(&[("origin", &origin), (CSRF_HEADER, &csrf)]),
        Verdict::Pass
    );
    for extra in [
        vec![(CSRF_HEADER, csrf.as_str())],
        vec![("origin", "http://evil.example"), (CSRF_HEADER, &csrf)],
        vec![("origin", "http://127.0.0.1:4000"), (CSRF_HEADER, &csrf)],
        vec![("origin", &origin)],
        vec![("origin", &origin), (CSRF_HEADER, "csrf2")],
    ] {
        assert!(
            matches!(with(&extra), Verdict::Refuse(StatusCode::FORBIDDEN, _)),
            "{extra:?}"
        );
    }
}

#[test]
fn a_token_on_a_change_is_not_a_sign_in() {
    let fx = fixture();
    let query = format!("token={}", fx.token());
    let origin = format!("http://{}", fx.host);
    let csrf = fx.keys.csrf.clone();
    let verdict = fx.judge(
        &Method::POST,
        "/act",
        Some(&query),
        &[("origin", &origin), (CSRF_HEADER, &csrf)],
    );
    assert!(
        matches!(verdict, Verdict::Refuse(StatusCode::UNAUTHORIZED, _)),
        "{verdict:?}"
    );
}

#[test]
fn the_shell_is_public_by_the_boards_name_only() {
    let mut fx = fixture();
    for path in ["/manifest.webmanifest", "/assets/icon-192.png", "/sw.js"] {
        assert_eq!(
            fx.judge(&Method::GET, path, None, &[]),
            Verdict::Pass,
            "{path}"
        );
    }
    assert!(matches!(
        fx.judge(&Method::GET, "/assets/other.png", None, &[]),
        Verdict::Refuse(StatusCode::UNAUTHORIZED, _)
    ));
    fx.host = "127.0.0.1:4000".into();
    assert!(matches!(
        fx.judge(&Method::GET, "/manifest.webmanifest", None, &[]),
        Verdict::Refuse(StatusCode::FORBIDDEN, _)
    ));
}

#[test]
fn the_served_name_is_answered_over_https_only_with_its_own_origin_and_a_secure_cookie() {
    let mut fx = fixture();
    fx.host = "box.tail1234.ts.net".into();
    let query = format!("token={}", fx.token());
    let Verdict::SignIn {
        session,
        secure: true,
        ..
    } = fx.judge(&Method::GET, "/", Some(&query), &[])
    else {
        panic!("signed in at the served name, with a secure cookie");
    };
    let cookie = format!("{COOKIE}={session}");
    let csrf = fx.keys.csrf.clone();
    let post = |origin: &str| {
        fx.judge(
            &Method::POST,
            "/act",
            None,
            &[
                ("cookie", &cookie),
                ("origin", origin),
                (CSRF_HEADER, &csrf),
            ],
        )
    };
    assert_eq!(post("https://box.tail1234.ts.net"), Verdict::Pass);
    assert_eq!(
        post("http://box.tail1234.ts.net"),
        Verdict::Refuse(
            StatusCode::FORBIDDEN,
            "a change must come from this server's own page"
        ),
        "the served name is reached over HTTPS only"
    );
    fx.host = "other.tail1234.ts.net".into();
    assert_eq!(
        fx.judge(&Method::GET, "/", None, &[("cookie", &cookie)]),
        Verdict::Refuse(
            StatusCode::FORBIDDEN,
            "this server does not answer to that Host"
        ),
        "no other name is answered"
    );
}

#[test]
fn a_served_name_must_be_a_host_name_and_not_loopback() {
    assert_eq!(
        serve_name("Box.Tail1234.TS.net").as_deref(),
        Ok("box.tail1234.ts.net")
    );
    for bad in [
        "127.0.0.1",
        "localhost",
        "herd-x.localhost",
        "a..b",
        "-a.b",
        "a b.c",
        "box",
    ] {
        let err = serve_name(bad).unwrap_err();
        assert!(err.starts_with(&format!("--serve-name {bad} ")), "{err}");
    }
}
