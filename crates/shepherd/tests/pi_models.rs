//! A pi sheep's model and thinking level, in the real pi, chosen by the one rule every harness
//! uses (`AgentDef::model_for`, `thinking_for`): a definition that names no model runs on the
//! parent's model at the parent's thinking level — spawned by the parent's tool, run by pi's
//! `subagent` tool, and run by `shepherd run` given the parent's model; a `models: {pi: …}`
//! entry wins for pi; and the `model` of a definition written for another harness never reaches
//! pi. What a sheep runs on is read from the requests its pi sends: the model each goes to, and
//! the thinking level pi passes a model that reasons (`reasoning_effort`). Headless sheep; both
//! pi versions.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, PARENT_MODEL, Shepherd, TURN};
use serde_json::{Value, json};
use shepherd_testkit::fake_llm::{RecordedRequest, Step};
use shepherd_testkit::pi::{PROVIDER, PiBinary, THINKING_PROVIDER};

/// The model the parent switches to before it starts a sheep that inherits: one that reasons,
/// so the thinking level shows in its requests, and not the parent's usual one, so the parent's
/// own turns and the sheep's each have a queue of their own.
const INHERITED: &str = "inherited-model";
/// The model a definition names for pi alone (`models: {pi: …}`).
const PI_ONLY: &str = "pi-only-model";

fn world(pi: &PiBinary) -> Shepherd {
    let options = Options {
        thinking_models: vec![INHERITED, PI_ONLY],
        settings: json!({"subagentCompatibility": true}),
        ..Options::default()
    };
    let s = Shepherd::start(pi, Backend::Headless, &options);
    let agents = s.env.agent_dir().join("agents");
    let define = |name: &str, frontmatter: &str| {
        std::fs::write(
            agents.join(format!("{name}.md")),
            format!(
                "---\nname: {name}\ndescription: The {name} test agent.\n{frontmatter}---\nYou are the test {name}.\n"
            ),
        )
        .unwrap();
    };
    define("plain", "");
    define(
        "perharness",
        &format!("model: {PROVIDER}/worker-model\nmodels:\n  pi: {THINKING_PROVIDER}/{PI_ONLY}\n"),
    );
    define("forcodex", "harness: codex\nmodel: gpt-5-codex\n");
    s
}

/// Switches the parent pi to `provider/model` at thinking level `level` (none: leave it).
fn parent_runs_on(s: &mut Shepherd, provider: &str, model: &str, level: Option<&str>) {
    let set = s
        .parent()
        .call(
            json!({"type": "set_model", "provider": provider, "modelId": model}),
            TURN,
        )
        .expect("set_model answers");
    assert_eq!(set["success"], true, "{set}");
    if let Some(level) = level {
        let set = s
            .parent()
            .call(json!({"type": "set_thinking_level", "level": level}), TURN)
            .expect("set_thinking_level answers");
        assert_eq!(set["success"], true, "{set}");
    }
}

/// The first request the sheep of `agent` sent to `model` after the first `skip` of them:
/// its system prompt opens with the definition's body.
fn sheep_request(s: &Shepherd, model: &str, agent: &str, skip: usize) -> RecordedRequest {
    let body = format!("You are the test {agent}.");
    let of_agent = |r: &RecordedRequest| {
        r.model == model
            && r.system_prompt()
                .is_some_and(|prompt| prompt.contains(&body))
    };
    let requests = s
        .fake
        .wait_until(&format!("a request of {agent} to {model}"), TURN, |all| {
            all.iter().filter(|r| of_agent(r)).count() > skip
        })
        .expect("the sheep asks its model");
    requests.into_iter().filter(of_agent).nth(skip).unwrap()
}

/// How many requests the sheep of `agent` sent to `model` so far.
fn sent(s: &Shepherd, model: &str, agent: &str) -> usize {
    let body = format!("You are the test {agent}.");
    s.fake
        .requests_for(model)
        .iter()
        .filter(|r| {
            r.system_prompt()
                .is_some_and(|prompt| prompt.contains(&body))
        })
        .count()
}

/// The thinking level a request was sent at, as pi tells a model that reasons (`None`: off).
fn effort(request: &RecordedRequest) -> Option<&str> {
    request.body.get("reasoning_effort").and_then(Value::as_str)
}

/// The steps of a sheep that finishes its task at once.
fn finishes(summary: &str) -> [Step; 2] {
    [
        Step::tool_call(
            "shepherd_done",
            json!({"status": "completed", "summary": summary}),
        ),
        Step::text(format!("{summary}.")),
    ]
}

/// Spawns `agent` (with `extra` spawn arguments) while the parent runs on the inherited model
/// at `level`, then gives it a task from the parent's usual model; returns the first request
/// the sheep sent to `model`.
fn spawned_and_tasked(
    s: &mut Shepherd,
    agent: &str,
    extra: &Value,
    level: &str,
    model: &str,
) -> RecordedRequest {
    parent_runs_on(s, THINKING_PROVIDER, INHERITED, Some(level));
    let mut args = json!({"agent": agent, "label": level});
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    s.fake.append(
        INHERITED,
        [
            Step::tool_call("shepherd_spawn", args),
            Step::text("spawned"),
        ],
    );
    s.turns += 1;
    s.parent()
        .prompt("spawn it", TURN)
        .expect("prompt accepted");
    let records = s.parent().wait_run_finished(TURN).expect("the run ends");
    let details = pi_support::tool_result(&records, "shepherd_spawn").unwrap_or_else(|| {
        panic!(
            "the spawn of {agent} failed:\n{}",
            pi_support::summary(&records)
        )
    });
    let id = details["id"].as_str().expect("an agent id").to_owned();
    parent_runs_on(s, PROVIDER, PARENT_MODEL, None);
    let before = sent(s, model, agent);
    s.fake.append(model, finishes(&format!("{agent} done")));
    s.delegate(&id, "Say which model you are.", None);
    // Both its requests are in before the queue is used again.
    sheep_request(s, model, agent, before + 1);
    sheep_request(s, model, agent, before)
}

/// A definition that names no model runs on the parent's model at its thinking level, however
/// it is started: the parent's spawn tool, pi's `subagent` tool, `shepherd run` given the
/// parent's choices.
fn a_model_less_sheep_runs_on_the_parents_model_and_thinking(pi: &PiBinary) {
    let mut s = world(pi);

    let spawned = spawned_and_tasked(&mut s, "plain", &json!({}), "high", INHERITED);
    assert_eq!(effort(&spawned), Some("high"), "{}", spawned.body);

    // `subagent` blocks the parent's turn, so the parent's and the sheep's requests on the one
    // queue come in turn; the last two answer the same, whichever comes first.
    parent_runs_on(&mut s, THINKING_PROVIDER, INHERITED, Some("low"));
    s.fake.append(
        INHERITED,
        [
            Step::tool_call(
                "subagent",
                json!({"agent": "plain", "task": "Say which model you are."}),
            ),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "subagent done"}),
            ),
            Step::text("Subagent done."),
            Step::text("Subagent done."),
        ],
    );
    let before = sent(&s, INHERITED, "plain");
    s.turns += 1;
    s.parent().prompt("run a subagent", TURN).expect("prompt");
    let records = s.parent().wait_run_finished(TURN).expect("the run ends");
    let end = pi_support::tool_end(&records, "subagent")
        .unwrap_or_else(|| panic!("subagent ran:\n{}", pi_support::summary(&records)));
    assert_eq!(end["isError"], false, "{end}");
    let run = sheep_request(&s, INHERITED, "plain", before);
    assert_eq!(effort(&run), Some("low"), "{}", run.body);
    parent_runs_on(&mut s, PROVIDER, PARENT_MODEL, None);

    let before = sent(&s, INHERITED, "plain");
    s.fake.append(INHERITED, finishes("run done"));
    let report = s.shepherd(&[
        "run",
        "plain",
        "Say which model you are.",
        "--parent-model",
        &format!("{THINKING_PROVIDER}/{INHERITED}"),
        "--parent-thinking",
        "medium",
    ]);
    assert_eq!(report["results"][0]["status"], "completed", "{report}");
    let cli = sheep_request(&s, INHERITED, "plain", before);
    assert_eq!(effort(&cli), Some("medium"), "{}", cli.body);
}

/// `models: {pi: …}` wins over `model` for pi; a definition written for another harness,
/// started on pi, never hands pi that harness's model: it runs on the parent's.
fn a_pi_sheep_runs_its_definitions_pi_model_and_never_another_harnesss(pi: &PiBinary) {
    let mut s = world(pi);
    let per_harness = spawned_and_tasked(&mut s, "perharness", &json!({}), "minimal", PI_ONLY);
    assert_eq!(per_harness.model, PI_ONLY);
    assert!(
        s.fake.requests_for("worker-model").is_empty(),
        "the definition's own `model` is not pi's"
    );

    let for_codex = spawned_and_tasked(
        &mut s,
        "forcodex",
        &json!({"harness": "pi"}),
        "high",
        INHERITED,
    );
    assert_eq!(effort(&for_codex), Some("high"), "{}", for_codex.body);
    let herd = s.shepherd(&["herd"]);
    let sheep = herd["sheep"].as_array().unwrap();
    let models: Vec<&str> = sheep
        .iter()
        .filter_map(|sheep| sheep["model"].as_str())
        .collect();
    assert!(
        !models.contains(&"gpt-5-codex"),
        "no pi sheep is recorded on the codex model: {herd}"
    );
}

shepherd_testkit::pi_tests!(
    a_model_less_sheep_runs_on_the_parents_model_and_thinking,
    a_pi_sheep_runs_its_definitions_pi_model_and_never_another_harnesss,
);
