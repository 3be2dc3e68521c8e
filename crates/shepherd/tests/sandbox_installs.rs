//! Agents installed where the sandbox hides them still run confined: a wrapper script in a
//! tool directory under `/tmp` (as `scripts/setup` writes `.tools/bin/*`) that runs a program
//! beside its own directory, one under `$HOME` that runs `$(dirname "$0")/../libexec/…`, and one
//! that reads where its program is from a file, which the sandbox cannot work out by itself
//! and which runs once the user declares it in `sandboxPaths`. The test's directories
//! are under `/tmp`, which every sandbox replaces with its own, so a program found there only
//! runs inside when the supervisor binds its installation.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use herd_support::World;

/// The sheep's own program: it takes one task and repeats it back.
const ECHO_SHEEP: &str = "#!/bin/sh\nt=$(shepherd inbox --wait 60) && shepherd done --status completed --summary \"you said: $t\"\n";

fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Puts `dir` first on the sheep's PATH and defines `name`, a confined agent running `program`.
fn define_on_path(world: &mut World, name: &str, dir: &Path, program: &str) {
    let path = std::env::var("PATH").unwrap_or_default();
    world
        .extra_env
        .push(("PATH".to_owned(), format!("{}:{path}", dir.display())));
    world.define_file(
        name,
        &format!(
            "---\nname: {name}\ndescription: A wrapped agent.\ncommand: [\"{program}\"]\nsandbox: workspace\nnetwork: none\n---\nRepeats its task.\n"
        ),
    );
}

/// `shepherd run NAME "hello"`: its exit status and what it printed.
fn run(world: &World, name: &str) -> (i32, String) {
    let out = world.run(&["run", name, "hello"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_wrapper_that_runs_a_program_beside_its_directory_runs_confined() {
    let mut world = World::new();
    let tools = world.dir.path().join("checkout/.tools");
    script(
        &tools.join("bin/echo-agent"),
        "#!/bin/sh\n# Runs the agent installed beside this directory.\ntools=$(CDPATH= cd -- \"$(dirname -- \"$0\")/..\" && pwd)\nexec \"$tools/echo/run\" \"$@\"\n",
    );
    script(&tools.join("echo/run"), ECHO_SHEEP);
    define_on_path(&mut world, "wrapped", &tools.join("bin"), "echo-agent");
    let (code, said) = run(&world, "wrapped");
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("you said: hello"), "{said}");
}

#[test]
fn an_install_the_sandbox_cannot_find_runs_once_the_user_declares_it() {
    let mut world = World::new();
    // A launcher that reads where its program is from a file beside it: nothing in its text
    // names the program, and `$HOME/bin`'s parent is `$HOME` itself, which no sandbox shows.
    let bin = world.home.join("bin");
    script(
        &bin.join("echo-agent"),
        "#!/bin/sh\nexec \"$(cat \"$(dirname \"$0\")/where\")\" \"$@\"\n",
    );
    let libexec = world.home.join("libexec");
    script(&libexec.join("echo-agent"), ECHO_SHEEP);
    std::fs::write(
        bin.join("where"),
        libexec.join("echo-agent").display().to_string(),
    )
    .unwrap();
    define_on_path(&mut world, "hidden", &bin, "echo-agent");
    let (code, said) = run(&world, "hidden");
    assert_ne!(code, 0, "{said}");
    assert!(!said.contains("you said"), "{said}");

    world.settings(&format!(
        "{{\"sandboxPaths\": [\"{}\"]}}",
        libexec.display()
    ));
    let (code, said) = run(&world, "hidden");
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("you said: hello"), "{said}");
}

#[test]
fn a_wrapper_that_runs_a_program_relative_to_itself_under_home_runs_confined() {
    let mut world = World::new();
    let bin = world.home.join("bin");
    script(
        &bin.join("echo-agent"),
        "#!/bin/sh\nexec \"$(dirname \"$0\")/../libexec/echo-agent\" \"$@\"\n",
    );
    script(&world.home.join("libexec/echo-agent"), ECHO_SHEEP);
    define_on_path(&mut world, "relative", &bin, "echo-agent");
    let (code, said) = run(&world, "relative");
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("you said: hello"), "{said}");
}
