//! The fieldnotes scenarios that call the `shepherd` command: a process per call, as a script
//! would, with and without the project's broker running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{Measured, verify_notes};

/// `processes` processes each run `shepherd <args…>` `per_process` times in a row (a new
/// process per call). Returns calls/s with the per-call latencies.
pub(super) fn cli_calls(
    shepherd: &Path,
    project: &Path,
    processes: usize,
    per_process: usize,
    args: impl Fn(usize) -> Vec<String> + Sync,
) -> Measured {
    cli_calls_in(shepherd, project, &[], processes, per_process, args)
}

/// Like [`cli_calls`], with `env` added to every call's environment.
fn cli_calls_in(
    shepherd: &Path,
    project: &Path,
    env: &[(&str, PathBuf)],
    processes: usize,
    per_process: usize,
    args: impl Fn(usize) -> Vec<String> + Sync,
) -> Measured {
    let started = Instant::now();
    let ms: Vec<f64> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..processes)
            .map(|p| {
                let args = args(p);
                scope.spawn(move || {
                    (0..per_process)
                        .map(|_| {
                            let t0 = Instant::now();
                            let out = Command::new(shepherd)
                                .args(&args)
                                .envs(env.iter().map(|(k, v)| (k, v)))
                                .current_dir(project)
                                .output()
                                .unwrap();
                            assert!(
                                out.status.success(),
                                "shepherd {args:?}: {}",
                                String::from_utf8_lossy(&out.stderr)
                            );
                            t0.elapsed().as_secs_f64() * 1000.0
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        callers
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    Measured {
        rate: ms.len() as f64 / started.elapsed().as_secs_f64(),
        ms,
    }
}

/// `shepherd notes reserve` by `processes` processes at once, `per_process` calls each; with
/// `broker`, the project's broker runs meanwhile (so the calls go through it).
pub(super) fn cli_reserve(
    shepherd: &Path,
    processes: usize,
    per_process: usize,
    separate: bool,
    broker: bool,
) -> Measured {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap().join("project");
    fs_err::create_dir(&project).unwrap();
    // A home and runtime directory of its own, so the broker asked is this project's only.
    let home = dir.path().canonicalize().unwrap();
    let env = [
        ("HOME", home.join("home")),
        ("XDG_RUNTIME_DIR", home.join("run")),
        ("XDG_STATE_HOME", home.join("state")),
    ];
    let broker_command = |verb: &str| {
        let out = Command::new(shepherd)
            .args(["broker", verb])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&project)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "shepherd broker {verb}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if broker {
        broker_command("ensure");
    }
    let measured = cli_calls_in(shepherd, &project, &env, processes, per_process, |p| {
        let session = if separate {
            format!("cli {p}")
        } else {
            "cli".to_owned()
        };
        [
            "notes",
            "reserve",
            "--session-name",
            &session,
            "--agent",
            &format!("agent-{}", p % 4),
            "--json",
        ]
        .map(str::to_owned)
        .to_vec()
    });
    if broker {
        broker_command("stop");
    }
    let (notes, sessions) = verify_notes(&project, false);
    assert_eq!(notes, processes * per_process, "no reservation lost");
    assert_eq!(sessions, if separate { processes } else { 1 });
    measured
}
