//! The protocol's shared types must not drift from the code: the checked-in JSON Schema must be
//! what the Rust types generate now, and the pi extension's generated TypeScript must be what
//! that schema generates. Both files are rewritten by `scripts/gen-protocol-types`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::Command;

use shepherd_core::protocol::Method;
use shepherd_core::protocol::schema::{SCHEMA_PATH, protocol_schema_text};

const TYPES_PATH: &str = "integrations/pi/extensions/lib/protocol-types.ts";
const REGENERATE: &str = "run scripts/gen-protocol-types and commit the result";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    let full = repo_root().join(path);
    std::fs::read_to_string(&full)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}; {REGENERATE}", full.display()))
}

/// The first line where two texts differ, for the failure message.
fn first_difference(checked_in: &str, generated: &str) -> String {
    let line = checked_in
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
    format!(
        "first difference at line {}:\n  checked in: {:?}\n  generated:  {:?}",
        line + 1,
        checked_in.lines().nth(line).unwrap_or("<end of file>"),
        generated.lines().nth(line).unwrap_or("<end of file>"),
    )
}

#[test]
fn checked_in_schema_matches_the_protocol_types() {
    let checked_in = read(SCHEMA_PATH);
    let generated = protocol_schema_text();
    assert!(
        checked_in == generated,
        "{SCHEMA_PATH} is out of date with crates/shepherd-core/src/protocol: {REGENERATE}.\n{}",
        first_difference(&checked_in, &generated)
    );
}

/// The names `pub mod method` or `pub mod event` declares in the protocol's source.
fn declared(source: &str, module: &str) -> Vec<String> {
    let body = source
        .split(&format!("pub mod {module} {{"))
        .nth(1)
        .expect("the module is declared");
    let body = body.split("\n}").next().expect("the module ends");
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("pub const "))
        .map(|line| {
            line.split('"')
                .nth(1)
                .expect("a string constant")
                .to_owned()
        })
        .collect()
}

#[test]
fn schema_describes_every_method_and_event() {
    let schema: serde_json::Value = serde_json::from_str(&protocol_schema_text()).unwrap();
    let source = read("crates/shepherd-core/src/protocol/mod.rs");
    let methods: Vec<String> = Method::ALL.iter().map(|m| m.name().to_owned()).collect();
    for (names, key) in [(methods, "methods"), (declared(&source, "event"), "events")] {
        let described = schema["properties"][key]["properties"]
            .as_object()
            .expect("an object of entries");
        let missing: Vec<&String> = names
            .iter()
            .filter(|name| !described.contains_key(name.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{key} without an entry in protocol_schema(): {missing:?}"
        );
        assert_eq!(
            described.len(),
            names.len(),
            "{key} described but not declared"
        );
    }
}

/// Runs the pinned generator on the checked-in schema. Without it (no `scripts/setup` yet) the
/// test is skipped, unless `SHEPHERD_REQUIRE_PI=1` makes that a failure.
#[test]
fn generated_typescript_matches_the_schema() {
    let root = repo_root();
    let generator = root.join(".tools/json2ts/node_modules/json-schema-to-typescript");
    if !generator.is_dir() {
        let required = std::env::var_os("SHEPHERD_REQUIRE_PI").is_some_and(|v| v == "1");
        assert!(
            !required,
            "json-schema-to-typescript is not installed in .tools/json2ts; run scripts/setup"
        );
        eprintln!("skipped: json-schema-to-typescript is not installed (run scripts/setup)");
        return;
    }
    let output = Command::new("node")
        .arg(root.join("scripts/protocol-types.mjs"))
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "scripts/protocol-types.mjs failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let generated = String::from_utf8(output.stdout).expect("the generator prints UTF-8");
    let checked_in = read(TYPES_PATH);
    assert!(
        checked_in == generated,
        "{TYPES_PATH} is out of date with {SCHEMA_PATH}: {REGENERATE}.\n{}",
        first_difference(&checked_in, &generated)
    );
}
