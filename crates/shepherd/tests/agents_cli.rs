//! `shepherd agents`: the built binary against temporary homes and projects.

use crate::agents_support;

use agents_support::{Machine, agent, snapshot_settings};

#[test]
fn a_fresh_home_lists_the_four_bundled_agents() {
    let machine = Machine::new();
    let run = machine.run(&["agents"]);
    snapshot_settings().bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn a_user_worker_shadows_the_bundled_one() {
    let machine = Machine::new();
    machine.user_agent("worker.md", &agent("worker", "My own worker"));
    let plain = machine.run(&["agents"]);
    let verbose = machine.run(&["agents", "--verbose"]);
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("user_worker_list", plain.transcript());
        insta::assert_snapshot!("user_worker_verbose", verbose.transcript());
    });
}

#[test]
fn json_is_one_line_with_scope_agents_shadowed_warnings_and_project_dirs() {
    let machine = Machine::new();
    machine.user_agent("worker.md", &agent("worker", "My own worker"));
    machine.project_agent("deploy.md", &agent("deploy", "Ships it"));
    machine.user_agent("broken.md", "---\nname: broken\n---\n");
    let doc = machine.run(&["agents", "--json", "--scope", "both"]).json();
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["scope", "agents", "shadowed", "warnings", "projectDirs"]
    );
    assert_eq!(doc["scope"], "both");
    let names: Vec<&str> = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["worker", "deploy", "planner", "reviewer", "scout"]);
    assert_eq!(doc["agents"][1]["source"], "project");
    assert_eq!(doc["agents"][1]["model"], "inherit");
    assert_eq!(doc["shadowed"][0]["source"], "bundled");
    assert_eq!(
        doc["shadowed"][0]["shadowedBy"],
        "[TMP]/pi-agent/agents/worker.md"
    );
    assert_eq!(
        doc["warnings"][0]["file"],
        "[TMP]/pi-agent/agents/broken.md"
    );
    assert_eq!(doc["warnings"][0]["skipped"], true);
    assert_eq!(
        doc["warnings"][0]["reason"],
        "description is required (a non-empty string)"
    );
    assert_eq!(
        doc["projectDirs"],
        serde_json::json!(["[TMP]/project/.pi/agents"])
    );
}

#[test]
fn scopes_choose_the_directories_and_default_to_the_setting() {
    let machine = Machine::new();
    machine.user_agent("mine.md", &agent("mine", "Mine"));
    machine.project_agent("deploy.md", &agent("deploy", "Ships it"));
    let names = |args: &[&str]| -> Vec<String> {
        machine
            .run(args)
            .ok()
            .lines()
            .map(|line| line.split(':').next().unwrap().to_owned())
            .collect()
    };
    let bundled = [
        "planner (bundled)",
        "reviewer (bundled)",
        "scout (bundled)",
        "worker (bundled)",
    ];
    let with = |first: &[&str]| -> Vec<String> {
        first
            .iter()
            .chain(bundled.iter())
            .map(|s| (*s).to_owned())
            .collect()
    };
    assert_eq!(names(&["agents"]), with(&["mine (user)"]));
    assert_eq!(
        names(&["agents", "--scope", "project"]),
        with(&["deploy (project)"])
    );
    assert_eq!(
        names(&["agents", "--scope", "both"]),
        with(&["mine (user)", "deploy (project)"])
    );
    machine
        .run(&["settings", "set", "agentScope", "project"])
        .ok();
    assert_eq!(names(&["agents"]), with(&["deploy (project)"]));
    machine
        .run(&["settings", "set", "includeBundledAgents", "false"])
        .ok();
    assert_eq!(names(&["agents", "--scope", "user"]), ["mine (user)"]);
    // From outside the project there is no project directory to find.
    let elsewhere = machine.base.join("elsewhere");
    fs_err::create_dir_all(&elsewhere).unwrap();
    let run = machine.run_in(&elsewhere, &["agents"]);
    assert_eq!(
        run.ok(),
        "No agent definitions found in project scope. Add a definition, or choose another scope \
         with --scope.\n"
    );
    assert_eq!(
        machine
            .run_in(&elsewhere, &["agents", "--project", "../project/src"])
            .ok(),
        "deploy (project): Ships it\n"
    );
}

#[test]
fn problems_are_hinted_at_and_shown_with_verbose() {
    let machine = Machine::new();
    machine.user_agent(
        "none.md",
        "---\nname: n\ndescription: d\nmodel: none\n---\n",
    );
    machine.user_agent(
        "odd.md",
        "---\nname: odd\ndescription: d\nomit-context-files: 'yes'\n---\n",
    );
    let plain = machine.run(&["agents"]);
    let verbose = machine.run(&["agents", "-v", "--scope", "both"]);
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("problems_list", plain.transcript());
        insta::assert_snapshot!("problems_verbose", verbose.transcript());
    });
}

#[test]
fn show_resolves_a_bundled_agent() {
    let machine = Machine::new();
    let run = machine.run(&["agents", "show", "reviewer"]);
    snapshot_settings().bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn show_resolves_a_non_pi_project_agent_with_its_approval() {
    let machine = Machine::new();
    machine.project_agent(
        "echo.md",
        "---\nname: echo\ndescription: Answers from a script\ncommand: [sh, -c, 'shepherd done \
         completed \"it worked\"']\nmodel: openai/gpt-5\nthinking: High\ntools: [read]\n\
         color: teal\n---\nUnused by a non-pi sheep.\n",
    );
    let run = machine.run(&["agents", "show", "echo", "--scope", "project"]);
    snapshot_settings().bind(|| insta::assert_snapshot!(run.transcript()));
    let doc = machine
        .run(&["--json", "agents", "show", "echo", "--scope", "project"])
        .json();
    assert_eq!(doc["approval"], "required");
    assert_eq!(doc["model"], "openai/gpt-5");
    assert_eq!(doc["thinking"], "high");
    assert_eq!(doc["command"][0], "sh");
    assert_eq!(doc["extra"]["color"], "teal");
}

/// A definition with a host says where its sheep run; one without has no host line.
#[test]
fn show_says_the_host_a_definition_runs_on() {
    let machine = Machine::new();
    machine.user_agent(
        "scribe.md",
        "---\nname: scribe\ndescription: Writes there\nhost: devbox\n---\nWrite.\n",
    );
    let shown = machine.run(&["agents", "show", "scribe"]);
    let line = shown
        .ok()
        .lines()
        .find(|line| line.trim_start().starts_with("host:"))
        .unwrap_or_else(|| panic!("no host line: {}", shown.stdout));
    assert!(line.contains("devbox"), "{line}");
    let plain = machine.run(&["agents", "show", "worker"]);
    assert!(
        !plain
            .ok()
            .lines()
            .any(|l| l.trim_start().starts_with("host:")),
        "{}",
        plain.stdout
    );
}

#[test]
fn unknown_names_fail_with_suggestions() {
    let machine = Machine::new();
    machine.project_agent("deploy.md", &agent("deploy", "Ships it"));
    let wrong_case = machine.run(&["agents", "show", "Worker"]);
    let other_scope = machine.run(&["agents", "show", "deploy"]);
    let json = machine.run(&["--json", "agents", "show", "nope"]);
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("unknown_wrong_case", wrong_case.transcript());
        insta::assert_snapshot!("unknown_other_scope", other_scope.transcript());
        insta::assert_snapshot!("unknown_json", json.transcript());
    });
}

#[test]
fn approval_is_bound_to_the_contents_and_asked_again_after_an_edit() {
    let machine = Machine::new();
    let file = machine.project_agent("deploy.md", &agent("deploy", "Ships it"));
    let approval = |machine: &Machine| {
        machine
            .run(&["--json", "agents", "show", "deploy", "--scope", "project"])
            .json()["approval"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(approval(&machine), "required");
    let first = machine.run(&["agents", "approve", "deploy"]);
    let again = machine.run(&["agents", "approve", "deploy"]);
    assert_eq!(approval(&machine), "approved");
    machine.write(&file, &agent("deploy", "Ships it, now with extra steps"));
    assert_eq!(approval(&machine), "changed");
    let changed = machine.run(&["agents", "show", "deploy", "--scope", "project"]);
    // Approving what was reviewed: a hash the file no longer has changes nothing.
    let reviewed = machine
        .run(&["--json", "agents", "show", "deploy", "--scope", "project"])
        .json()["contentHash"]
        .as_str()
        .unwrap()
        .to_owned();
    machine.write(&file, &agent("deploy", "Ships it, edited after the review"));
    let stale = machine.run(&["agents", "approve", "deploy", "--hash", &reviewed]);
    assert_eq!(stale.code, 1, "{}", stale.stderr);
    assert!(
        stale.stderr.contains("is not the file that was reviewed")
            && stale.stderr.contains(&format!("not {reviewed:?}")),
        "{}",
        stale.stderr
    );
    assert_eq!(approval(&machine), "changed");
    let current = machine
        .run(&["--json", "agents", "show", "deploy", "--scope", "project"])
        .json()["contentHash"]
        .as_str()
        .unwrap()
        .to_owned();
    let reapproved = machine
        .run(&["--json", "agents", "approve", "deploy", "--hash", &current])
        .json();
    assert_eq!(reapproved["outcome"], "approved");
    assert_eq!(approval(&machine), "approved");
    assert!(machine.pi_dir.join("pi-shepherd/approvals.json").is_file());
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("approve_first", first.transcript());
        insta::assert_snapshot!("approve_again", again.transcript());
    });
    let changed_line = changed
        .ok()
        .lines()
        .find(|l| l.contains("approval:"))
        .unwrap();
    assert_eq!(
        changed_line,
        "  approval:              changed since it was approved: review the file, then run \
         `shepherd agents approve deploy`"
    );
}

#[test]
fn user_and_bundled_agents_need_no_approval() {
    let machine = Machine::new();
    machine.user_agent("mine.md", &agent("mine", "Mine"));
    assert_eq!(
        machine
            .run(&["agents", "approve", "mine", "--scope", "user"])
            .ok(),
        "\"mine\" is a user agent; only project agents need approval.\n"
    );
    assert_eq!(
        machine.run(&["agents", "approve", "worker"]).ok(),
        "\"worker\" is a bundled agent; only project agents need approval.\n"
    );
    assert!(!machine.pi_dir.join("pi-shepherd/approvals.json").exists());
}

#[test]
fn a_missing_project_directory_is_an_error() {
    let machine = Machine::new();
    let run = machine.run(&["agents", "--project", "no/such/dir"]);
    // A bad --project value is a malformed command line: exit 2, as clap's own usage errors.
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "shepherd: The project directory [TMP]/project/src/deep/no/such/dir does not exist; \
         pass an existing directory to --project.\n"
    );
}

/// Asking for an agent whose file was skipped names the file and why, instead of calling the
/// agent unknown; the plain list says how many files were skipped.
#[test]
fn a_skipped_definition_is_named_where_it_is_asked_for() {
    let machine = Machine::new();
    machine.user_agent(
        "h-bogus.md",
        "---\nname: h-bogus\ndescription: d\nharness: nosuch\n---\n",
    );
    let shown = machine.run(&["agents", "show", "h-bogus"]);
    let said = shown.transcript();
    assert!(
        said.contains("h-bogus.md")
            && said.contains("was skipped")
            && said.contains("nosuch")
            && said.contains("expected one of"),
        "{said}"
    );
    assert!(!said.contains("Unknown agent"), "{said}");
    let listed = machine.run(&["agents"]).transcript();
    assert!(listed.contains("Skipped 1 definition file"), "{listed}");

    // A spawn of it is refused before a broker is started for it.
    let spawned = machine.run(&["spawn", "h-bogus"]);
    assert_eq!(spawned.code, 1, "{}", spawned.transcript());
    assert!(
        spawned.stderr.contains("h-bogus.md") && spawned.stderr.contains("was skipped"),
        "{}",
        spawned.transcript()
    );
    let status = machine.run(&["broker", "status"]);
    if status.code != 3 {
        machine.run(&["broker", "stop"]);
    }
    assert_eq!(status.code, 3, "{}", status.transcript());
    assert!(
        status.stdout.starts_with("not running"),
        "{}",
        status.transcript()
    );
}
