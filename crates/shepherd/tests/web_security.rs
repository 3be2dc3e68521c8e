//! `shepherd web` refuses what it must, over raw HTTP (a browser would never send most of
//! these): no session (401), a spent or earlier token (401), a foreign Host or a loopback
//! address instead of the board's own name (403), a change from a foreign Origin or without the
//! CSRF token (403), a path that climbs out of the project, a symlink that leads out of it, a
//! file that holds secrets by convention or one with another hard link (404); each refusal
//! changes nothing, and the same request done right works. A change sent twice is done once.
//! The name a tailnet's HTTPS proxy serves the board at is answered as that proxy forwards it,
//! and asks for HTTPS all the way.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::web_support;

use herd_support::World;
use std::process::Stdio;

use web_support::{PAGE_LIMIT, Reply, Web, http, set_cookie, wait_for};

/// The CSRF token a page of `web` carries.
fn csrf(web: &Web) -> String {
    let page = web.get("/notes");
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
fn requests_without_a_session_or_from_elsewhere_are_refused() {
    let world = World::new();
    let web = Web::start(&world);
    let (addr, host) = (web.addr.as_str(), web.host.as_str());
    assert!(
        host.starts_with("herd-") && host.contains(".localhost:"),
        "the URL names the board's own host: {}",
        web.url
    );

    for (what, line, headers) in [
        ("no token", "GET /", vec![("Host", host)]),
        ("a wrong token", "GET /?token=nope", vec![("Host", host)]),
        (
            "a wrong cookie",
            "GET /",
            vec![("Host", host), ("Cookie", "shepherd-board=x")],
        ),
        (
            "the token as a cookie",
            "GET /",
            vec![
                ("Host", host),
                ("Cookie", &format!("shepherd-board={}", web.token)),
            ],
        ),
    ] {
        let reply = http(addr, line, &headers, "");
        assert_eq!(reply.status, 401, "{what}: {reply:?}");
    }

    let first = http(
        addr,
        &format!("GET /notes?token={}", web.token),
        &[("Host", host)],
        "",
    );
    assert_eq!(first.status, 303, "{first:?}");
    let head = first.head.to_lowercase();
    assert!(head.contains("location: /notes\r"), "{first:?}");
    assert!(
        head.contains("httponly") && head.contains("samesite=strict") && !head.contains("domain="),
        "a host-only, HttpOnly, SameSite=Strict cookie: {first:?}"
    );
    let cookie = set_cookie(&first).unwrap();
    assert!(!cookie.contains(&web.token), "the session is not the token");

    let rebound = http(
        addr,
        "GET /",
        &[("Host", "attacker.example"), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(rebound.status, 403, "a foreign Host: {rebound:?}");
    for loopback in [addr.to_owned(), addr.replace("127.0.0.1", "localhost")] {
        let reply = http(
            addr,
            "GET /",
            &[("Host", &loopback), ("Cookie", &cookie)],
            "",
        );
        assert_eq!(reply.status, 403, "{loopback}: {reply:?}");
        assert!(
            reply.body.contains("printed"),
            "it says what to open: {reply:?}"
        );
    }

    let ok = http(addr, "GET /", &[("Host", host), ("Cookie", &cookie)], "");
    assert_eq!(ok.status, 200, "{ok:?}");
    let head = ok.head.to_lowercase();
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
}

#[test]
fn the_printed_token_signs_in_one_browser_and_a_restart_keeps_the_session() {
    let world = World::new();
    let web = Web::start(&world);
    let (addr, host) = (web.addr.clone(), web.host.clone());
    let cookie = web.cookie();
    let entry = format!("GET /?token={}", web.token);
    let again = http(&addr, &entry, &[("Host", &host)], "");
    assert_eq!(
        again.status, 401,
        "a copy of the URL opens nothing: {again:?}"
    );
    assert!(again.body.contains("used already"), "{again:?}");
    let signed = http(&addr, &entry, &[("Host", &host), ("Cookie", &cookie)], "");
    assert_eq!(
        signed.status, 303,
        "the signed-in browser is sent on: {signed:?}"
    );
    assert_eq!(set_cookie(&signed), None, "without a new session");
    let old_token = web.token.clone();
    drop(web);

    let restarted = Web::start(&world);
    assert_eq!(restarted.host, host, "the same name and port as before");
    assert_ne!(restarted.token, old_token, "a new token");
    let page = http(&addr, "GET /", &[("Host", &host), ("Cookie", &cookie)], "");
    assert_eq!(
        page.status, 200,
        "the session outlives the restart: {page:?}"
    );
    let old = http(
        &addr,
        &format!("GET /?token={old_token}"),
        &[("Host", &host)],
        "",
    );
    assert_eq!(
        old.status, 401,
        "an earlier start's token opens nothing: {old:?}"
    );
    drop(restarted);

    let revoked = Web::start_with(&world, &["--revoke-sessions"], Stdio::inherit());
    let page = http(&addr, "GET /", &[("Host", &host), ("Cookie", &cookie)], "");
    assert_eq!(page.status, 401, "revoked: {page:?}");
    assert_eq!(revoked.get("/").status, 200, "its new URL signs in");
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
    let get = |path: &str| web.get(path);

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
    let (addr, host) = (web.addr.as_str(), web.host.as_str());
    let cookie = web.cookie();
    let origin = format!("http://{host}");
    let token = csrf(&web);
    let body = format!("kind=message&agent={agent}&text=hello&once=m1");

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
            "no session",
            vec![
                ("Host", host),
                ("Origin", &origin),
                ("X-CSRF-Token", &token),
            ],
        ),
    ] {
        let reply = http(addr, "POST /act", &headers, &body);
        assert!(matches!(reply.status, 401 | 403), "{what}: {reply:?}");
    }
    assert_eq!(
        messages(&world, &agent),
        0,
        "no refused request sent anything"
    );

    let done = act(&web, &body);
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

/// Sends `body` to `POST /act` as the board's own page would.
fn act(web: &Web, body: &str) -> Reply {
    let cookie = web.cookie();
    let origin = format!("http://{}", web.host);
    let token = csrf(web);
    http(
        &web.addr,
        "POST /act",
        &[
            ("Host", &web.host),
            ("Cookie", &cookie),
            ("Origin", &origin),
            ("X-CSRF-Token", &token),
        ],
        body,
    )
}

#[test]
fn a_message_sent_twice_is_sent_once_and_one_without_its_once_is_refused() {
    let world = World::new();
    world.define_test_sheep("listener", "idle", None);
    let agent = world.spawn("listener", "");
    let web = Web::start(&world);
    let bare = act(&web, &format!("kind=message&agent={agent}&text=hello"));
    assert_eq!(bare.status, 400, "{bare:?}");
    assert!(bare.body.contains("once"), "{bare:?}");
    let body = format!("kind=message&agent={agent}&text=hello&once=abc123");
    let first = act(&web, &body);
    let second = act(&web, &body);
    assert_eq!(
        (first.status, second.status),
        (200, 200),
        "{first:?} {second:?}"
    );
    assert!(first.body.starts_with("message "), "{first:?}");
    assert_eq!(
        second.body,
        format!("already done: {}", first.body),
        "{second:?}"
    );
    assert_eq!(messages(&world, &agent), 1, "sent once");
    let other = act(
        &web,
        &format!("kind=message&agent={agent}&text=hello&once=def456"),
    );
    assert_eq!(other.status, 200, "{other:?}");
    assert_eq!(
        messages(&world, &agent),
        2,
        "a new send of the form is a new message"
    );
}

#[test]
fn a_second_reply_to_a_question_says_it_was_already_answered() {
    let world = World::new();
    world.define_test_sheep(
        "asker",
        "ask shepherd Which file should I edit?; idle",
        None,
    );
    let agent = world.spawn("asker", "");
    let web = Web::start(&world);
    world.delegate(&agent, "edit something");
    let mut request = String::new();
    wait_for("the question on the board", PAGE_LIMIT, || {
        let board = web.get("/").body;
        let Some(at) = board.find(r#"name="reply_to" value=""#) else {
            return false;
        };
        request = board[at + 23..].split('"').next().unwrap().to_owned();
        true
    });
    let reply = |text: &str, once: &str| {
        act(
            &web,
            &format!("kind=reply&agent={agent}&reply_to={request}&text={text}&once={once}"),
        )
    };
    let first = reply("main.rs", "r1");
    assert_eq!(first.status, 200, "{first:?}");
    assert!(first.body.starts_with("answered"), "{first:?}");
    for (text, once) in [("main.rs", "r1"), ("lib.rs", "r2")] {
        let again = reply(text, once);
        assert_eq!(again.status, 200, "{again:?}");
        assert!(
            again.body.contains("already answered"),
            "{text}/{once}: {again:?}"
        );
    }
    assert_eq!(messages(&world, &agent), 1, "the sheep got one answer");
}

#[test]
fn secrets_hard_links_and_a_pnpm_store_are_not_served() {
    let world = World::new();
    let project = &world.project;
    for (path, text) in [
        (".env", "API_KEY=sk-live"),
        (".env.production", "API_KEY=sk-live"),
        (".git/config", "[credential]\n\thelper = store"),
        ("deploy/server.pem", "-----BEGIN PRIVATE KEY-----"),
        ("README.md", "# Readme\n"),
    ] {
        let file = project.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    // As pnpm lays a package out: its files hard-linked from the store outside the project,
    // the package's folder a symlink into node_modules/.pnpm.
    let store = world.dir.path().join("pnpm-store/left-pad");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("README.md"), "# left-pad\n").unwrap();
    std::fs::write(store.join("index.js"), "module.exports = 1;\n").unwrap();
    let package = project.join("node_modules/.pnpm/left-pad@1.3.0/node_modules/left-pad");
    std::fs::create_dir_all(&package).unwrap();
    for name in ["README.md", "index.js"] {
        std::fs::hard_link(store.join(name), package.join(name)).unwrap();
    }
    std::fs::write(package.join("NOTES.md"), "# Written here\n").unwrap();
    std::os::unix::fs::symlink(
        ".pnpm/left-pad@1.3.0/node_modules/left-pad",
        project.join("node_modules/left-pad"),
    )
    .unwrap();
    // A sheep's trick: a secret from outside the project linked in under an innocent name.
    let key = world.dir.path().join("id_rsa");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
    std::fs::hard_link(&key, project.join("notes.txt")).unwrap();
    let web = Web::start(&world);

    for path in [
        "/files/.env",
        "/files/.env.production",
        "/files/.git/config",
        "/files/deploy/server.pem",
        "/files/notes.txt",
        "/files/node_modules/left-pad/README.md",
        "/files/node_modules/left-pad/index.js",
    ] {
        let reply = web.get(path);
        assert_eq!(reply.status, 404, "{path}: {reply:?}");
        assert!(
            !reply.body.contains("sk-live")
                && !reply.body.contains("PRIVATE KEY")
                && !reply.body.contains("credential"),
            "{path}: {reply:?}"
        );
    }
    for (path, shows) in [
        ("/files/README.md", "<h1>Readme</h1>"),
        (
            "/files/node_modules/left-pad/NOTES.md",
            "<h1>Written here</h1>",
        ),
    ] {
        let reply = web.get(path);
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
        assert!(reply.body.contains(shows), "{path}: {reply:?}");
    }
}

#[test]
fn an_svg_is_served_as_an_image_that_runs_nothing() {
    let world = World::new();
    std::fs::write(
        world.project.join("chart.svg"),
        r#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#,
    )
    .unwrap();
    let web = Web::start(&world);
    let reply = web.get("/files/chart.svg");
    assert_eq!(reply.status, 200, "{reply:?}");
    let head = reply.head.to_lowercase();
    assert!(head.contains("content-type: image/svg+xml"), "{head}");
    assert!(
        head.contains(
            "content-security-policy: default-src 'none'; style-src 'unsafe-inline'; sandbox"
        ),
        "{head}"
    );
}

#[test]
fn listening_beyond_loopback_is_refused() {
    let world = World::new();
    let output = world.run(&["web", "--listen", "0.0.0.0"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("0.0.0.0") && stderr.contains("loopback") && stderr.contains("SSH"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no URL printed");
}

#[test]
fn a_bad_listen_address_names_the_value() {
    let world = World::new();
    let output = world.run(&["web", "--listen", "localhost:80"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("localhost:80"), "{stderr}");
}

#[test]
fn a_served_name_is_answered_as_its_https_proxy_forwards_it_and_asks_for_https() {
    let world = World::new();
    world.define_test_sheep("listener", "idle", None);
    let agent = world.spawn("listener", "");
    let name = "box.tail1234.ts.net";
    let web = Web::start_with(&world, &["--serve-name", name], Stdio::inherit());
    let served = web.served_url.clone().expect("a second URL");
    assert_eq!(served, format!("https://{name}/?token={}", web.token));
    // As `tailscale serve` forwards the phone's request: to loopback, its Host kept.
    let signed = http(
        &web.addr,
        &format!("GET /?token={}", web.token),
        &[("Host", name)],
        "",
    );
    assert_eq!(signed.status, 303, "{signed:?}");
    assert!(
        signed
            .head
            .lines()
            .any(|l| l.to_ascii_lowercase().starts_with("set-cookie:") && l.contains("; Secure")),
        "the session cookie at the served name is for HTTPS only: {signed:?}"
    );
    let cookie = set_cookie(&signed).unwrap();
    let page = http(
        &web.addr,
        "GET /notes",
        &[("Host", name), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200, "{page:?}");
    let start = page.body.find(r#"name="csrf-token" content=""#).unwrap() + 27;
    let token = page.body[start..].split('"').next().unwrap().to_owned();
    let send = |origin: &str, once: &str| {
        http(
            &web.addr,
            "POST /act",
            &[
                ("Host", name),
                ("Cookie", &cookie),
                ("Origin", origin),
                ("X-CSRF-Token", &token),
            ],
            &format!("kind=message&agent={agent}&text=hi&once={once}"),
        )
    };
    let plain = send(&format!("http://{name}"), "a1");
    assert_eq!(plain.status, 403, "{plain:?}");
    assert_eq!(
        messages(&world, &agent),
        0,
        "a plain-HTTP origin changes nothing"
    );
    let sent = send(&format!("https://{name}"), "a2");
    assert_eq!(sent.status, 200, "{sent:?}");
    assert_eq!(messages(&world, &agent), 1);
    let other = http(
        &web.addr,
        "GET /notes",
        &[("Host", "other.tail1234.ts.net"), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(other.status, 403, "no other name is answered: {other:?}");
}

#[test]
fn a_served_name_that_is_no_host_name_is_refused_naming_it() {
    let world = World::new();
    let out = world
        .command(&["web", "--serve-name", "127.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--serve-name 127.0.0.1 is not a host name"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
