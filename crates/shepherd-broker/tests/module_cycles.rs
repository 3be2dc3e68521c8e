//! The broker's top-level modules — one folder per layer — must not import each other in a
//! cycle: the shared state and the commit path (`state`) sit below the sheep runtime (`sheep`),
//! the runtime below the request handlers (`handlers`), the handlers below runs (`run`), and
//! runs below the server and dispatcher (`wire`) and start-up (`serve`).
//! `scripts/module-cycles` checks that (a folder counts as one module); this test runs it on the
//! broker's sources so a new cycle fails `cargo nextest`, with the modules and the `file:line`
//! of every import that closes it in the failure message.

// Tests run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_broker_modules_import_each_other_without_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the crate sits in the workspace's crates directory");
    let output = Command::new("python3")
        .arg("scripts/module-cycles")
        .arg("crates/shepherd-broker/src")
        .current_dir(root)
        .output()
        .expect("python3 runs scripts/module-cycles");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "scripts/module-cycles found import cycles among the broker's modules ({}); break each \
         one by moving what both sides need into a lower module, or by returning an effect for \
         a higher one to carry out:\n{stdout}{stderr}",
        output.status
    );
}
