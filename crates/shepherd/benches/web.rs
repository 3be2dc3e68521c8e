//! `shepherd web` benchmark (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench web` (`SHEPHERD_WEB_BENCH_SAMPLES=N` for more or fewer
//! settlements than 50, `SHEPHERD_WEB_BENCH_HERD=N` for another herd than 500 sheep). Needs
//! Chromium and chromedriver (`scripts/setup` installs them).
//!
//! The figures, in a real headless Chromium following a herd of 500 `command` sheep:
//! - the board's first paint: the browser's own first-contentful-paint of the board page
//!   (navigation start to first paint, 200 cards in the HTML), over ten loads;
//! - spawn to card: from `shepherd spawn` started (a new CLI process) to the sheep's card in
//!   the page (a MutationObserver writes the time);
//! - settlement to card moved: a sheep settles its task (`shepherd done` returns; the sheep
//!   then writes the time), and the board page, never reloaded, gets that sheep's card in its
//!   *settled* column (a MutationObserver writes the time). Both clocks are this machine's
//!   wall clock in ms; the sheep's is read just after `done` returns, so the figure is short by
//!   that return (a millisecond or two). p50 and p99 over the samples;
//! - bytes per change: the size of each event the board's stream sends while those sheep
//!   settle (read off a raw stream of the bench's own), against the whole board it began with;
//! - question to browser notification: from `shepherd delegate` started to an asking sheep
//!   (which asks at once) to the page showing its notification (its `Notification` wrapped to
//!   note the time), with the permission granted.

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../tests/herd_support/mod.rs"]
mod herd_support;
#[path = "../tests/web_support/mod.rs"]
mod web_support;

use std::time::{Duration, Instant};

use fantoccini::Locator;
use herd_support::World;
use web_support::{Browser, EventStream, Web, wait_for};

/// Questions asked for the browser notification's latency.
const QUESTIONS: usize = 10;
const LOADS: usize = 10;

/// This machine's wall clock in ms, the clock the page's `Date.now()` reads.
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    assert!(
        web_support::required(),
        "the web bench needs Chromium and chromedriver"
    );
    let samples: usize = std::env::var("SHEPHERD_WEB_BENCH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let herd_size: usize = std::env::var("SHEPHERD_WEB_BENCH_HERD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let world = World::new();
    world.define_test_sheep("asker", "ask shepherd Which one?; idle", None);
    world.define("busy", &["sleep".into(), "3600".into()]);
    let stamps = world.dir.path().join("stamps");
    std::fs::create_dir_all(&stamps).unwrap();
    let script = format!(
        "shepherd inbox --wait 120 >/dev/null; shepherd done --status completed --summary ok >/dev/null; date +%s%3N > {}/$SHEPHERD_AGENT_ID; sleep 3600",
        stamps.display()
    );
    world.define("settler", &["sh".into(), "-c".into(), script]);

    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..8 {
            let world = &world;
            scope.spawn(move || {
                for i in (worker..herd_size).step_by(8) {
                    world.spawn("busy", &format!("b{i}"));
                }
            });
        }
    });
    eprintln!(
        "bench web: {herd_size} sheep spawned in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let web = Web::start(&world);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let browser = Browser::start(1280, 900).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        // A stream of the bench's own, with the browser's session, counting what each change
        // sends.
        let session = client
            .get_all_cookies()
            .await
            .unwrap()
            .iter()
            .map(|c| format!("{}={}", c.name(), c.value()))
            .collect::<Vec<_>>()
            .join("; ");
        let sizes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, usize)>::new()));
        let mut stream = EventStream::open(&web, &session);
        let counted = sizes.clone();
        std::thread::spawn(move || {
            while let Some((name, data)) = stream.try_next() {
                counted.lock().unwrap().push((name, data.len()));
            }
        });
        let mut paints = Vec::new();
        for _ in 0..LOADS {
            client.refresh().await.unwrap();
            let cards = client
                .execute(
                    "return document.querySelectorAll('article.card').length",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(cards, herd_size, "every sheep has its card");
            let mut paint = serde_json::Value::Null;
            for _ in 0..500 {
                paint = client
                    .execute(
                        "const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? p.startTime : null",
                        vec![],
                    )
                    .await
                    .unwrap();
                if !paint.is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            paints.push(paint.as_f64().expect("a first paint"));
        }
        paints.sort_by(f64::total_cmp);
        let html = client.source().await.unwrap();
        eprintln!(
            "bench web: board first paint, {herd_size} sheep ({} kB of HTML): p50 {:.0} ms, max {:.0} ms over {LOADS} loads ({paints:?})",
            html.len() / 1024,
            percentile(&paints, 50.0),
            paints[paints.len() - 1]
        );

        client
            .execute(
                "window.watchFor = null; window.movedAt = null; window.appeared = {};
                 new MutationObserver(() => {
                   const now = Date.now();
                   for (const card of document.querySelectorAll('article.card'))
                     if (!(card.dataset.agent in window.appeared)) window.appeared[card.dataset.agent] = now;
                   if (window.watchFor && !window.movedAt &&
                       document.querySelector('#settled article[data-agent=\"' + window.watchFor + '\"]'))
                     window.movedAt = now;
                 }).observe(document.getElementById('live'), {childList: true, subtree: true});
                 for (const card of document.querySelectorAll('article.card')) window.appeared[card.dataset.agent] = 0;
                 return true",
                vec![],
            )
            .await
            .unwrap();
        let whole = sizes
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(name, _)| name == "html")
            .map_or(0, |(_, bytes)| *bytes);
        let counted_before = sizes.lock().unwrap().len();
        let mut moved = Vec::new();
        let mut shown = Vec::new();
        for i in 0..samples {
            let asked = wall_ms();
            let agent = world.spawn("settler", &format!("s{i}"));
            client
                .wait()
                .at_most(Duration::from_secs(30))
                .for_element(Locator::Css(&format!(r#"article[data-agent="{agent}"]"#)))
                .await
                .unwrap();
            let appeared = client
                .execute("return window.appeared[arguments[0]]", vec![serde_json::json!(agent)])
                .await
                .unwrap();
            shown.push((appeared.as_i64().expect("the card's arrival was seen") - asked) as f64);
            client
                .execute(
                    "window.watchFor = arguments[0]; window.movedAt = null; return true",
                    vec![serde_json::json!(agent)],
                )
                .await
                .unwrap();
            world.delegate(&agent, "settle at once");
            let stamp = stamps.join(&agent);
            wait_for("the sheep to settle", Duration::from_secs(30), || {
                std::fs::read_to_string(&stamp).is_ok_and(|s| s.ends_with('\n'))
            });
            let settled: i64 = std::fs::read_to_string(&stamp)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let mut at = serde_json::Value::Null;
            for _ in 0..3000 {
                at = client
                    .execute("return window.movedAt", vec![])
                    .await
                    .unwrap();
                if !at.is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let at = at.as_i64().expect("the card moved");
            moved.push((at - settled) as f64);
        }
        moved.sort_by(f64::total_cmp);
        shown.sort_by(f64::total_cmp);
        eprintln!(
            "bench web: `shepherd spawn` started to its card on the board: p50 {:.0} ms, p99 {:.0} ms over {samples} spawns",
            percentile(&shown, 50.0),
            percentile(&shown, 99.0),
        );
        eprintln!(
            "bench web: settlement to card moved, {}–{} sheep: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms over {samples} settlements",
            herd_size + 1,
            herd_size + samples,
            percentile(&moved, 50.0),
            percentile(&moved, 99.0),
            moved[moved.len() - 1]
        );
        let mut patches: Vec<f64> = sizes.lock().unwrap()[counted_before..]
            .iter()
            .filter(|(name, _)| name == "patch")
            .map(|(_, bytes)| *bytes as f64)
            .collect();
        patches.sort_by(f64::total_cmp);
        eprintln!(
            "bench web: bytes per change while sheep spawn and settle: p50 {:.0}, p99 {:.0}, max {:.0} over {} changes; the whole board of {herd_size} sheep: {whole} bytes",
            percentile(&patches, 50.0),
            percentile(&patches, 99.0),
            patches[patches.len() - 1],
            patches.len()
        );

        client
            .execute(
                "const Real = window.Notification;
                 window.shownAt = {};
                 window.Notification = function (title, options) {
                   window.shownAt[title] = Date.now();
                   return new Real(title, options);
                 };
                 Object.defineProperty(window.Notification, 'permission', { get: () => Real.permission });
                 return Real.permission",
                vec![],
            )
            .await
            .unwrap();
        let mut told = Vec::new();
        for i in 0..QUESTIONS {
            let label = format!("q{i}");
            let agent = world.spawn("asker", &label);
            client
                .wait()
                .at_most(Duration::from_secs(30))
                .for_element(Locator::Css(&format!(r#"article[data-agent="{agent}"]"#)))
                .await
                .unwrap();
            let asked = wall_ms();
            world.delegate(&agent, "choose");
            let mut at = serde_json::Value::Null;
            for _ in 0..3000 {
                at = client
                    .execute(
                        "const t = Object.keys(window.shownAt).find((t) => t.includes(arguments[0])); return t ? window.shownAt[t] : null",
                        vec![serde_json::json!(label)],
                    )
                    .await
                    .unwrap();
                if !at.is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            told.push((at.as_i64().expect("the browser notification") - asked) as f64);
            world.json(&["close", &agent]);
        }
        told.sort_by(f64::total_cmp);
        eprintln!(
            "bench web: `shepherd delegate` to an asking sheep to its browser notification: p50 {:.0} ms, p99 {:.0} ms over {QUESTIONS} questions",
            percentile(&told, 50.0),
            percentile(&told, 99.0),
        );
        browser.close().await;
    });
}
