//! Sheep in a sandbox, with the real bubblewrap: a `command` sheep confined to its working
//! directory with `network: model` tries to write outside it, read the user's SSH key and reach
//! a port other than its model's, fails at each and says so in its task; the same sheep writes
//! its working directory and its note and completes, reaching its model through the
//! allow-listing proxy; `status` says which sandbox it runs in. A sandbox value Shepherd does
//! not know is refused naming the accepted ones; a machine where bubblewrap cannot make a
//! sandbox refuses the spawn (a bwrap that fails as it does without user namespaces stands in:
//! that fault cannot be made for real here); a crash inside the sandbox leaves nothing behind;
//! a `strict` sheep in its own worktree does not see the project outside it, and commits (its
//! branch brought home at close); a
//! confined sheep in a tmux window keeps its terminal and still does not see the home directory;
//! with `network: none` nothing but the broker answers; a confined sheep that connects to the
//! broker socket as its parent is refused (it cannot read the herd's key).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use herd_support::{World, kill9, wait_gone};
use serde_json::Value;
use shepherd_testkit::git::git;

/// A definition running `script` under `sh -c`, with extra frontmatter.
fn define_script(world: &World, name: &str, frontmatter: &str, script: &str) {
    let command = serde_json::to_string(&["sh", "-c", script]).unwrap();
    world.define_file(
        name,
        &format!(
            "---\nname: {name}\ndescription: A confined test sheep.\ncommand: {command}\n{frontmatter}\n---\nA test sheep.\n"
        ),
    );
}

/// The task once settled (`watch` exits non-zero for a failed one: that is not checked here).
fn settled(world: &World, task: &str) -> Value {
    world.json_status(&["watch", task, "--wait", "60"]).1["settled"][0].clone()
}

fn delegate(world: &World, agent: &str, text: &str) -> String {
    world.delegate(agent, text)["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A stand-in model endpoint: it greets every connection with one line, and reports it.
fn model_endpoint() -> (u16, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (reached, reports) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _greeted = stream.write_all(b"model-here\n");
            let _reported = reached.send(());
        }
    });
    (port, reports)
}

#[test]
fn a_confined_command_sheep_is_refused_outside_its_directory_and_completes_inside() {
    let mut world = World::new();
    let outside = world.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let ssh = world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY\n").unwrap();
    let (model_port, model_reached) = model_endpoint();
    // Another service on this machine, reachable without the sandbox.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    world.extra_env.push((
        "OPENAI_BASE_URL".to_owned(),
        format!("http://127.0.0.1:{model_port}/v1"),
    ));
    let script = format!(
        r#"try() {{ if "$@" 2>/dev/null; then echo "$1:allowed"; else echo "$1:refused"; fi; }}
write_outside() {{ echo escaped > {outside}/escaped; }}
read_key() {{ cat "$HOME/.ssh/id_ed25519" > /dev/null; }}
other_port() {{ bash -c 'echo hi > /dev/tcp/127.0.0.1/{other_port}'; }}
model() {{ bash -c 'exec 3<>/dev/tcp/127.0.0.1/{model_port}; read -r line <&3; [ "$line" = model-here ]'; }}
shepherd inbox --wait 30 > /dev/null
tried="$(try write_outside) $(try read_key) $(try other_port) $(try model)"
shepherd done --status failed --summary "$tried"
shepherd inbox --wait 30 > /dev/null
echo made inside > inside.txt
echo "Wrote inside.txt while confined." >> "$(shepherd note)"
shepherd done --status completed --summary "inside"
sleep 60"#,
        outside = outside.display(),
    );
    define_script(
        &world,
        "confined",
        "sandbox: workspace\nnetwork: model",
        &script,
    );
    let agent = world.spawn("confined", "");
    let status = world.json(&["status", &agent]);
    assert_eq!(status["sandbox"], "workspace", "{status}");
    let shown = String::from_utf8(world.run(&["status", &agent]).stdout).unwrap();
    assert!(shown.contains("in sandbox workspace"), "{shown}");

    let escape = settled(&world, &delegate(&world, &agent, "try to get out"));
    assert_eq!(escape["status"], "failed", "{escape}");
    assert_eq!(
        escape["summary"],
        "write_outside:refused read_key:refused other_port:refused model:allowed",
        "{escape}"
    );
    assert!(!outside.join("escaped").exists());
    assert!(
        matches!(other.accept(), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
        "the other port was reached"
    );
    model_reached
        .recv_timeout(Duration::from_secs(10))
        .expect("the model was reached through the proxy");

    let work = settled(&world, &delegate(&world, &agent, "work inside"));
    assert_eq!(work["status"], "completed", "{work}");
    assert_eq!(
        std::fs::read_to_string(world.project.join("inside.txt")).unwrap(),
        "made inside\n"
    );
    let note = std::fs::read_to_string(work["note"].as_str().unwrap()).unwrap();
    assert!(
        note.contains("Wrote inside.txt while confined.") && note.contains("sandbox: workspace"),
        "{note}"
    );
}

#[test]
fn an_unknown_sandbox_is_refused_naming_the_accepted_values() {
    let world = World::new();
    define_script(&world, "jailed", "sandbox: jail", "sleep 60");
    let (_, _, message) = world.error(&["spawn", "jailed"]);
    assert!(
        message.contains("invalid sandbox \"jail\": expected off, workspace or strict"),
        "{message}"
    );
}

#[test]
fn a_machine_that_cannot_make_the_sandbox_refuses_the_spawn_saying_what_is_missing() {
    let mut world = World::new();
    // What bwrap says where user namespaces are off: that cannot be switched off here.
    let bin = world.dir.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    world
        .extra_env
        .push(("PATH".to_owned(), format!("{}:{path}", bin.display())));
    define_script(&world, "confined", "sandbox: strict", "sleep 60");
    let (_, code, message) = world.error(&["spawn", "confined"]);
    assert_eq!(code, "sandbox_unavailable", "{message}");
    assert!(
        message.contains("No permissions to create new namespace")
            && message.contains("user namespaces"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// Waits (30 s at most) until a sheep tells the parent `words`.
fn sheep_says(world: &World, words: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the sheep never said {words:?}");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|item| item["content"] == words)
        {
            return;
        }
    }
}

#[test]
fn a_crash_inside_the_sandbox_leaves_no_process_behind() {
    let world = World::new();
    let marker = format!("sandbox-crash-{}", std::process::id());
    // A sheep that leaves a child of its own running, says so, then waits.
    let script = format!(
        "sh -c 'sleep 600; : {marker}' & shepherd tell shepherd started; sleep 600; : {marker}"
    );
    define_script(&world, "crashing", "sandbox: workspace", &script);
    let agent = world.spawn("crashing", "");
    let pid = world.json(&["status", &agent])["pid"].as_u64().unwrap() as u32;
    sheep_says(&world, "started");
    let inside = procs::mentioning(&marker);
    assert!(inside.len() >= 2, "{inside:?}");
    // The sandbox itself is killed, as a crash would end it.
    kill9(pid);
    for left in inside {
        assert!(
            wait_gone(left, Duration::from_secs(10)),
            "process {left} outlived its sandbox"
        );
    }
}

#[test]
fn a_strict_isolated_sheep_sees_its_worktree_not_the_project_and_commits_there() {
    let world = World::new();
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "# project\n").unwrap();
    git(&world.project, &["add", "README.md"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    let script = r#"shepherd inbox --wait 30 > /dev/null
if cat "$SHEPHERD_PROJECT/README.md" > /dev/null 2>&1; then p=project-seen; else p=project-hidden; fi
echo made > made.txt
if git -c user.name=S -c user.email=s@example.invalid add made.txt && git -c user.name=S -c user.email=s@example.invalid commit -qm made; then c=committed; else c=not-committed; fi
shepherd done --status completed --summary "$p $c $(cat README.md)"
sleep 60"#;
    define_script(&world, "strict", "sandbox: strict", script);
    let spawned = world.json(&["spawn", "strict", "--isolate"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let branch = spawned["worktree"]["branch"].as_str().unwrap().to_owned();
    let done = settled(&world, &delegate(&world, &agent, "work in your worktree"));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["summary"], "project-hidden committed # project",
        "{done}"
    );
    // It committed into its own repository; its branch comes home when it is closed.
    world.json(&["close", &agent]);
    let log = git(&world.project, &["log", "--format=%s", &branch]);
    assert_eq!(log.lines().next(), Some("made"), "{log}");
    assert!(!world.project.join("made.txt").exists());
}

#[test]
fn a_confined_sheep_in_a_tmux_window_works_with_its_home_hidden() {
    let world = World::new().with_private_tmux();
    std::fs::write(world.home.join("secret.txt"), "not for sheep\n").unwrap();
    let script = r#"shepherd inbox --wait 30 > /dev/null
if [ -t 0 ]; then t=terminal; else t=no-terminal; fi
if cat "$HOME/secret.txt" > /dev/null 2>&1; then s=secret-read; else s=secret-hidden; fi
shepherd done --status completed --summary "$t $s"
sleep 60"#;
    define_script(&world, "windowed", "sandbox: workspace", script);
    let spawned = world.json(&["spawn", "windowed", "--backend", "tmux"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let done = settled(&world, &delegate(&world, &agent, "look"));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["summary"], "terminal secret-hidden", "{done}");
}

#[test]
fn network_none_reaches_nothing_but_the_broker() {
    let mut world = World::new();
    let (model_port, _model_reached) = model_endpoint();
    // Even its model's endpoint is out of reach: `none` allows nothing.
    world.extra_env.push((
        "OPENAI_BASE_URL".to_owned(),
        format!("http://127.0.0.1:{model_port}/v1"),
    ));
    let script = format!(
        r#"shepherd inbox --wait 30 > /dev/null
if bash -c 'echo hi > /dev/tcp/127.0.0.1/{model_port}' 2>/dev/null; then m=model-reached; else m=model-refused; fi
shepherd done --status completed --summary "$m"
sleep 60"#
    );
    define_script(
        &world,
        "offline",
        "sandbox: workspace\nnetwork: none",
        &script,
    );
    let agent = world.spawn("offline", "");
    let done = settled(&world, &delegate(&world, &agent, "try the network"));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["summary"], "model-refused", "{done}");
}

#[test]
fn a_confined_sheep_cannot_act_as_its_parent_through_the_socket() {
    let world = World::new();
    // The sheep is told its parent's identity: the broker must still see it is a sheep.
    let script = r#"identity=$(shepherd inbox --wait 30)
shepherd herd --parent-session "$identity" --json > answer.json 2>/dev/null
code=$(sed -n 's/.*"code":"\([a-z_]*\)".*/\1/p' answer.json)
shepherd done --status completed --summary "posing: ${code:-allowed}"
sleep 60"#;
    define_script(&world, "poser", "sandbox: workspace", script);
    let agent = world.spawn("poser", "");
    let identity = world.json(&["broker", "status"])["status"]["parentIdentity"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = settled(&world, &delegate(&world, &agent, &identity));
    // Inside the sandbox the herd's key is hidden: the parent role is refused for want of it.
    assert_eq!(done["summary"], "posing: unauthenticated", "{done}");
}
