//! Herd-mates and receipts from the command line, with shell scripts as sheep: a sheep lists
//! its herd-mates (names, agents, states, itself marked, no task texts) and messages one by its
//! display name; a message is `queued` until its recipient fetches it and `read` once it
//! acknowledged it, the parent and the sending sheep can both ask, and the receipt survives a
//! broker killed with SIGKILL.

use crate::herd_support;

use std::time::{Duration, Instant};

use herd_support::{World, kill9, release};
use serde_json::Value;

/// The parent's inbox as the test reads it: every message a sheep sent, kept in order, so one
/// read that fetches several keeps those the test asks about later.
struct ParentInbox<'w> {
    world: &'w World,
    /// (content, message id) of every message fetched and not yet asked about.
    unclaimed: Vec<(String, String)>,
}

impl<'w> ParentInbox<'w> {
    fn new(world: &'w World) -> Self {
        Self {
            world,
            unclaimed: Vec::new(),
        }
    }

    /// The first message from a sheep that starts with `prefix`, waiting for it 30 s at most;
    /// returns the rest of that message and the message's id.
    fn says(&mut self, prefix: &str) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(at) = self
                .unclaimed
                .iter()
                .position(|(content, _)| content.starts_with(prefix))
            {
                let (content, id) = self.unclaimed.remove(at);
                return (content[prefix.len()..].to_owned(), id);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no message starting {prefix:?} came");
            let (_, doc) =
                self.world
                    .json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
            for item in doc["items"].as_array().into_iter().flatten() {
                if let (Some(content), Some(id)) =
                    (item["content"].as_str(), item["messageId"].as_str())
                {
                    self.unclaimed.push((content.to_owned(), id.to_owned()));
                }
            }
        }
    }
}

#[test]
fn a_sheep_lists_its_herd_mates_and_messages_one_by_display_name() {
    let world = World::new();
    let mut inbox = ParentInbox::new(&world);
    // The listener says what it is given: its task, then whatever a herd-mate tells it.
    world.define(
        "listener",
        &[
            "sh".into(),
            "-c".into(),
            r#"while :; do m=$(shepherd inbox --wait 30) || continue; shepherd tell shepherd "listener got:$m"; done"#.into(),
        ],
    );
    let listener = world.spawn("listener", "b");
    world.delegate(&listener, "secret task text");
    let (task, _) = inbox.says("listener got:");
    assert!(task.starts_with("secret task text"), "{task}");

    // The talker looks at its herd, messages the listener by name, and tries a name no
    // herd-mate has.
    world.define(
        "talker",
        &[
            "sh".into(),
            "-c".into(),
            r#"shepherd tell shepherd "mates:$(shepherd herd --json)"
shepherd tell shepherd "lines:$(shepherd herd)"
shepherd tell "listener: b" "hello from the talker" > /dev/null
shepherd tell nobody "lost" 2>&1 >/dev/null | { read -r line; shepherd tell shepherd "bad:$line"; }
sleep 60"#
                .into(),
        ],
    );
    let talker = world.spawn("talker", "a");

    let (mates, _) = inbox.says("mates:");
    let mates: Value = serde_json::from_str(&mates).expect("one JSON document");
    assert_eq!(mates["agentId"], talker.as_str(), "{mates}");
    let listed: Vec<(&str, &str, &str, bool)> = mates["mates"]
        .as_array()
        .expect("mates")
        .iter()
        .map(|m| {
            (
                m["agentId"].as_str().unwrap(),
                m["displayName"].as_str().unwrap(),
                m["runtime"].as_str().unwrap(),
                m["isSelf"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (listener.as_str(), "listener: b", "command", false),
            (talker.as_str(), "talker: a", "command", true),
        ]
    );
    assert_eq!(mates["mates"][0]["state"], "working", "{mates}");
    assert!(
        !mates.to_string().contains("secret task text"),
        "a herd-mate's task text is the parent's: {mates}"
    );
    let (lines, _) = inbox.says("lines:");
    assert!(
        lines.contains(&format!("{talker} talker: a [")) && lines.contains("(you)"),
        "{lines}"
    );

    let (heard, _) = inbox.says("listener got:");
    assert_eq!(heard, "hello from the talker");
    let (bad, _) = inbox.says("bad:");
    assert!(
        bad.contains("`nobody`") && bad.contains("shepherd herd"),
        "an unknown name is refused, naming it and where the names are: {bad}"
    );

    // The parent's own view is unchanged, and `herd.mates` is a sheep's request only.
    let herd = world.json(&["herd"]);
    assert_eq!(herd["sheep"].as_array().map(Vec::len), Some(2), "{herd}");
}

#[test]
fn a_message_is_queued_then_read_and_its_receipt_survives_a_broker_restart() {
    let world = World::new();
    let mut inbox = ParentInbox::new(&world);
    let fetch = world.fifo("fetch");
    let check = world.fifo("check");
    let script = format!(
        r#"read _ < {fetch}
shepherd inbox --wait 30 > /dev/null
id=$(shepherd tell shepherd "ping from the reader" --json | grep -o 'shepherd-message-[^"]*')
read _ < {check}
shepherd tell shepherd "receipt:$(shepherd status "$id" --json)"
sleep 60"#,
        fetch = fetch.display(),
        check = check.display(),
    );
    world.define("reader", &["sh".into(), "-c".into(), script]);
    let reader = world.spawn("reader", "");

    let sent = world.json(&["message", &reader, "hello reader"]);
    let message = sent["messageId"].as_str().expect("a message id").to_owned();
    let receipt = world.json(&["status", &message]);
    assert_eq!(receipt["state"], "queued", "{receipt}");
    assert_eq!(receipt["target"], reader.as_str(), "{receipt}");
    assert_eq!(receipt["preview"], "hello reader", "{receipt}");
    assert!(receipt["deliveredAt"].is_null(), "{receipt}");
    let (code, human) = {
        let out = world.run(&["status", &message]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0));
    assert!(
        human.starts_with(&format!("{message} from shepherd to reader: queued (sent ")),
        "{human}"
    );

    release(&fetch);
    // The sheep tells the parent only after `inbox` printed and acknowledged the message.
    let (_, ping) = inbox.says("ping from the reader");
    let read = world.json(&["status", &message]);
    assert_eq!(read["state"], "read", "{read}");
    let sent_at = read["sentAt"].as_i64().unwrap();
    let delivered_at = read["deliveredAt"].as_i64().expect("delivered");
    let read_at = read["readAt"].as_i64().expect("read");
    assert!(sent_at <= delivered_at && delivered_at <= read_at, "{read}");
    let status = world.json(&["status", &reader]);
    assert_eq!(
        status["messages"][0]["messageId"],
        message.as_str(),
        "{status}"
    );
    assert_eq!(status["messages"][0]["state"], "read", "{status}");

    // The receipts are journaled: a broker killed outright comes back with them.
    let old = world.broker_pid().expect("a broker");
    kill9(old);
    world.await_new_broker(old, Duration::from_secs(10));
    assert_eq!(world.json(&["status", &message]), read);

    // The sheep asks about its own message, which the parent read (its `inbox` above).
    release(&check);
    let (asked, _) = inbox.says("receipt:");
    let asked: Value = serde_json::from_str(&asked).expect("one JSON document");
    assert_eq!(asked["messageId"], ping.as_str(), "{asked}");
    assert_eq!(asked["sender"], reader.as_str(), "{asked}");
    assert_eq!(asked["state"], "read", "{asked}");

    // A message id the herd never saw is refused by name.
    let last = message.chars().last().unwrap();
    let unknown = format!(
        "{}{}",
        &message[..message.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    let (exit, code, said) = world.error(&["status", &unknown]);
    assert_eq!((exit, code.as_str()), (1, "unknown_message"), "{said}");
    assert!(said.contains(&format!("`{unknown}`")), "{said}");
}
