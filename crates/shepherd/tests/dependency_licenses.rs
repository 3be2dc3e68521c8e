//! Every crate Shepherd builds with on Linux is under a licence we may ship it with.
//!
//! The project is Apache-2.0; a dependency under a copyleft or unknown licence
//! would change what users may do with the binary. `cargo metadata` works from
//! the local registry, so this check needs no network and runs with the tests.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::process::Command;

use spdx::{Expression, LicenseReq, ParseMode};

/// The platforms Shepherd is built for (it confines and supervises with Linux's own means).
const LINUX: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

/// Licences whose terms let an Apache-2.0 binary include the code.
const ACCEPTED: &[&str] = &[
    "Apache-2.0",
    "MIT",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "Zlib",
    "BSL-1.0",
    "Unicode-3.0",
    "Unlicense",
    "CC0-1.0",
];

/// Crates only the tests build, never part of a shipped binary, accepted under MPL-2.0 (a
/// file-level copyleft that binds changes to its own files, which the project never makes):
/// `webdriver`, the protocol types of the WebDriver client the browser tests drive Chromium
/// with. The test checks that no shipped crate depends on them.
const TEST_ONLY_MPL: &[&str] = &["webdriver"];

/// The packages a shipped binary can contain: those the workspace's crates reach through
/// normal and build dependencies (dev-dependencies only build tests).
fn shipped(metadata: &serde_json::Value) -> BTreeSet<String> {
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes");
    let mut seen: BTreeSet<String> = metadata["workspace_members"]
        .as_array()
        .expect("workspace members")
        .iter()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    let mut queue: Vec<String> = seen.iter().cloned().collect();
    while let Some(id) = queue.pop() {
        let Some(node) = nodes.iter().find(|n| n["id"] == id.as_str()) else {
            continue;
        };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let not_dev = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|kind| kind["kind"] != "dev");
            let pkg = dep["pkg"].as_str().unwrap_or_default().to_owned();
            if not_dev && seen.insert(pkg.clone()) {
                queue.push(pkg);
            }
        }
    }
    seen
}

/// Exceptions that only widen what a licence allows.
const ACCEPTED_EXCEPTIONS: &[&str] = &["LLVM-exception"];

fn accepts(req: &LicenseReq) -> bool {
    let licence_ok = req
        .license
        .id()
        .is_some_and(|id| ACCEPTED.contains(&id.name));
    let exception_ok = req.addition.as_ref().is_none_or(|addition| {
        ACCEPTED_EXCEPTIONS
            .iter()
            .any(|e| addition.to_string() == *e)
    });
    licence_ok && exception_ok
}

/// Why a declared licence expression is refused, or `None` when it is fine.
fn refusal(declared: Option<&str>) -> Option<String> {
    let Some(declared) = declared else {
        return Some("declares no SPDX licence".to_owned());
    };
    match Expression::parse_mode(declared, ParseMode::LAX) {
        Err(error) => Some(format!("licence {declared:?} does not parse: {error}")),
        Ok(expression) if expression.evaluate(accepts) => None,
        Ok(_) => Some(format!(
            "licence {declared:?} allows none of {}",
            ACCEPTED.join(", ")
        )),
    }
}

#[test]
fn every_dependency_has_an_accepted_licence() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        // What is built for the platforms Shepherd runs on: a crate only another platform
        // builds (a WebAssembly target's certificate bundle, Windows' APIs) never reaches it.
        .args(
            LINUX
                .iter()
                .flat_map(|triple| ["--filter-platform", triple]),
        )
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let packages = metadata["packages"].as_array().expect("packages");
    assert!(packages.len() > 50, "the metadata lists the whole graph");
    let shipped = shipped(&metadata);
    assert!(
        shipped.iter().any(|id| id.contains("#axum@"))
            && !shipped.iter().any(|id| id.contains("#fantoccini@")),
        "the shipped graph holds the web server's crates and not the tests' browser driver"
    );
    let refused: BTreeSet<String> = packages
        .iter()
        .filter_map(|package| {
            let test_only = TEST_ONLY_MPL.contains(&package["name"].as_str().unwrap_or_default())
                && package["license"] == "MPL-2.0";
            if test_only {
                return shipped
                    .contains(package["id"].as_str().unwrap_or_default())
                    .then(|| {
                        format!(
                            "{} is in a shipped binary, not only in tests",
                            package["name"]
                        )
                    });
            }
            let why = refusal(package["license"].as_str())?;
            Some(format!("{} {}: {why}", package["name"], package["version"]))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "dependencies under licences the project cannot ship:\n{}",
        refused.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_policy_refuses_copyleft_and_accepts_the_common_forms() {
    assert_eq!(refusal(Some("MIT OR Apache-2.0")), None);
    assert_eq!(refusal(Some("MIT/Apache-2.0")), None);
    assert_eq!(refusal(Some("Apache-2.0 WITH LLVM-exception")), None);
    assert_eq!(
        refusal(Some("MIT OR Apache-2.0 OR LGPL-2.1-or-later")),
        None
    );
    assert!(refusal(Some("GPL-3.0-only")).is_some());
    assert!(refusal(Some("MIT AND GPL-2.0-or-later")).is_some());
    assert!(refusal(Some("Apache-2.0 WITH Classpath-exception-2.0")).is_some());
    assert!(refusal(None).is_some());
}

#[test]
fn the_project_ships_the_licence_its_manifests_declare() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = fs_err::read_to_string(root.join("LICENSE")).expect("LICENSE at the root");
    assert!(text.contains("Apache License") && text.contains("Version 2.0"));
    let manifest = fs_err::read_to_string(root.join("Cargo.toml")).expect("workspace manifest");
    assert!(manifest.contains("license = \"Apache-2.0\""));
}
