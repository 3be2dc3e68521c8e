//! Git in a test's repository: one command, run with a fixed test identity so commits work on a
//! machine with no git configuration, failing the test with git's own words when it fails.

use std::path::Path;
use std::process::Command;

/// Runs `git <args>` in `dir` and returns its standard output, trimmed; panics when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|err| panic!("git {args:?} in {}: {err}", dir.display()));
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
