//! The command line behaves as cargo, gh, jj and uv do: shell completions and manual pages
//! from the same definitions as `--help`; a version that names the commit; a bad value for a
//! closed set is a usage error (exit status 2) before anything starts; `broker status` exits
//! non-zero when no broker runs and does not count itself as a client.

use crate::herd_support;

use herd_support::World;

#[test]
fn completions_for_every_shell_name_the_commands() {
    let world = World::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = world.run(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = String::from_utf8_lossy(&output.stdout);
        for command in ["spawn", "delegate", "watch", "close"] {
            assert!(script.contains(command), "{shell} completes {command}");
        }
    }
    let output = world.run(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("bash"),
        "{output:?}"
    );
}

#[test]
fn manual_pages_cover_every_visible_command() {
    let world = World::new();
    let page = world.run(&["man"]);
    assert!(page.status.success());
    let text = String::from_utf8_lossy(&page.stdout);
    assert!(text.contains(".TH shepherd 1"), "{text}");
    let dir = world.dir.path().join("man");
    let written = world.json(&["man", "--dir", &dir.display().to_string()]);
    let pages: Vec<String> = written["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    for expected in [
        "shepherd.1",
        "shepherd-spawn.1",
        "shepherd-agents-prompt.1",
        "shepherd-broker-status.1",
    ] {
        assert!(
            pages.contains(&expected.to_owned()),
            "{expected} in {pages:?}"
        );
        assert!(dir.join(expected).is_file(), "{expected} written");
    }
    assert!(
        !pages.iter().any(|p| p.contains("supervise")),
        "hidden commands stay out"
    );
}

#[test]
fn version_names_the_commit() {
    let world = World::new();
    let output = world.run(&["--version"]);
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .trim()
        .strip_prefix("shepherd ")
        .expect("shepherd <version>");
    assert!(version.starts_with(env!("CARGO_PKG_VERSION")), "{version}");
    // Built from a git checkout (as every build of this repository is): `(commit date)`.
    let (commit, date) = version
        .split_once(" (")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|rest| rest.split_once(' '))
        .unwrap_or_else(|| panic!("no commit in {version:?}"));
    assert!(
        commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{commit}"
    );
    assert_eq!(date.len(), 10, "{date}");
}

#[test]
fn a_bad_closed_set_value_is_a_usage_error_before_anything_starts() {
    let world = World::new();
    world.define_test_sheep("worker", "done completed ok", None);
    for args in [
        vec!["spawn", "worker", "--backend", "foo"],
        vec!["spawn", "worker", "--placement", "sideways"],
        vec!["read", "x", "--source", "everything"],
        vec!["run", "worker", "task", "--backend", "foo"],
        vec!["done", "--status", "maybe"],
    ] {
        let output = world.run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        let bad = args[args.len() - 1];
        assert!(
            said.contains(bad) && said.contains("possible values"),
            "{said}"
        );
    }
    // With `--json` the accepted values stay in the one message.
    let (exit, code, message) = world.error(&["done", "--status", "maybe"]);
    assert_eq!((exit, code.as_str()), (2, "invalid_argument"), "{message}");
    assert_eq!(
        message,
        "invalid value 'maybe' for '--status <STATUS>' (accepted: completed, blocked, failed)"
    );
    let (code, status) = world.json_status(&["broker", "status"]);
    assert_eq!(code, 3, "no broker was started: {status}");
    assert_eq!(status["running"], false);
}

#[test]
fn broker_status_counts_other_clients_only() {
    let world = World::new();
    world.json(&["broker", "ensure"]);
    let (code, status) = world.json_status(&["broker", "status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["status"]["clients"], 0, "{status}");
}
