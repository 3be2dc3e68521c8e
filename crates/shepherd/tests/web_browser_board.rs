//! The board at scale: after its first whole page, the board's stream sends only what changed
//! (one sheep's change is one card, not the board), read off the raw event stream; and in a
//! real headless Chromium, the filter box shows only the matching sheep, a column folds and
//! stays folded across a reload and across the changes applied in place.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use fantoccini::Locator;
use serde_json::Value;

use crate::herd_support::World;
use crate::web_support::{self, Browser, EventStream, Web};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_change_sends_only_the_card_that_changed() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    world.define_test_sheep("helper", "idle", None);
    let agents: Vec<String> = (0..6)
        .map(|i| world.spawn("helper", &format!("h{i}")))
        .collect();
    web_support::wait_for("every sheep idle", Duration::from_secs(30), || {
        world.json(&["herd"])["sheep"]
            .as_array()
            .is_some_and(|sheep| sheep.iter().all(|s| s["state"] == "idle"))
    });
    let web = Web::start(&world);
    let mut stream = EventStream::open(&web, &web.cookie());
    // Until the server reached the herd, the stream shows that it is reaching it.
    let whole = loop {
        let (name, data) = stream.next();
        assert_eq!(name, "html", "the stream starts with whole pages: {data}");
        if data.contains(r#"class="board""#) {
            break data;
        }
    };
    for agent in &agents {
        assert!(whole.contains(agent.as_str()), "{agent} is on the board");
    }
    world.json(&["close", &agents[2]]);
    let (name, data) = stream.next();
    assert_eq!(name, "patch", "{data}");
    let patch: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(patch["drop"], serde_json::json!([agents[2]]), "{patch}");
    assert_eq!(
        patch["set"],
        serde_json::json!([]),
        "no other card is sent: {patch}"
    );
    assert_eq!(patch["counts"]["idle"], 5, "{patch}");
    assert!(
        data.len() * 4 < whole.len(),
        "the change ({} bytes) is a small part of the board ({} bytes)",
        data.len(),
        whole.len()
    );
}

#[test]
fn the_filter_shows_the_matching_sheep_and_a_folded_column_stays_folded() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    world.define_test_sheep("helper", "idle", None);
    world.define_test_sheep("reviewer", "idle", None);
    let helper = world.spawn("helper", "alpha");
    let reviewer = world.spawn("reviewer", "beta");
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        let card = |agent: &str| format!(r#"article[data-agent="{agent}"]"#);
        browser
            .appears(Locator::Css(&card(&reviewer)), "the reviewer's card")
            .await;
        let visible = async |agent: &str| {
            client
                .find(Locator::Css(&card(agent)))
                .await
                .unwrap()
                .is_displayed()
                .await
                .unwrap()
        };
        let filter = browser
            .appears(Locator::Css("#filter"), "the filter box")
            .await;
        filter.send_keys("review").await.unwrap();
        web_support::eventually("the filter to hide the helper", async || {
            !visible(&helper).await
        })
        .await;
        assert!(visible(&reviewer).await, "the matching sheep stays");
        filter.clear().await.unwrap();
        filter.send_keys(" ").await.unwrap();
        web_support::eventually("an empty filter to show everyone", async || {
            visible(&helper).await
        })
        .await;

        browser
            .click(
                Locator::Css("#idle button.fold"),
                "the idle column's heading",
            )
            .await;
        web_support::eventually("the folded column to hide its cards", async || {
            !visible(&helper).await && !visible(&reviewer).await
        })
        .await;
        client.refresh().await.unwrap();
        browser
            .appears(
                Locator::Css(r#"#idle[data-folded] button.fold[aria-expanded="false"]"#),
                "the column still folded after a reload",
            )
            .await;
        // A change applied in place leaves the fold as it is.
        let third = world.spawn("helper", "gamma");
        browser
            .appears(
                Locator::Css(&format!("#idle {}", card(&third))),
                "the new card",
            )
            .await;
        assert!(
            !visible(&third).await,
            "a card that arrives in a folded column is folded"
        );
        browser
            .click(
                Locator::Css("#idle button.fold"),
                "the idle column's heading",
            )
            .await;
        web_support::eventually("the unfolded column to show its cards", async || {
            visible(&third).await
        })
        .await;
        browser.close().await;
    });
}
