//! Short names at the command line: a sheep or task named by a few characters of its id's
//! random part, a sheep by its display name or unique label; an ambiguous name is refused with
//! the candidates and changes nothing.

use crate::herd_support;

use herd_support::World;

/// The first `n` characters of an id's random part (after `shepherd-<kind>-<herd>-`).
fn short(id: &str, n: usize) -> String {
    let random = id.splitn(4, '-').nth(3).expect("an id has a random part");
    random[..n].to_owned()
}

#[test]
fn sheep_and_tasks_answer_to_short_names() {
    let world = World::new();
    world.define_test_sheep("worker", "done completed ok", None);
    world.define_test_sheep("scout", "done completed ok", None);
    let first = world.spawn("worker", "review");
    let second = world.spawn("scout", "review");

    let status = world.json(&["status", "scout: review"]);
    assert_eq!(status["agentId"], second.as_str(), "{status}");
    let status = world.json(&["status", &short(&first, 8)]);
    assert_eq!(status["agentId"], first.as_str(), "{status}");

    let task = world.json(&["delegate", &short(&second, 8), "look"])["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.json(&["watch", &short(&task, 8), "--wait", "30"]);
    assert_eq!(watched["settled"][0]["taskId"], task.as_str(), "{watched}");

    // `review` is the label of both: refused, with both named, and nothing closed.
    let (code, stdout, stderr) = world.error(&["close", "review"]);
    assert_ne!(code, 0);
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("ambiguous_id"), "{said}");
    assert!(
        said.contains("worker: review") && said.contains("scout: review"),
        "{said}"
    );
    assert_eq!(world.json(&["status", &first])["state"], "idle");

    let closed = world.json(&["close", &short(&first, 8)]);
    assert_eq!(closed["agentId"], first.as_str(), "{closed}");

    // A name the herd does not know reaches the command as it was typed.
    let (code, stdout, stderr) = world.error(&["close", "nobody"]);
    assert_ne!(code, 0);
    assert!(format!("{stdout}{stderr}").contains("nobody"), "{stderr}");
}
