//! The program a sheep's Herdr pane runs: Shepherd's supervisor, started by Herdr as the
//! pane's own process (a `layout.apply` leaf with an argv), so nothing is ever typed into a
//! shell. Typing raced the shell's start-up: Herdr reports the shell as owning its terminal
//! before `~/.bashrc` has run, so an rc file that reads stdin ate the line and a slow one
//! showed it twice. Secrets never appear here: they travel in the pane's environment.
//!
//! A pane closes when its program ends (Herdr has no remain-on-exit on Linux). With
//! keep-open, a small `sh` runs the supervisor as a foreground job (`set -m`, so the shell
//! takes the terminal back from the sheep afterwards) and then becomes the user's shell, so
//! the pane stays readable and usable until it is closed. Between the two it throws away any
//! input still waiting in the terminal (`shepherd flush-input`): a line a sheep pushed there
//! must never run in the user's shell.

use crate::LaunchSpec;

/// The keep-open wrapper: the supervisor, pending input thrown away by `shepherd flush-input`
/// (the pane's `SHEPHERD_BIN`, else `$1`, the supervisor's own binary), then the user's shell
/// in the same pane.
pub const KEEP_OPEN_SCRIPT: &str =
    r#"set -m; "$@"; "${SHEPHERD_BIN:-$1}" flush-input 2>/dev/null; exec "${SHELL:-/bin/sh}""#;

/// The pane's argv: `<shepherd> supervise --grace-ms <ms> … -- <program>…`, wrapped when the
/// pane is to outlive the sheep.
pub(crate) fn pane_argv(spec: &LaunchSpec, shepherd_exe: &str) -> Vec<String> {
    let mut argv = Vec::new();
    if spec.keep_open {
        argv.extend(["/bin/sh", "-c", KEEP_OPEN_SCRIPT, "shepherd-sheep"].map(str::to_owned));
    }
    argv.push(shepherd_exe.to_owned());
    argv.extend(spec.supervisor_args(&[]));
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keep_open_wrapper_runs_its_arguments_verbatim_flushes_then_runs_the_shell() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // Stands in for `shepherd`: prints its arguments, so both calls show.
        let program = dir.path().join("program");
        std::fs::write(&program, "#!/bin/sh\nprintf '%s|' \"$@\"\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let word = r#"it's a "test" $HOME `x` \n"#;
        let output = std::process::Command::new("/bin/sh")
            .args(["-c", KEEP_OPEN_SCRIPT, "shepherd-sheep"])
            .arg(&program)
            .arg(word)
            .env("SHELL", "/bin/true")
            .env_remove("SHEPHERD_BIN")
            .output()
            .unwrap();
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            format!("{word}|flush-input|")
        );
    }
}
