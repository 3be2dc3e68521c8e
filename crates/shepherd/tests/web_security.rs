//! `shepherd web` refuses what it must, over raw HTTP (a browser would never send most of
//! these): no token (401), a foreign Host (403, DNS rebinding), a change from a foreign Origin
//! or without the CSRF token (403), a path that climbs out of the project or a symlink that
//! leads out of it (404); each refusal changes nothing, and the same request done right works.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::web_support;

use herd_support::World;
use std::process::Stdio;

use web_support::{Web, http};

/// The CSRF token a page of `web` carries.
fn csrf(web: &Web) -> String {
    let cookie = web.cookie();
    let page = http(
        &web.host,
        "GET /notes",
        &[("Host", &web.host), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200, "{page:?}");
    let start = page.body.find(r#"name="csrf-token" content=""#).unwrap() + 27;
    page.body[start..].split('"').next().unwrap().to_owned()
}

/// The messages the sheep has had, as its status shows them.
fn messages(world: &World, agent: &str) -> usize {
    world.json(&["status", agent])["messages"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn requests_without_the_token_or_from_elsewhere_are_refused() {
    let world = World::new();
    let web = Web::start(&world);
    let host = web.host.as_str();
    let cookie = web.cookie();

    let first = http(
        host,
        &format!("GET /notes?token={}", web.token),
        &[("Host", host)],
        "",
    );
    assert_eq!(first.status, 303, "{first:?}");
    assert!(
        first.head.contains("Location: /notes\r") || first.head.contains("location: /notes\r"),
        "{first:?}"
    );
    assert!(first.head.to_lowercase().contains("httponly"), "{first:?}");

    for (what, line, headers) in [
        ("no token", "GET /", vec![("Host", host)]),
        ("a wrong token", "GET /?token=nope", vec![("Host", host)]),
        (
            "a wrong cookie",
            "GET /",
            vec![("Host", host), ("Cookie", "shepherd-web-1=x")],
        ),
    ] {
        let reply = http(host, line, &headers, "");
        assert_eq!(reply.status, 401, "{what}: {reply:?}");
    }
    let rebound = http(
        host,
        "GET /",
        &[("Host", "attacker.example"), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(rebound.status, 403, "a foreign Host: {rebound:?}");

    let ok = http(host, "GET /", &[("Host", host), ("Cookie", &cookie)], "");
    assert_eq!(ok.status, 200, "{ok:?}");
    let head = ok.head.to_lowercase();
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
}

#[test]
fn paths_outside_the_project_are_not_served() {
    let world = World::new();
    std::fs::write(world.dir.path().join("secret.txt"), "outside").unwrap();
    std::fs::write(world.project.join("inside.md"), "# Inside\n").unwrap();
    std::os::unix::fs::symlink(
        world.dir.path().join("secret.txt"),
        world.project.join("leak.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(world.dir.path(), world.project.join("up")).unwrap();
    let web = Web::start(&world);
    let host = web.host.as_str();
    let cookie = web.cookie();
    let get = |path: &str| {
        http(
            host,
            &format!("GET {path}"),
            &[("Host", host), ("Cookie", &cookie)],
            "",
        )
    };

    let inside = get("/files/inside.md");
    assert_eq!(inside.status, 200, "{inside:?}");
    assert!(inside.body.contains("<h1>Inside</h1>"), "{inside:?}");
    for path in [
        "/files/../secret.txt",
        "/files/..%2Fsecret.txt",
        "/files/%2E%2E/secret.txt",
        "/files/up/secret.txt",
        "/files/leak.txt",
        "/files//etc/passwd",
        "/files/%2Fetc%2Fpasswd",
    ] {
        let reply = get(path);
        assert_eq!(reply.status, 404, "{path}: {reply:?}");
        assert!(
            !reply.body.contains("outside") && !reply.body.contains("root:"),
            "{path}: {reply:?}"
        );
    }
}

#[test]
fn a_change_from_a_foreign_origin_or_without_the_csrf_token_changes_nothing() {
    let world = World::new();
    world.define_test_sheep("listener", "idle", None);
    let agent = world.spawn("listener", "");
    let web = Web::start(&world);
    let host = web.host.as_str();
    let cookie = web.cookie();
    let origin = format!("http://{host}");
    let token = csrf(&web);
    let body = format!("kind=message&agent={agent}&text=hello");

    for (what, headers) in [
        (
            "no Origin",
            vec![
                ("Host", host),
                ("Cookie", &cookie),
                ("X-CSRF-Token", &token),
            ],
        ),
        (
            "a foreign Origin",
            vec![
                ("Host", host),
                ("Cookie", &cookie),
                ("Origin", "http://attacker.example"),
                ("X-CSRF-Token", &token),
            ],
        ),
        (
            "no CSRF token",
            vec![("Host", host), ("Cookie", &cookie), ("Origin", &origin)],
        ),
        (
            "a wrong CSRF token",
            vec![
                ("Host", host),
                ("Cookie", &cookie),
                ("Origin", &origin),
                ("X-CSRF-Token", "nope"),
            ],
        ),
        (
            "no token",
            vec![
                ("Host", host),
                ("Origin", &origin),
                ("X-CSRF-Token", &token),
            ],
        ),
    ] {
        let reply = http(host, "POST /act", &headers, &body);
        assert!(matches!(reply.status, 401 | 403), "{what}: {reply:?}");
    }
    assert_eq!(
        messages(&world, &agent),
        0,
        "no refused request sent anything"
    );

    let done = http(
        host,
        "POST /act",
        &[
            ("Host", host),
            ("Cookie", &cookie),
            ("Origin", &origin),
            ("X-CSRF-Token", &token),
        ],
        &body,
    );
    assert_eq!(done.status, 200, "{done:?}");
    assert!(
        done.body.starts_with("message "),
        "it says what changed: {done:?}"
    );
    assert_eq!(
        messages(&world, &agent),
        1,
        "the same request done right sends it"
    );
}

#[test]
fn listening_beyond_loopback_warns_and_still_needs_the_token() {
    let world = World::new();
    let web = Web::start_with(&world, &["--listen", "0.0.0.0"], Stdio::piped());
    let host = web.host.as_str();
    assert!(
        host.starts_with("127.0.0.1:"),
        "the URL to open names loopback: {}",
        web.url
    );
    let refused = http(host, "GET /", &[("Host", host)], "");
    assert_eq!(refused.status, 401, "{refused:?}");
    let cookie = web.cookie();
    let ok = http(host, "GET /", &[("Host", host), ("Cookie", &cookie)], "");
    assert_eq!(ok.status, 200, "{ok:?}");
    let stderr = web.stop();
    assert!(
        stderr.starts_with("warning: listening on 0.0.0.0:") && stderr.contains("token"),
        "{stderr:?}"
    );
}

#[test]
fn a_bad_listen_address_names_the_value() {
    let world = World::new();
    let output = world.run(&["web", "--listen", "localhost:80"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("localhost:80"), "{stderr}");
}
