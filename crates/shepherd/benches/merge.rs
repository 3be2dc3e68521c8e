//! The merge queue against a plain `git merge` loop (a bench binary, not a timed test): run
//! with `cargo bench --profile dev -p shepherd --bench merge` (`-- --rounds N`, 5 by default).
//!
//! Each round makes 20 branches (`shepherd/bench-<round>-<n>`), each one commit changing a file
//! of its own, all begun at the same commit, and two target branches at that commit that nobody
//! has checked out. Then, in an order that alternates from round to round, it lands all 20 into
//! each target with a check after each step:
//! - `shepherd merge <20 branches> --into <target> --check CHECK` through the real binary and
//!   broker (its merge worktree, the check, verification, the compare-and-swap of the ref, the
//!   session record);
//! - a plain shell loop doing the same steps: a worktree detached at the target, then per
//!   branch `git merge --no-ff`, the check, `git update-ref` from the old value; the worktree
//!   removed at the end.
//!
//! Both targets must end with the same tree. It reports each side's median wall time, the
//! ratio of the medians and the per-round ratios, and the median of `shepherd merge --dry-run`
//! of a round's 20 branches (commits, diffstat and conflicts of each, without a worktree).

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");
/// Branches landed per round.
const BRANCHES: usize = 20;
/// The check run after each step, by both sides.
const CHECK: &str = "test -f README.md && grep -q . f01";

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
    /// Where the plain loop makes its worktree.
    scratch: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        let scratch = dir.path().join("scratch");
        for d in [&home, &runtime, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = project.canonicalize().unwrap();
        let world = Self {
            _dir: dir,
            home,
            runtime,
            project,
            scratch,
        };
        world.git(&["init", "-q", "-b", "main"]);
        for n in 1..=BRANCHES {
            std::fs::write(world.project.join(format!("f{n:02}")), "base\n").unwrap();
        }
        std::fs::write(world.project.join("README.md"), "# bench\n").unwrap();
        world.git(&["add", "."]);
        world.git(&["commit", "-q", "-m", "start"]);
        world
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.project)
            .env("GIT_AUTHOR_NAME", "Bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
            .env("GIT_COMMITTER_NAME", "Bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn shepherd(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let out = Command::new(SHEPHERD)
            .args(args)
            .arg("--json")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .output()
            .unwrap();
        let doc = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (out.status.code().unwrap_or(-1), doc)
    }

    /// Round `round`'s branches, each one commit on `base` changing its own file; their names.
    fn branches(&self, round: usize, base: &str) -> Vec<String> {
        (1..=BRANCHES)
            .map(|n| {
                let branch = format!("shepherd/bench-{round}-{n:02}");
                let file = format!("f{n:02}");
                let blob = {
                    let mut hash = Command::new("git")
                        .args(["hash-object", "-w", "--stdin"])
                        .current_dir(&self.project)
                        .stdin(std::process::Stdio::piped())
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .unwrap();
                    std::io::Write::write_all(
                        hash.stdin.as_mut().unwrap(),
                        format!("round {round} branch {n}\n").as_bytes(),
                    )
                    .unwrap();
                    drop(hash.stdin.take());
                    let out = hash.wait_with_output().unwrap();
                    String::from_utf8_lossy(&out.stdout).trim().to_owned()
                };
                let index = self.project.join(format!(".git/bench-index-{n}"));
                let with_index = |args: &[&str]| {
                    let out = Command::new("git")
                        .args(args)
                        .current_dir(&self.project)
                        .env("GIT_INDEX_FILE", &index)
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "git {args:?}");
                    String::from_utf8_lossy(&out.stdout).trim().to_owned()
                };
                with_index(&["read-tree", base]);
                with_index(&[
                    "update-index",
                    "--cacheinfo",
                    &format!("100644,{blob},{file}"),
                ]);
                let tree = with_index(&["write-tree"]);
                let _removed = std::fs::remove_file(&index);
                let commit = self.git(&["commit-tree", &tree, "-p", base, "-m", &branch]);
                self.git(&["update-ref", &format!("refs/heads/{branch}"), &commit]);
                branch
            })
            .collect()
    }

    /// Lands `branches` into `target` with `shepherd merge`; its wall time.
    fn land_with_shepherd(&self, branches: &[String], target: &str) -> Duration {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(branches.iter().map(String::as_str));
        args.extend(["--into", target, "--check", CHECK]);
        let started = Instant::now();
        let (code, doc) = self.shepherd(&args);
        let took = started.elapsed();
        assert_eq!(code, 0, "{doc}");
        let merged = doc["branches"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["state"] == "merged")
            .count();
        assert_eq!(merged, BRANCHES, "{doc}");
        took
    }

    /// Lands `branches` into `target` with a plain shell loop of the same steps; its wall time.
    fn land_with_git(&self, branches: &[String], target: &str) -> Duration {
        let script = format!(
            r#"set -e
wt={wt}
git worktree add -q --detach "$wt" {target}
for b in {branches}; do
  old=$(git rev-parse {target})
  git -C "$wt" merge -q --no-ff --no-edit -m "Land $b" "$b"
  (cd "$wt" && sh -c '{CHECK}')
  git update-ref refs/heads/{target} "$(git -C "$wt" rev-parse HEAD)" "$old"
done
git worktree remove --force "$wt"
"#,
            wt = self.scratch.display(),
            branches = branches.join(" "),
        );
        let started = Instant::now();
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(&self.project)
            .env("GIT_AUTHOR_NAME", "Bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
            .env("GIT_COMMITTER_NAME", "Bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
            .output()
            .unwrap();
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        took
    }

    /// `shepherd merge --dry-run` of `branches`; its wall time.
    fn preview(&self, branches: &[String], target: &str) -> Duration {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(branches.iter().map(String::as_str));
        args.extend(["--into", target, "--dry-run"]);
        let started = Instant::now();
        let (code, doc) = self.shepherd(&args);
        let took = started.elapsed();
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["branches"].as_array().unwrap().len(), BRANCHES, "{doc}");
        took
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn rounds() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
}

fn path_of(path: &Path) -> String {
    path.display().to_string()
}

fn main() {
    let rounds = rounds();
    let world = World::new();
    let base = world.git(&["rev-parse", "main"]);
    // The broker starts (and the binary is paged in) before anything is timed.
    let warm = world.branches(0, &base);
    world.git(&["branch", "bench-warm", &base]);
    world.land_with_shepherd(&warm, "bench-warm");
    println!(
        "merge bench: {BRANCHES} branches per round, check `{CHECK}`, {rounds} rounds, project {}",
        path_of(&world.project)
    );
    let (mut ours, mut plain, mut previews, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let branches = world.branches(round, &base);
        let (with_shepherd, with_git) = (
            format!("land-{round}-shepherd"),
            format!("land-{round}-git"),
        );
        for target in [&with_shepherd, &with_git] {
            world.git(&["branch", target, &base]);
        }
        let preview = world.preview(&branches, &with_shepherd);
        let (a, b) = if round % 2 == 1 {
            let a = world.land_with_shepherd(&branches, &with_shepherd);
            (a, world.land_with_git(&branches, &with_git))
        } else {
            let b = world.land_with_git(&branches, &with_git);
            (world.land_with_shepherd(&branches, &with_shepherd), b)
        };
        assert_eq!(
            world.git(&["rev-parse", &format!("{with_shepherd}^{{tree}}")]),
            world.git(&["rev-parse", &format!("{with_git}^{{tree}}")]),
            "both sides must land the same tree"
        );
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        println!(
            "  round {round}: shepherd merge {:.3} s, git loop {:.3} s ({ratio:.2}×); dry run {:.3} s",
            a.as_secs_f64(),
            b.as_secs_f64(),
            preview.as_secs_f64()
        );
        ours.push(a.as_secs_f64());
        plain.push(b.as_secs_f64());
        previews.push(preview.as_secs_f64());
        ratios.push(ratio);
    }
    let (low, high) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
    let (ours, plain) = (median(ours), median(plain));
    let per = |total: f64| total * 1000.0 / BRANCHES as f64;
    println!(
        "  median: shepherd merge {ours:.3} s ({:.0} ms a branch), git loop {plain:.3} s ({:.0} ms a \
         branch): {:.2}× (rounds {low:.2}–{high:.2}×); dry run of {BRANCHES} {:.3} s",
        per(ours),
        per(plain),
        ours / plain,
        median(previews)
    );
    let _stopped = world.shepherd(&["broker", "stop"]);
}
