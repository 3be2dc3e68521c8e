//! The loopback hosts remote-sheep tests stand on: a real `sshd` per host, reached through a
//! client configuration's alias, each session with its own `HOME`; a killed server is a dropped
//! link, and a restarted one answers again with the same keys.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use shepherd_testkit::sshd::{LoopbackHost, required};

fn ssh(config: &Path, alias: &str, command: &str) -> Output {
    Command::new("ssh")
        .arg("-F")
        .arg(config)
        .args([alias, command])
        .stdin(Stdio::null())
        .output()
        .expect("ssh runs")
}

#[test]
fn two_hosts_run_commands_in_their_own_homes_and_a_killed_link_comes_back() {
    if !required() {
        return;
    }
    let mut devbox = LoopbackHost::start("devbox").expect("devbox starts");
    let container = LoopbackHost::start("container").expect("container starts");
    let devbox_config = devbox.ssh_config().unwrap();
    let container_config = container.ssh_config().unwrap();

    for (host, config) in [(&devbox, &devbox_config), (&container, &container_config)] {
        let out = ssh(config, &host.alias, "printf %s \"$HOME\"");
        assert!(out.status.success(), "{}: {out:?}", host.alias);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            host.home.to_string_lossy(),
            "{} runs in its own HOME",
            host.alias
        );
    }
    assert_ne!(devbox.home, container.home);

    devbox.kill();
    let dropped = ssh(&devbox_config, "devbox", "true");
    assert!(
        !dropped.status.success(),
        "a killed host refuses: {dropped:?}"
    );
    devbox.restart().expect("devbox comes back");
    let project = devbox.project.display().to_string();
    let back = ssh(
        &devbox_config,
        "devbox",
        &format!("test -d '{project}' && echo back"),
    );
    assert!(back.status.success(), "{back:?}");
    assert_eq!(String::from_utf8_lossy(&back.stdout).trim(), "back");
}
