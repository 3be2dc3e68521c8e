//! `shepherd web` in a real headless Chromium: a sheep spawned from the command line appears on
//! the board, its question under *needs you*, a reply typed in the page settles its wait, and
//! its note opens from the session's page through working links, all while the board page is
//! never reloaded; a note carrying a script runs nothing; a note being written updates on its
//! page; the layout fits 390 px; the board's cookie goes to no other local server; an open page
//! comes back live after `shepherd web` and the broker restart.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::web_support;

use fantoccini::Locator;
use herd_support::World;
use web_support::{Browser, Web};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes the page's screenshot to `$SHEPHERD_WEB_SCREENSHOTS/name` when that is set (how the
/// pictures in the docs are made).
pub(crate) async fn screenshot(browser: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("SHEPHERD_WEB_SCREENSHOTS") {
        let png = browser.client.screenshot().await.unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
    }
}

/// Whether the page, laid out 390 px wide, is wider than that (it must not be: nothing to
/// scroll sideways).
pub(crate) async fn overflows(browser: &Browser) -> bool {
    let widths = browser
        .client
        .execute(
            "return [window.innerWidth, document.documentElement.scrollWidth]",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(widths[0], 390, "the page is laid out at a phone's width");
    widths[1].as_u64().unwrap() > 390
}

#[test]
fn a_sheep_asks_on_the_board_is_answered_from_the_page_and_its_note_opens() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    world.define_test_sheep(
        "asker",
        "ask shepherd Which file should I edit?; done completed edited {reply}",
        None,
    );
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        let landed = client.current_url().await.unwrap();
        assert_eq!(landed.as_str(), web.at("/"), "the token leaves the address bar");
        // Anything below happens on this same page: a reload would drop this mark.
        client
            .execute("window.shepherdMark = 'same page'; return true", vec![])
            .await
            .unwrap();
        // Each notification the page shows is counted on its way to Chromium's own.
        let permission = client
            .execute(
                "const Real = window.Notification;
                 window.shepherdShown = [];
                 window.Notification = function (title, options) {
                   window.shepherdShown.push([title, options.body]);
                   return new Real(title, options);
                 };
                 Object.defineProperty(window.Notification, 'permission', { get: () => Real.permission });
                 return Real.permission",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(permission, "granted", "the browser lets the page notify");

        let agent = world.spawn("asker", "");
        let card = format!(r#"article[data-agent="{agent}"]"#);
        browser.appears(Locator::Css(&card), "the spawned sheep appears on the board").await;

        let task = world.delegate(&agent, "edit something")["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let question = browser.appears(Locator::Css(&format!("#needs-you {card} .question")), "the question shows under needs you").await;
        assert_eq!(question.text().await.unwrap(), "Which file should I edit?");
        let title = client.execute("return document.title", vec![]).await.unwrap();
        assert_eq!(title, "(1) Board · shepherd", "the tab counts the sheep that need you");
        assert!(!overflows(&browser).await, "the board fits 390 px");
        screenshot(&browser, "web-board.png").await;

        let reply_box = format!("#needs-you {card} input[name=text]");
        let input = browser.appears(Locator::Css(&reply_box), "the reply box").await;
        input.send_keys("main.rs").await.unwrap();
        let send = format!("#needs-you {card} form button");
        browser.click(Locator::Css(&send), "the reply's button").await;
        browser.said("answered").await;
        browser.appears(Locator::Css(&format!("#settled {card}")), "the card moves to settled when the task settles").await;
        let outcome = browser
            .appears(Locator::Css(&format!("#settled {card} .outcome")), "the settled card says how its task ended")
            .await;
        let outcome = outcome.text().await.unwrap();
        assert!(outcome.contains("completed") && outcome.contains("edited main.rs"), "{outcome}");
        let watched = world.json(&["watch", &task, "--wait", "30"]);
        assert_eq!(
            watched["settled"][0]["summary"], "edited main.rs",
            "the reply typed in the page reached the sheep"
        );
        let mark = client
            .execute("return window.shepherdMark || null", vec![])
            .await
            .unwrap();
        assert_eq!(mark, "same page", "the board was never reloaded");
        let shown = client
            .execute("return window.shepherdShown", vec![])
            .await
            .unwrap();
        assert_eq!(
            shown,
            serde_json::json!([["asker needs you", "Which file should I edit?"]]),
            "one notification for the question, naming the sheep and its question"
        );

        // The session's shepherd.md, then the sheep's note through its link there.
        browser.click(Locator::Css(".session a"), "the session's link").await;
        let note_link = browser
            .appears(
                Locator::XPath(
                    "//article[@class='note']//li/a[contains(@href, '.md') and not(contains(@href, 'shepherds-note'))]",
                ),
                "shepherd.md lists the sheep's note",
            )
            .await;
        assert!(!overflows(&browser).await, "the session's page fits 390 px");
        screenshot(&browser, "web-note.png").await;
        let href = note_link.attr("href").await.unwrap().unwrap();
        note_link.click().await.unwrap();
        let summary = browser.appears(Locator::Css("article.note details.frontmatter > summary"), "the note renders, its frontmatter folded into a summary").await;
        let line = summary.text().await.unwrap();
        assert!(line.contains("asker") && line.contains("completed"), "{line}");
        let shown = client
            .execute("return document.querySelector('article.note').innerText", vec![])
            .await
            .unwrap();
        let shown = shown.as_str().unwrap_or_default();
        assert!(!shown.contains("<!--") && !shown.contains("ordinal"), "the note reads as a document: {shown}");
        let opened = client.current_url().await.unwrap();
        assert!(
            opened.path().ends_with(href.trim_start_matches("./")),
            "{opened} is the linked note {href}"
        );
        assert!(!overflows(&browser).await, "the note fits 390 px");
        browser.close().await;
    });
}

#[test]
fn a_note_carrying_a_script_runs_nothing_in_the_browser() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    std::fs::write(
        world.project.join("evil.md"),
        "# Evil\n\n<script>window.pwned = 'script'</script>\n\n<img src=x onerror=\"window.pwned = 'onerror'\">\n\n[click me](javascript:window.pwned='link')\n\n<a id=raw href=\"javascript:window.pwned='raw'\">raw</a>\n",
    )
    .unwrap();
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client
            .goto(&format!("{}&x=1", web.url))
            .await
            .unwrap();
        client.goto(&web.at("/files/evil.md")).await.unwrap();
        browser.appears(Locator::Css("article.note h1"), "the note renders").await;
        for link in client.find_all(Locator::Css("article.note a")).await.unwrap() {
            link.click().await.unwrap();
        }
        let found = client
            .execute(
                "return [window.pwned || null, document.querySelectorAll('main script, main [onerror]').length]",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(found, serde_json::json!([null, 0]), "nothing in the note ran");
        browser.close().await;
    });
}

#[test]
fn a_note_being_written_updates_on_its_page() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    let note = world.project.join("running.md");
    std::fs::write(&note, "# Running\n\nFirst line.\n").unwrap();
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        client.goto(&web.at("/files/running.md")).await.unwrap();
        browser
            .appears(
                Locator::XPath("//article[@class='note']/p[text()='First line.']"),
                "the note renders",
            )
            .await;
        client
            .execute("window.shepherdMark = 'same page'; return true", vec![])
            .await
            .unwrap();
        std::fs::write(&note, "# Running\n\nFirst line.\n\nSecond line.\n").unwrap();
        browser
            .appears(
                Locator::XPath("//article[@class='note']/p[text()='Second line.']"),
                "what the sheep wrote next shows",
            )
            .await;
        let mark = client
            .execute("return window.shepherdMark || null", vec![])
            .await
            .unwrap();
        assert_eq!(mark, "same page", "without a reload");
        browser.close().await;
    });
}

#[test]
fn a_sheep_page_sends_a_message_and_closes_the_sheep_once_confirmed() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    world.define_test_sheep("helper", "idle", None);
    let agent = world.spawn("helper", "");
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        let name = format!(r#"article[data-agent="{agent}"] a.name"#);
        browser.click(Locator::Css(&name), "the sheep's name on the board").await;
        let message = browser
            .appears(Locator::Css("form.act:not(.close) input[name=text]"), "the message box")
            .await;
        message.send_keys("hello from the page").await.unwrap();
        let send = Locator::Css("form.act:not(.close) button");
        browser.click(send, "the message's button").await;
        browser.appears(Locator::XPath(
                "//table[@class='messages']//td[text()='hello from the page']",
            ), "the message shows with its receipt on the sheep's page").await;
        browser.said("message ").await;

        // Unconfirmed, the browser does not send it; sent anyway, the server refuses it.
        let refused = client
            .execute(
                "const form = document.querySelector('form.close');
                 return fetch('/act', {method: 'POST', body: new URLSearchParams(new FormData(form)),
                   headers: {'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}})
                   .then(r => r.status)",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(refused, 400, "a close without its confirmation is refused");
        assert_eq!(world.json(&["status", &agent])["state"], "idle");

        let confirm = Locator::Css("form.close input[name=confirm]");
        browser.click(confirm, "the close's confirmation").await;
        browser.click(Locator::Css("form.close button"), "the close's button").await;
        browser.said("closed helper").await;
        browser.close().await;
    });
    let herd = world.json(&["herd"]);
    assert!(
        !herd.to_string().contains(&agent),
        "the sheep is gone from the herd: {herd}"
    );
}

/// A plain HTTP server on another loopback port that records the headers of each request it
/// gets: a stand-in for any other local server a link in a note could lead to.
struct Other {
    port: u16,
    heads: std::sync::mpsc::Receiver<String>,
}

impl Other {
    fn start() -> Self {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (send, heads) = std::sync::mpsc::channel();
        // A connection per thread: the browser also opens connections it sends nothing on
        // (preconnects), which must not hold up the real request.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let send = send.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut head = String::new();
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        head.push_str(&line);
                        line.clear();
                    }
                    let mut stream = stream;
                    let _written = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nother",
                    );
                    if !head.is_empty() {
                        let _sent = send.send(head);
                    }
                });
            }
        });
        Self { port, heads }
    }

    /// The next request's head, waited for (the browser's own asks for a favicon skipped).
    fn next(&self) -> String {
        loop {
            let head = self
                .heads
                .recv_timeout(web_support::PAGE_LIMIT)
                .expect("the other server got the request");
            if !head.starts_with("GET /favicon.ico ") {
                return head;
            }
        }
    }
}

#[test]
fn the_boards_cookie_never_reaches_another_local_server() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    let other = Other::start();
    std::fs::write(
        world.project.join("links.md"),
        format!(
            "# Links\n\n[by address](http://127.0.0.1:{port}/a)\n\n[by name](http://localhost:{port}/b)\n",
            port = other.port
        ),
    )
    .unwrap();
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(1280, 800).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        browser.appears(Locator::Css("main"), "the board").await;
        for (link, path) in [("by address", "/a"), ("by name", "/b")] {
            client.goto(&web.at("/files/links.md")).await.unwrap();
            browser.click(Locator::LinkText(link), link).await;
            let head = other.next();
            assert!(head.starts_with(&format!("GET {path} ")), "{head}");
            assert!(
                !head.to_lowercase().contains("\ncookie:"),
                "the board's cookie went to another server: {head}"
            );
        }
        // The browser still holds its session for the board itself.
        client.goto(&web.at("/notes")).await.unwrap();
        browser
            .appears(Locator::Css("main"), "the board still lets the browser in")
            .await;
        let status = client
            .execute("return document.title", vec![])
            .await
            .unwrap();
        assert!(
            status.as_str().unwrap_or_default().contains("shepherd"),
            "{status}"
        );
        browser.close().await;
    });
}

/// Waits for the page's connection state (`#link`'s `data-state`) to be `state`.
async fn link_state(browser: &Browser, state: &str, what: &str) {
    let css = format!(r#"#link[data-state="{state}"]"#);
    browser.appears(Locator::Css(&css), what).await;
}

/// Whether the ages on the page tick by themselves: an age's text is spoiled and comes back
/// without an update from the server (tried again when one happened to come meanwhile).
async fn ages_tick(browser: &Browser) -> bool {
    for _ in 0..3 {
        let before = browser
            .client
            .execute(
                "const t = document.querySelector('main time[data-since]');
                 t.textContent = 'spoiled';
                 return document.body.dataset.updates || '0'",
                vec![],
            )
            .await
            .unwrap();
        web_support::eventually("the spoiled age to tick back", async || {
            browser
                .client
                .execute(
                    "return document.querySelector('main time[data-since]').textContent !== 'spoiled'",
                    vec![],
                )
                .await
                .unwrap()
                == true
        })
        .await;
        let after = browser
            .client
            .execute("return document.body.dataset.updates || '0'", vec![])
            .await
            .unwrap();
        if before == after {
            return true;
        }
    }
    false
}

#[test]
fn an_open_page_says_whether_it_is_live_and_comes_back_after_the_server_and_the_broker_restart() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    world.define_test_sheep("helper", "idle", None);
    let web = Web::start(&world);
    let host = web.host.clone();
    runtime().block_on(async {
        let browser = Browser::start(1280, 800).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        client
            .execute("window.shepherdMark = 'same page'; return true", vec![])
            .await
            .unwrap();
        let first = world.spawn("helper", "first");
        let card = |agent: &str| format!(r#"article[data-agent="{agent}"]"#);
        browser
            .appears(Locator::Css(&card(&first)), "the first sheep's card")
            .await;
        link_state(&browser, "live", "the page says it is live").await;
        assert!(ages_tick(&browser).await, "ages tick without the server");

        // `shepherd web` stops: the page says so; it starts again with the same name and port
        // and a new token, and the page is live again.
        drop(web);
        link_state(&browser, "reconnecting", "the page says it is reconnecting").await;
        let web = Web::start(&world);
        assert_eq!(
            web.host, host,
            "the restarted server is where the page left it"
        );
        let second = world.spawn("helper", "second");
        browser
            .appears(
                Locator::Css(&card(&second)),
                "a sheep spawned after the restart shows",
            )
            .await;
        link_state(&browser, "live", "live again after the restart").await;

        // The broker stops: the page says the broker is gone, with no reply field on a herd
        // that is not there; it starts again and the page follows it.
        world.json(&["broker", "stop"]);
        link_state(&browser, "gone", "the page says the broker is gone").await;
        world.json(&["broker", "ensure"]);
        let third = world.spawn("helper", "third");
        browser
            .appears(
                Locator::Css(&card(&third)),
                "a sheep spawned after the broker's restart shows",
            )
            .await;
        link_state(&browser, "live", "live again after the broker's restart").await;
        let mark = client
            .execute("return window.shepherdMark || null", vec![])
            .await
            .unwrap();
        assert_eq!(mark, "same page", "the page was never reloaded");

        // A change still goes through: the page's CSRF token outlived both restarts.
        let name = format!(r#"{} a.name"#, card(&third));
        browser
            .click(Locator::Css(&name), "the third sheep's name")
            .await;
        let message = browser
            .appears(
                Locator::Css("form.act:not(.close) input[name=text]"),
                "the message box",
            )
            .await;
        message.send_keys("still here").await.unwrap();
        browser
            .click(
                Locator::Css("form.act:not(.close) button"),
                "the message's button",
            )
            .await;
        browser.said("message ").await;

        // Signed out from the command line: the open page says its access ended.
        drop(web);
        let revoked = Web::start_with(
            &world,
            &["--revoke-sessions"],
            std::process::Stdio::inherit(),
        );
        link_state(&browser, "ended", "the page says its access ended").await;
        drop(revoked);
        browser.close().await;
    });
}

#[test]
fn the_board_installs_as_an_app_and_says_so_when_it_cannot_be_reached() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        browser.appears(Locator::Css("#totals"), "the board").await;
        let scope = client
            .execute(
                "return navigator.serviceWorker.ready.then((r) => r.scope)",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(scope, web.at("/"), "the service worker serves the whole board");
        let manifest = client
            .execute(
                "const link = document.querySelector('link[rel=manifest]');
                 return fetch(link.href, {credentials: 'omit'}).then((r) => r.json())
                   .then(async (m) => {
                     const icons = await Promise.all(m.icons.map((i) => fetch(i.src, {credentials: 'omit'})
                       .then((r) => [i.sizes, r.status, r.headers.get('content-type')])));
                     return [m.name, m.start_url, m.display, icons];
                   })",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            manifest,
            serde_json::json!([
                "shepherd",
                "/",
                "standalone",
                [["192x192", 200, "image/png"], ["512x512", 200, "image/png"]]
            ]),
            "an installable app's manifest and icons, fetched as an install does (no cookie)"
        );
        web_support::eventually("the service worker to control the page", async || {
            client.refresh().await.unwrap();
            client
                .execute("return navigator.serviceWorker.controller !== null", vec![])
                .await
                .unwrap()
                == true
        })
        .await;
        drop(web);
        client.refresh().await.unwrap();
        let note = browser
            .appears(Locator::Css("main .error"), "the page says the board cannot be reached")
            .await;
        assert!(note.text().await.unwrap().contains("cannot be reached"));
        browser.close().await;
    });
}
