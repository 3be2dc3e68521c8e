//! The herd calls the person (docs/notifications.md). With `notifyDesktop` and `notifyWebhook`
//! in the user's settings, a sheep's question reaches a real notification server (dunst, on a
//! D-Bus session bus of the test's own, drawing on a virtual X display) and a real HTTP
//! receiver, each exactly once: not again as the herd goes on changing, and not again from the
//! broker that replaces one killed with SIGKILL. The webhook says who asks without the
//! question's words (`notifyWords` is off); the desktop shows them. The notification's action
//! opens the sheep's board page, a link without the board's token (through `xdg-open`, which the
//! test replaces with a script that writes down what it was asked to open), while the broker that
//! showed it runs: the server tells an action to the connection that showed the notification.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support::{self, World};
use crate::notify_support::{Desktop, LIMIT, Receiver, count, required, told_on_both, wait_for};
use crate::web_support::Web;

const QUESTION: &str = "Which database should I use?";

#[test]
fn a_question_reaches_the_desktop_and_the_webhook_once_each_across_a_broker_kill() {
    if !required() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(scratch.path());
    let receiver = Receiver::start();
    // `xdg-open`, which the notification's action runs, writes down what it was to open.
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = scratch.path().join("opened");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let mut world = World::new();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    world.extra_env.push(("PATH".into(), path));
    crate::notify_support::notify_both(&mut world, &desktop, &receiver);
    world.define_test_sheep("asker", &format!("ask shepherd {QUESTION}; idle"), None);
    world.define_test_sheep("quitter", "done blocked no credentials", None);
    world.define_test_sheep("failer", "done failed the tests fail", None);
    let web = Web::start(&world);
    let board = format!("http://{}", web.host);

    let asker = world.spawn("asker", "db");
    world.delegate(&asker, "set up the database");
    let question = "asker: db asks you a question";
    assert_eq!(told_on_both(&desktop, &receiver, question), (1, 1));

    let (summary, body) = desktop
        .notifications()
        .into_iter()
        .find(|n| n.0 == question)
        .unwrap();
    assert_eq!(summary, question);
    assert!(
        body.contains(QUESTION),
        "the desktop shows the words: {body}"
    );
    assert!(body.contains(&format!("{board}/sheep/{asker}")), "{body}");
    let post = receiver.posts.lock().unwrap()[0].clone();
    assert_eq!(post["kind"], "question", "{post}");
    assert_eq!(post["link"], format!("{board}/sheep/{asker}"), "{post}");
    assert!(
        !post.to_string().contains(QUESTION),
        "with notifyWords off the words stay on the machine: {post}"
    );
    assert!(!post.to_string().contains(&web.token), "{post}");

    // The question stays on screen (it waits on the person); its action opens the sheep's page.
    let invoked = desktop.dunstctl(&["action", "0"]);
    assert!(invoked.status.success(), "{invoked:?}");
    let url = wait_for("xdg-open to be run", || {
        std::fs::read_to_string(&opened)
            .ok()
            .filter(|t| !t.is_empty())
    });
    assert_eq!(url.trim(), format!("{board}/sheep/{asker}"));

    // The herd goes on: a second moment is told, and the first is not told again before it.
    let quitter = world.spawn("quitter", "keys");
    world.delegate(&quitter, "deploy");
    let blocked = "quitter: keys is blocked";
    assert_eq!(told_on_both(&desktop, &receiver, blocked), (1, 1));

    // A broker killed and replaced reads what was told and tells it not again.
    let old = world.broker_pid().unwrap();
    herd_support::kill9(old);
    world.await_new_broker(old, LIMIT);
    let failer = world.spawn("failer", "tests");
    world.delegate(&failer, "run the tests");
    let failed = "failer: tests failed its task";
    assert_eq!(told_on_both(&desktop, &receiver, failed), (1, 1));
    let shown: Vec<String> = desktop.notifications().into_iter().map(|n| n.0).collect();
    let posted = receiver.titles();
    for title in [question, blocked] {
        assert_eq!(
            (count(&shown, title), count(&posted, title)),
            (1, 1),
            "{title} once on each: {shown:?} {posted:?}"
        );
    }

    drop(web);
}
