//! A seeded random crash campaign: a busy herd of shell sheep that use the CLI exactly as the
//! README shows, delegations, messages, watches, spawns and closes from the parent, and the
//! broker SIGKILLed at random moments throughout. Afterwards every acknowledged delegation
//! completed once with its own summary, every acknowledged message reached its sheep, every
//! acknowledged sheep message reached the parent exactly once, every note is final and listed
//! once, and closing the herd leaves no process.
//!
//! `SHEPHERD_CRASH_KILLS` sets how many kills (CI runs a few; set 100 or more for the full
//! campaign) and `SHEPHERD_CRASH_SEED` replays a run (the seed is printed on failure).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use herd_support::{World, read};
use serde_json::json;
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv};

/// A small seeded generator, so a failing campaign can be replayed exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The README's shell sheep, grown to take messages too: it skips envelopes it has seen (a
/// redelivery after a lost acknowledgement), settles each task naming it, tells the parent,
/// and logs what it received and what it was told was accepted.
fn sheep_script(logs: &Path) -> String {
    format!(
        r#"log={logs}/$SHEPHERD_AGENT_ID; touch $log.seen
while :; do
  out=$(shepherd inbox --wait 30 --json) || continue
  # One item per line: every envelope starts with its schema version (inside a string the
  # quotes would be escaped, so a message cannot fake a boundary).
  printf '%s\n' "$out" | sed 's/{{"schemaVersion"/\n&/g' | while IFS= read -r line; do
    mid=$(printf '%s' "$line" | sed -n 's/.*"messageId":"\([^"]*\)".*/\1/p')
    [ -n "$mid" ] || continue
    grep -qx "$mid" $log.seen && continue
    echo "$mid" >> $log.seen
    case "$line" in
      *'"kind":"task"'*)
        id=$(printf '%s' "$line" | sed -n 's/.*"taskId":"\([^"]*\)".*/\1/p')
        sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 10 ))
        shepherd done --status completed --summary "did $id" --task "$id" >/dev/null &&
          shepherd tell shepherd "told $id" >/dev/null && echo "told $id" >> $log.told ;;
      *'"kind":"message"'*)
        echo "$mid" >> $log.msgs
        case "$line" in *'"content":"sync"'*) shepherd tell shepherd "synced $SHEPHERD_AGENT_ID" >/dev/null ;; esac ;;
    esac
  done
done"#,
        logs = logs.display()
    )
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_busy_herd_loses_nothing_over_random_broker_kills() {
    let kills: usize = std::env::var("SHEPHERD_CRASH_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(8);
    let seed: u64 = std::env::var("SHEPHERD_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            (nanos ^ u64::from(std::process::id())) | 1
        });
    eprintln!("crash campaign: {kills} kills, seed {seed} (SHEPHERD_CRASH_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let world = Arc::new(World::new());
    let logs = world.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    world.define("worker", &["sh".into(), "-c".into(), sheep_script(&logs)]);

    let mut sheep: Vec<String> = (0..6)
        .map(|i| world.spawn("worker", &format!("s{i}")))
        .collect();
    let mut labels = 6;

    // The killer: SIGKILLs the broker at random moments until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (world, stop, killed) = (world.clone(), stop.clone(), killed.clone());
        let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) && killed.load(Ordering::SeqCst) < kills {
                // Chaos, not synchronisation: the kills land wherever the herd happens to be.
                std::thread::sleep(Duration::from_millis(150 + rng.below(450)));
                if let Some(pid) = world.running_broker()
                    && rustix::process::kill_process(
                        rustix::process::Pid::from_raw(pid as i32).unwrap(),
                        rustix::process::Signal::KILL,
                    )
                    .is_ok()
                {
                    killed.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    };

    let target = (kills * 3).max(18);
    let mut delegated: BTreeMap<String, String> = BTreeMap::new(); // task → sheep
    let mut open: BTreeMap<String, String> = BTreeMap::new(); // sheep → task
    let mut messages: Vec<(String, String)> = Vec::new(); // (sheep, message id)
    let mut failures: Vec<String> = Vec::new();
    while delegated.len() < target || !open.is_empty() || killed.load(Ordering::SeqCst) < kills {
        for agent in sheep.clone() {
            if open.contains_key(&agent) || delegated.len() >= target {
                continue;
            }
            let (code, doc) =
                world.json_status(&["delegate", &agent, &format!("job {}", delegated.len())]);
            match doc["taskId"].as_str() {
                Some(task) if code == 0 => {
                    delegated.insert(task.to_owned(), agent.clone());
                    open.insert(agent.clone(), task.to_owned());
                }
                _ => failures.push(format!("delegate to {agent}: {doc}")),
            }
        }
        if rng.below(2) == 0 {
            let agent = sheep[rng.below(sheep.len() as u64) as usize].clone();
            let (code, doc) = world.json_status(&["message", &agent, "a note for you"]);
            match doc["messageId"].as_str() {
                Some(id) if code == 0 => messages.push((agent, id.to_owned())),
                _ => failures.push(format!("message to {agent}: {doc}")),
            }
        }
        let tasks: Vec<String> = open.values().cloned().collect();
        if !tasks.is_empty() {
            let mut args = vec!["watch"];
            args.extend(tasks.iter().map(String::as_str));
            args.extend(["--wait", "2"]);
            let (_, watched) = world.json_status(&args);
            for settled in watched["settled"].as_array().into_iter().flatten() {
                let task = settled["taskId"].as_str().unwrap().to_owned();
                assert_eq!(settled["status"], "completed", "seed {seed}: {settled}");
                assert_eq!(
                    settled["summary"].as_str().unwrap(),
                    format!("did {task}"),
                    "seed {seed}: a task settled with another's summary"
                );
                open.retain(|_, t| *t != task);
            }
        }
        // Churn: now and then an idle sheep is closed and a new one spawned.
        if rng.below(5) == 0
            && let Some(idle) = sheep.iter().find(|s| !open.contains_key(*s)).cloned()
        {
            let (code, doc) = world.json_status(&["close", &idle]);
            if code == 0 {
                sheep.retain(|s| *s != idle);
                let (code, doc) =
                    world.json_status(&["spawn", "worker", "--label", &format!("s{labels}")]);
                labels += 1;
                match doc["agentId"].as_str() {
                    Some(id) if code == 0 => sheep.push(id.to_owned()),
                    _ => failures.push(format!("spawn: {doc}")),
                }
            } else {
                failures.push(format!("close {idle}: {doc}"));
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    killer.join().unwrap();
    assert!(
        failures.is_empty(),
        "seed {seed}: acknowledged requests failed: {failures:#?}"
    );
    assert!(
        killed.load(Ordering::SeqCst) >= kills,
        "seed {seed}: too few kills"
    );

    // Every note final, and listed once.
    let mut indexes = BTreeSet::new();
    for task in delegated.keys() {
        let watched = world.json(&["watch", task]);
        let note = watched["settled"][0]["note"].as_str().unwrap().to_owned();
        let text = read(Path::new(&note));
        assert!(
            text.contains("status: completed"),
            "seed {seed}: {note}\n{text}"
        );
        indexes.insert(Path::new(&note).parent().unwrap().join("shepherd.md"));
    }
    let mut listed = 0;
    for index in &indexes {
        // The Notes section lists each note once (the Flow section shows them again).
        let full = read(index);
        let text = full
            .split("## Notes")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_default()
            .to_owned();
        for task in delegated.keys() {
            let watched = world.json(&["watch", task]);
            let note = watched["settled"][0]["note"].as_str().unwrap().to_owned();
            let file = Path::new(&note)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if Path::new(&note).parent() == index.parent() {
                let count = text.matches(&format!("(./{file})")).count();
                assert_eq!(count, 1, "seed {seed}: {file} listed {count} times");
                listed += 1;
            }
        }
    }
    assert_eq!(listed, delegated.len());

    // Each live sheep gets a last message, answered once everything before it was read: the
    // parent's inbox then holds every word the herd said.
    for agent in &sheep {
        world.json(&["message", agent, "sync"]);
    }
    let mut told: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let synced = sheep
            .iter()
            .all(|agent| told.contains_key(&format!("synced {agent}")));
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            synced || !left.is_zero(),
            "seed {seed}: the herd never synced: {told:?}"
        );
        let wait = if synced {
            "0".to_owned()
        } else {
            format!("{:.3}", left.as_secs_f64())
        };
        let (_, doc) = world.json_status(&["inbox", "--wait", &wait]);
        let items = doc["items"].as_array().cloned().unwrap_or_default();
        for item in &items {
            if let Some(content) = item["content"].as_str() {
                told.entry(content.to_owned())
                    .or_default()
                    .insert(item["messageId"].as_str().unwrap().to_owned());
            }
        }
        if synced && items.is_empty() {
            break;
        }
    }

    // Every acknowledged message reached its sheep once (the sheep ignores redeliveries by
    // id); a sheep closed before reading its inbox never got what was left in it.
    for (agent, id) in &messages {
        let got = lines_of(&logs.join(format!("{agent}.msgs")));
        let count = got.iter().filter(|m| *m == id).count();
        let expected = usize::from(sheep.contains(agent));
        assert!(
            count == expected || (expected == 0 && count <= 1),
            "seed {seed}: message {id} to {agent} delivered {count} times"
        );
    }

    // Every acknowledged sheep message reached the parent exactly once (one message id).
    let acknowledged: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".told"))
        .flat_map(|e| lines_of(&e.path()))
        .collect();
    for content in &acknowledged {
        assert_eq!(
            told.get(content).map_or(0, BTreeSet::len),
            1,
            "seed {seed}: `{content}` reached the parent {} times",
            told.get(content).map_or(0, BTreeSet::len)
        );
    }

    // Closing the herd leaves no process.
    let stopped = world.json(&["broker", "stop"]);
    assert_eq!(stopped["failed"], json!([]), "seed {seed}: {stopped}");
    for agent in delegated.values().chain(sheep.iter()) {
        let left = procs::mentioning(agent);
        assert!(left.is_empty(), "seed {seed}: {agent} left {left:?}");
    }
    let project = world.project.display().to_string();
    let brokers: Vec<u32> = procs::mentioning(&format!("--project {project}"))
        .into_iter()
        .filter(|pid| procs::running(*pid))
        .collect();
    for pid in brokers {
        assert!(
            herd_support::wait_gone(pid, Duration::from_secs(15)),
            "seed {seed}: broker {pid} left running"
        );
    }
}

/// A real pi sheep's task, delegated before the broker is killed, completes after it: its
/// `shepherd_done` is resent to the broker that replaces the dead one, and its note is final.
fn pi_sheep_survives_a_broker_kill(pi: &PiBinary) {
    const MODEL: &str = "sheep-model";
    let fake = FakeLlm::start(Script::new()).expect("fake model server");
    let env = PiEnv::builder(&fake)
        .model(MODEL)
        .build()
        .expect("pi environment");
    let mut world = World::new();
    let agent_dir = world.home.join(".pi/agent");
    std::fs::create_dir_all(agent_dir.join("agents")).unwrap();
    for file in ["models.json", "settings.json"] {
        std::fs::copy(env.agent_dir().join(file), agent_dir.join(file)).unwrap();
    }
    std::fs::write(
        agent_dir.join("agents/sheep.md"),
        format!(
            "---\nname: sheep\ndescription: A pi sheep.\nmodel: fake/{MODEL}\ntools: read, bash\n---\nYou are a test sheep.\n"
        ),
    )
    .unwrap();
    world.extra_env.extend([
        (
            "PI_CODING_AGENT_DIR".to_owned(),
            agent_dir.display().to_string(),
        ),
        ("PI_OFFLINE".to_owned(), "1".to_owned()),
        ("NO_COLOR".to_owned(), "1".to_owned()),
        ("SHEPHERD_PI".to_owned(), pi.path.display().to_string()),
    ]);
    let agent = world.spawn("sheep", "");
    fake.append(
        MODEL,
        [
            Step::tool_call("bash", json!({"command": "echo working"})).held_until("go"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "finished after the crash"}),
            ),
            Step::text("All done."),
        ],
    );
    let task = world.delegate(&agent, "work through a crash")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let old = world.broker_pid().unwrap();
    herd_support::kill9(old);
    world.await_new_broker(old, Duration::from_secs(10));
    fake.release("go");
    let watched = world.json(&["watch", &task, "--wait", "60"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed", "{watched}");
    assert_eq!(settled["summary"], "finished after the crash");
    let note = read(Path::new(settled["note"].as_str().unwrap()));
    assert!(note.contains("status: completed"), "{note}");
}

shepherd_testkit::pi_1_tests!(pi_sheep_survives_a_broker_kill);
