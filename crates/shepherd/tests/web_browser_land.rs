//! Landing from the page, in a real headless Chromium against real git: an isolated run's
//! branch is listed under its closed sheep, its page shows the patch, and "Land" lands it
//! through the merge queue with the person's check; the page follows the merge to its verified
//! end and the board then says where it landed (and shows the run's card with its step). A landing whose check hangs is cancelled from
//! the page and the target stays where it was; a branch discarded from the page is gone. All
//! on one page each, never reloaded.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use fantoccini::Locator;
use shepherd_testkit::git::git;

use crate::herd_support::World;
use crate::merge_support::{file_on, isolated_run, repository};
use crate::web_support::{self, Browser, Web};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A shell sheep that, for each task, writes the task's first line into the file its first word
/// names and commits it on its branch.
fn define_committer(world: &World) {
    let script = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  line=$(printf '%s\n' "$t" | head -n 1)
  file=${line%% *}
  printf '%s\n' "$line" > "$file"
  git add "$file"
  git -c user.name=Sheep -c user.email=sheep@example.invalid commit -q -m "write $file"
  shepherd done --status completed --summary "wrote $file"
done"#;
    world.define("committer", &["sh".into(), "-c".into(), script.into()]);
}

fn rev(world: &World, name: &str) -> String {
    git(&world.project, &["rev-parse", name])
}

/// Sets the page's mark, which a reload would drop.
async fn mark(browser: &Browser) {
    browser
        .client
        .execute("window.shepherdMark = 'same page'; return true", vec![])
        .await
        .unwrap();
}

async fn still_marked(browser: &Browser) -> bool {
    let mark = browser
        .client
        .execute("return window.shepherdMark || null", vec![])
        .await
        .unwrap();
    mark == "same page"
}

/// Opens the branch page of the closed sheep's branch whose link follows `file`'s task.
async fn open_branch(browser: &Browser, task: &str) {
    let link = format!("//section[@id='closed']//li[contains(., '{task}')]//a[@class='branch']");
    browser
        .click(Locator::XPath(&link), "the closed sheep's branch link")
        .await;
    browser
        .appears(Locator::Css("pre.diff"), "the branch's patch")
        .await;
}

#[test]
fn a_branch_is_reviewed_and_landed_from_its_page_and_the_board_says_where() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    repository(&world, &["a"]);
    define_committer(&world);
    isolated_run(&world, &["committer=a one"]);
    let before = rev(&world, "main");
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(1280, 900).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        open_branch(&browser, "a one").await;
        mark(&browser).await;
        let added = browser
            .appears(Locator::Css("pre.diff .d-add"), "the patch's added line")
            .await;
        assert_eq!(added.text().await.unwrap(), "+a one");
        let stat = browser
            .appears(Locator::Css("pre.stat"), "the diffstat")
            .await;
        assert!(stat.text().await.unwrap().contains("a | 2 +-"));
        let lands = browser
            .appears(Locator::Css("p.lands"), "where it would land")
            .await;
        assert_eq!(lands.text().await.unwrap(), "Lands into main by merge.");
        assert_eq!(rev(&world, "main"), before, "looking changes nothing");

        let check = browser
            .appears(Locator::Css("form.land input[name=check]"), "the check box")
            .await;
        check.send_keys("grep -qx 'a one' a").await.unwrap();
        super::web_browser::screenshot(&browser, "web-branch.png").await;
        browser
            .click(Locator::Css("form.land button"), "the land button")
            .await;
        browser.said("merge-").await;
        let landing = browser
            .appears(
                Locator::Css("section.landing[data-state=over] pre.merge"),
                "the landing, followed to its end",
            )
            .await;
        let words = landing.text().await.unwrap();
        assert!(
            words.contains("1 of 1 landed into main") && words.contains("merged at"),
            "{words}"
        );
        browser
            .appears(
                Locator::XPath("//p[@class='why' and contains(., 'already landed at')]"),
                "the branch now says it is landed",
            )
            .await;
        assert!(still_marked(&browser).await, "the page was never reloaded");

        client.goto(&web.at("/")).await.unwrap();
        let run = browser
            .appears(
                Locator::Css(r#"#runs article.run[data-state="over"]"#),
                "the run's card, over",
            )
            .await;
        let run = run.text().await.unwrap();
        assert!(
            run.contains("1 of 1 done") && run.contains("committer completed"),
            "the run's card shows its step: {run}"
        );
        let said = browser
            .appears(
                Locator::Css("#closed a.branch"),
                "the closed sheep's branch line",
            )
            .await;
        let said = said.text().await.unwrap();
        assert!(said.starts_with("landed into main at "), "{said}");
        browser.close().await;
    });
    assert_eq!(file_on(&world, "main", "a"), "a one");
    let landed = rev(&world, "main");
    assert_ne!(landed, before);
    assert_eq!(
        git(&world.project, &["rev-parse", &format!("{landed}^1")]),
        before,
        "main moved by one merge on top of where it was"
    );
}

#[test]
fn a_landing_is_cancelled_from_its_page_and_a_branch_discarded_and_the_target_stays() {
    if !web_support::required() {
        return;
    }
    let world = World::new();
    repository(&world, &["a"]);
    define_committer(&world);
    isolated_run(&world, &["committer=a one"]);
    let before = rev(&world, "main");
    let web = Web::start(&world);
    runtime().block_on(async {
        let browser = Browser::start(390, 844).await;
        let client = &browser.client;
        client.goto(&web.url).await.unwrap();
        open_branch(&browser, "a one").await;
        mark(&browser).await;
        assert!(
            !super::web_browser::overflows(&browser).await,
            "the branch's page fits 390 px"
        );
        let check = browser
            .appears(Locator::Css("form.land input[name=check]"), "the check box")
            .await;
        // A check that never ends by itself.
        check.send_keys("sleep 600").await.unwrap();
        browser
            .click(Locator::Css("form.land button"), "the land button")
            .await;
        browser
            .click(
                Locator::Css("section.landing[data-state=running] form.cancel button"),
                "the running landing's cancel",
            )
            .await;
        browser.said("cancelled merge-").await;
        let landing = browser
            .appears(
                Locator::Css("section.landing[data-state=over] pre.merge"),
                "the cancelled landing, over",
            )
            .await;
        let words = landing.text().await.unwrap();
        assert!(words.contains("cancel"), "{words}");
        assert_eq!(
            rev(&world, "main"),
            before,
            "a cancelled landing moves nothing"
        );

        let confirm = browser
            .appears(
                Locator::Css("form.discard input[name=confirm]"),
                "the discard's confirmation, offered again once the landing is over",
            )
            .await;
        confirm.click().await.unwrap();
        browser
            .click(Locator::Css("form.discard button"), "the discard button")
            .await;
        browser.said("1 of 1 discarded").await;
        let gone = browser
            .appears(
                Locator::XPath("//p[@class='error' and contains(., 'does not exist')]"),
                "the branch page says the branch is gone",
            )
            .await;
        let gone = gone.text().await.unwrap();
        assert!(gone.contains("shepherd/"), "{gone}");
        assert!(
            client
                .find_all(Locator::Css("form.land, form.discard"))
                .await
                .unwrap()
                .is_empty(),
            "nothing is left to land or discard"
        );
        assert!(still_marked(&browser).await, "the page was never reloaded");
        browser.close().await;
    });
    assert_eq!(rev(&world, "main"), before, "a discard moves nothing");
    let branches = git(
        &world.project,
        &["for-each-ref", "--format=%(refname)", "refs/heads/shepherd"],
    );
    assert!(
        branches.is_empty(),
        "the discarded branch is gone: {branches}"
    );
}
