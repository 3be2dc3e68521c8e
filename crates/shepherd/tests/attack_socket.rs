//! Attacks on the broker socket (the report's D1–D4): a sheep reaches the broker only through
//! the socket it was given and only as itself.
//!
//! - D4: a child connects, hands its connection to its parent with `SCM_RIGHTS` and exits; the
//!   parent says `hello` as the herd's parent on it and, granted, spawns an unconfined sheep of
//!   its own choosing. Confined, it has no herd's key to present; unconfined (so it can read
//!   the key), the connection's process is gone and the role is refused all the same.
//! - D1: `hello` as an observer without the herd's key, then `herd` and `read`.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::attack_support::{attack, define_attacker, proof};
use crate::herd_support::World;

/// The D4 escaper: its task is the path an escape would write.
const PASSED_CONNECTION: &str = r#"
t = task()
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    c = socket.socket(socket.AF_UNIX)
    c.connect(SOCKET)
    socket.send_fds(a, [b"x"], [c.fileno()])
    os._exit(0)
os.waitpid(pid, 0)
_, fds, _, _ = socket.recv_fds(b, 16, 1)
conn = socket.socket(fileno=fds[0])
hello = {"protocol": PROTOCOL, "role": "parent", "client": "escaper"}
key = herd_key()
if key:
    hello["token"] = key
findings = {"key": key is not None, "hello": outcome(request(conn, "hello", hello))}
if findings["hello"] == "granted":
    spawned = request(conn, "spawn", {"agent": "scout", "sandbox": "off",
                                      "piCommand": ["/bin/sh", "-c", "id > " + t + "; sleep 30"]}, 2)
    findings["spawn"] = outcome(spawned)
done(findings)
"#;

#[test]
fn a_confined_sheep_cannot_become_the_parent_through_a_passed_connection() {
    let world = World::new();
    define_attacker(
        &world,
        "escaper",
        "sandbox: strict\nnetwork: none",
        PASSED_CONNECTION,
    );
    let proof = proof(&world, "escaper");
    let found = attack(&world, "escaper", &proof.display().to_string(), &[]);
    assert_eq!(found["key"], false, "the herd's key is hidden: {found}");
    assert_eq!(found["hello"], "unauthenticated", "{found}");
    assert!(!proof.exists(), "an unconfined sheep ran: {found}");
}

#[test]
fn a_passed_connection_is_refused_as_parent_even_with_the_herds_key() {
    let world = World::new();
    define_attacker(&world, "escaper", "sandbox: off", PASSED_CONNECTION);
    let proof = proof(&world, "escaper-unconfined");
    let found = attack(&world, "escaper", &proof.display().to_string(), &[]);
    assert_eq!(
        found["key"], true,
        "an unconfined sheep reads what its user reads: {found}"
    );
    assert_eq!(found["hello"], "forbidden", "{found}");
    assert!(!proof.exists(), "a sheep of its choosing ran: {found}");
}

/// D1: an observer without the key sees nothing of its herd-mates.
const OBSERVER: &str = r#"
t = task()
conn = socket.socket(socket.AF_UNIX)
conn.connect(SOCKET)
findings = {"hello": outcome(request(conn, "hello", {"protocol": PROTOCOL, "role": "observer"}))}
if findings["hello"] == "granted":
    herd = request(conn, "herd", {}, 2)
    findings["sawTask"] = t[::-1] in json.dumps(herd)
done(findings)
"#;

#[test]
fn a_sheep_cannot_observe_its_herd_without_the_herds_key() {
    let world = World::new();
    world.define(
        "victim",
        &[
            "sh".into(),
            "-c".into(),
            "shepherd inbox --wait 60; sleep 60".into(),
        ],
    );
    define_attacker(
        &world,
        "reader",
        "sandbox: workspace\nnetwork: none",
        OBSERVER,
    );
    let victim = world.spawn("victim", "");
    world.delegate(&victim, "VICTIM-SECRET");
    let found = attack(&world, "reader", "TERCES-MITCIV", &[]);
    assert_eq!(found["hello"], "unauthenticated", "{found}");
}
