//! A real pi sheep confined with the real bubblewrap and `network: model`: `shepherd run
//! --sandbox workspace` on the scripted fake model completes its round trip — the model reached
//! through the allow-listing proxy, its `bash` tool run inside the sandbox, `shepherd_done`
//! through the broker socket, on an agent directory of its own — and the note records the
//! sandbox. Each test runs once per
//! installed pi version and is skipped with one line when that version is not installed.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::path::Path;

use herd_support::{World, read};
use serde_json::json;
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv};

const MODEL: &str = "sheep-model";

fn confined_round_trip(pi: &PiBinary) {
    let script = Script::new().with_queue(
        MODEL,
        vec![
            // Inside the sandbox: the home directory holds only what the sheep's state needs,
            // the project is the working directory, and the file it writes lands there.
            Step::tool_call(
                "bash",
                json!({"command": "ls -A ~ > seen.txt; echo made > made.txt"}),
            ),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "worked confined"}),
            ),
            Step::text("Done inside the sandbox."),
        ],
    );
    let fake = FakeLlm::start(script).expect("fake model server");
    let env = PiEnv::builder(&fake)
        .model(MODEL)
        .build()
        .expect("pi environment");
    let mut world = World::new();
    std::fs::write(world.home.join("secret.txt"), "not for sheep\n").unwrap();
    let agent_dir = world.home.join(".pi/agent");
    std::fs::create_dir_all(agent_dir.join("agents")).unwrap();
    for file in ["models.json", "settings.json"] {
        std::fs::copy(env.agent_dir().join(file), agent_dir.join(file)).unwrap();
    }
    std::fs::write(
        agent_dir.join("agents/sheep.md"),
        format!(
            "---\nname: sheep\ndescription: A confined pi sheep.\nmodel: fake/{MODEL}\ntools: read, bash\nnetwork: model\n---\nYou are a test sheep.\n"
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
    let (code, doc) = world.json_status(&[
        "run",
        "sheep",
        "work confined",
        "--sandbox",
        "workspace",
        "--timeout",
        "2",
    ]);
    assert_eq!(code, 0, "{doc}");
    let result = &doc["results"][0];
    assert_eq!(result["status"], "completed", "{result}");
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
    assert_eq!(read(&world.project.join("made.txt")), "made\n");
    // The sheep's pi ran on an agent directory of its own (copies of the user's models and
    // settings): none of the user's home is in the sandbox's, pi's own directory included.
    let seen = read(&world.project.join("seen.txt"));
    assert!(!seen.lines().any(|name| name == ".pi"), "{seen}");
    assert!(!seen.contains("secret.txt"), "{seen}");
    let note = read(Path::new(result["note"].as_str().unwrap()));
    assert!(note.contains("sandbox: workspace"), "{note}");
}

shepherd_testkit::pi_tests!(confined_round_trip);
