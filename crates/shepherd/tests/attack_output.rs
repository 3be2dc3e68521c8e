//! What a sheep prints reaches the person's terminal (the report's I1): its output through
//! `read`, its summary through `watch` and `run`, its messages through `inbox`. Escape
//! sequences in any of them (OSC 52 writes the clipboard, OSC 0 the window's title, CSI clears
//! the screen) are taken out before they are printed; `--json` escapes them itself.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support::World;

/// The clipboard, the title and a clear-screen, then plain words.
const HOSTILE: &str = "\\033]52;c;ZXZpbA==\\007\\033]0;owned\\007\\033[2J\\033[Hplain words";

#[test]
fn escape_sequences_from_a_sheep_never_reach_the_terminal() {
    let world = World::new();
    let script = format!(
        "printf '{HOSTILE}\\n'; t=$(shepherd inbox --wait 60); shepherd tell shepherd \"$(printf '{HOSTILE}')\"; shepherd done --status completed --summary \"$(printf '{HOSTILE}')\"; sleep 60"
    );
    world.define("loud", &["sh".into(), "-c".into(), script]);
    let agent = world.spawn("loud", "");
    let task = world.delegate(&agent, "speak")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.run(&["watch", &task, "--wait", "30"]);
    let read = world.run(&["read", &agent]);
    let inbox = world.run(&["inbox", "--wait", "5"]);
    for (what, out) in [("watch", &watched), ("read", &read), ("inbox", &inbox)] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("plain words"), "{what}: {text:?}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{what}: {text:?}"
        );
    }
    let out = world.run(&["run", "loud", "again"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("plain words"), "run: {text:?}");
    assert!(!text.contains('\u{1b}'), "run: {text:?}");
}
