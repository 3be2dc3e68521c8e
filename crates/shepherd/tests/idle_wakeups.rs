//! An idle herd costs nothing: with four sheep attached and nothing to do, the broker, each
//! sheep's supervisor and each sheep's own client to the broker make no periodic wake-ups.
//! Every thread's context switches are counted from `/proc` over 30 s; any wake-up at all
//! fails the test and names the thread that woke.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use herd_support::World;

/// Context switches (voluntary and not) of every thread of `pid`, by `pid/tid name`.
fn switches(pid: u32, into: &mut BTreeMap<String, u64>) {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for thread in threads.flatten() {
        let status = std::fs::read_to_string(thread.path().join("status")).unwrap_or_default();
        let name = status
            .lines()
            .find_map(|l| l.strip_prefix("Name:"))
            .unwrap_or("?")
            .trim()
            .to_owned();
        let count: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
            .sum();
        into.insert(
            format!("{pid}/{} {name}", thread.file_name().to_string_lossy()),
            count,
        );
    }
}

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis: state, then the parent's pid.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The threads that switched between two counts, with how often.
fn woken(pids: &[(String, u32)], window: Duration) -> Vec<String> {
    let mut before = BTreeMap::new();
    for (_, pid) in pids {
        switches(*pid, &mut before);
    }
    std::thread::sleep(window);
    let mut after = BTreeMap::new();
    for (_, pid) in pids {
        switches(*pid, &mut after);
    }
    let role = |key: &str| {
        pids.iter()
            .find(|(_, pid)| key.starts_with(&format!("{pid}/")))
            .map_or("?", |(role, _)| role.as_str())
            .to_owned()
    };
    after
        .iter()
        .filter_map(|(key, count)| {
            let woke = count.saturating_sub(*before.get(key).unwrap_or(&0));
            (woke > 0).then(|| format!("{} {key}: {woke}", role(key)))
        })
        .collect()
}

#[test]
fn an_idle_herd_of_four_makes_no_wakeups_in_thirty_seconds() {
    let world = World::new();
    world.define_test_sheep("idler", "done completed ok", None);
    let mut pids = vec![("broker".to_owned(), 0)];
    let mut agents = Vec::new();
    for n in 0..4 {
        let agent = world.spawn("idler", &format!("i{n}"));
        agents.push(agent.clone());
        let sheep = world.json(&["status", &agent])["pid"].as_u64().unwrap() as u32;
        pids.push(("sheep".into(), sheep));
        pids.push(("supervisor".into(), parent_of(sheep)));
    }
    // One task each first, so every part has done real work before it idles.
    for agent in &agents {
        let task = world.delegate(agent, "one task");
        let id = task["taskId"].as_str().unwrap();
        let (_, waited) = world.json_status(&["watch", id, "--wait", "30"]);
        assert_eq!(waited["settled"][0]["status"], "completed", "{waited}");
    }
    pids[0].1 = world.broker_pid().unwrap();
    // What the last commands started settles within moments: wait for one quiet second.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let noisy = woken(&pids, Duration::from_secs(1));
        if noisy.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the herd never went quiet: {noisy:?}"
        );
    }
    let noisy = woken(&pids, Duration::from_secs(30));
    assert!(noisy.is_empty(), "woke while idle: {noisy:?}");
}
