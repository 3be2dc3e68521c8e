//! Puts the commit and its date into `shepherd --version` (`0.1.0 (f647512 2026-12-01)`), as
//! jj and uv do, so a bug report names the exact build. Outside a git checkout (a source
//! tarball) the version is the crate's alone.

// The build script asks git for the commit the version names.
#![allow(clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let long = match (
        git(&["rev-parse", "--short=9", "HEAD"]),
        git(&["log", "-1", "--format=%cs"]),
    ) {
        (Some(commit), Some(date)) => format!("{version} ({commit} {date})"),
        _ => version.to_owned(),
    };
    println!("cargo:rustc-env=SHEPHERD_VERSION={long}");
    // Build again when HEAD moves: HEAD itself, and the branch file it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]).map(PathBuf::from) {
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(branch).display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("packed-refs").display()
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
}
