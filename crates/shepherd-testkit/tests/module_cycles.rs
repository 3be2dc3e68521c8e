//! No crate's top-level modules may import each other in a cycle: in the broker the shared
//! state and the commit path (`state`) sit below the sheep runtime (`sheep`), the runtime below
//! the request handlers (`handlers`), the handlers below runs (`run`), and runs below the
//! server and dispatcher (`wire`) and start-up (`serve`); every other crate keeps the same
//! one-way order among its own modules, and inside each folder among its files.
//! `scripts/module-cycles` checks one crate, level by level, with no exemption;
//! this test runs it on every crate of the workspace so a new cycle
//! fails `cargo nextest`, with the modules and the `file:line` of every import that closes it
//! in the failure message.

// Tests run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::process::Command;

#[test]
fn no_crate_s_modules_import_each_other_in_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the crate sits in the workspace's crates directory");
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("the workspace has a crates directory")
        .map(|entry| entry.expect("a readable crates directory").path())
        .filter(|dir| dir.join("src").is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() > 10, "only {} crates found", crates.len());
    let mut failures = Vec::new();
    for dir in &crates {
        let output = Command::new("python3")
            .arg("scripts/module-cycles")
            .arg(dir.join("src"))
            .current_dir(root)
            .output()
            .expect("python3 runs scripts/module-cycles");
        if !output.status.success() {
            failures.push(format!(
                "{}:\n{}{}",
                dir.display(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "scripts/module-cycles found import cycles; break each one by moving what both sides \
         need into a lower module, or by returning an effect for a higher one to carry out:\n{}",
        failures.join("\n")
    );
}

/// The check finds a cycle between two files of one folder, not only between folders.
#[test]
fn a_cycle_inside_a_folder_is_found() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the crate sits in the workspace's crates directory");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("layer")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod layer;\n").unwrap();
    std::fs::write(src.join("layer/mod.rs"), "mod x;\nmod y;\n").unwrap();
    std::fs::write(src.join("layer/x.rs"), "use super::y::A;\npub struct B;\n").unwrap();
    std::fs::write(
        src.join("layer/y.rs"),
        "use crate::layer::x::B;\npub struct A;\n",
    )
    .unwrap();
    let output = Command::new("python3")
        .arg(root.join("scripts/module-cycles"))
        .arg(&src)
        .output()
        .expect("python3 runs scripts/module-cycles");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stdout.contains("cycle 1 in layer: 2 modules: x, y"),
        "{stdout}"
    );
}
