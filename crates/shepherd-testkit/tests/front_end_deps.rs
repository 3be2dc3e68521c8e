//! No front end depends on the broker or on another front end: the CLI, the MCP server, the
//! dashboard, the web board and the sheep-side runtime reach a herd through `shepherd-client`
//! (which does not depend on the broker either), and only the `shepherd` binary wires them
//! together. `scripts/front-end-deps` reads the resolved graph from `cargo metadata` and follows
//! normal dependencies all the way down; this test runs it on the workspace, and on a small
//! workspace that breaks the rule, so a check that passed everything would fail here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the crate sits in the workspace's crates directory")
        .to_path_buf()
}

fn check(manifest: Option<&Path>) -> Output {
    let mut command = Command::new("python3");
    command.arg(root().join("scripts/front-end-deps"));
    if let Some(manifest) = manifest {
        command.arg("--manifest-path").arg(manifest);
    }
    command
        .current_dir(root())
        .output()
        .expect("python3 runs scripts/front-end-deps")
}

#[test]
fn no_front_end_depends_on_the_broker_or_another_front_end() {
    let output = check(None);
    assert!(
        output.status.success(),
        "a front end depends on the broker or on another front end; hand the part it needs in \
         from the `shepherd` binary, or move what both share into shepherd-client:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A workspace where the CLI depends on the dashboard, and the dashboard on the broker through
/// the client crate: the check names both paths and fails.
#[test]
fn a_front_end_reaching_the_broker_or_another_front_end_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let deps: [(&str, &[&str]); 7] = [
        ("shepherd-broker", &[]),
        ("shepherd-client", &["shepherd-broker"]),
        ("shepherd-dash", &["shepherd-client"]),
        ("shepherd-cli", &["shepherd-client", "shepherd-dash"]),
        ("shepherd-mcp", &[]),
        ("shepherd-web", &[]),
        ("shepherd-sheep", &[]),
    ];
    for (name, on) in deps {
        let crate_dir = dir.path().join(name);
        std::fs::create_dir_all(crate_dir.join("src")).unwrap();
        std::fs::write(crate_dir.join("src/lib.rs"), "").unwrap();
        let lines: String = on
            .iter()
            .map(|dep| format!("{dep} = {{ path = \"../{dep}\" }}\n"))
            .collect();
        std::fs::write(
            crate_dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
                 [dependencies]\n{lines}"
            ),
        )
        .unwrap();
    }
    let members: Vec<String> = deps.iter().map(|(name, _)| format!("\"{name}\"")).collect();
    let manifest = dir.path().join("Cargo.toml");
    std::fs::write(
        &manifest,
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    let output = check(Some(&manifest));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    for line in [
        "shepherd-client depends on shepherd-broker: shepherd-client -> shepherd-broker",
        "shepherd-cli depends on shepherd-dash: shepherd-cli -> shepherd-dash",
        "shepherd-dash depends on shepherd-broker: shepherd-dash -> shepherd-client -> shepherd-broker",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("shepherd-mcp"), "{stdout}");
}
