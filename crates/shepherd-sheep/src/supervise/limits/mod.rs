//! The sheep's resource limits, applied by its supervisor to its whole process tree, confined
//! or not.
//!
//! The broker decides the limits (`--limit-pids`, `--limit-memory`, `--limit-cpus`,
//! `--limit-disk`); the supervisor applies them with what the machine it runs on offers: a
//! cgroup of the sheep's own ([`cgroup`]: v2 where a writable unified hierarchy has the
//! controllers, else the v1 controllers as root), otherwise resource limits of its processes
//! ([`rlimit`]). Disk is always the largest file it may write (`RLIMIT_FSIZE`) and, confined,
//! the size of each private tmpfs bubblewrap makes (`/tmp`, `$HOME`, the hidden directories).
//! What could not be applied as asked is reported with the sheep's start ([`Enforcement`]), and
//! when the sheep ends, the limit that stopped it, if one did.

mod cgroup;
mod rlimit;

use std::os::fd::OwnedFd;

use clap::Args;
use shepherd_core::resources::{Bytes, Cpus, Enforcement, Limits, Mechanism, Resource, Unapplied};

/// The limits the broker asks for (none given: not limited).
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Most processes and threads of the sheep's tree.
    #[arg(long, value_name = "N")]
    pub limit_pids: Option<u32>,
    /// Most memory of the sheep's tree (bytes, or with K, M, G, T).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub limit_memory: Option<Bytes>,
    /// Most CPUs (e.g. 1.5).
    #[arg(long, value_name = "CPUS", value_parser = cpus)]
    pub limit_cpus: Option<Cpus>,
    /// Largest file, and size of each private tmpfs (bytes, or with K, M, G, T).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub limit_disk: Option<Bytes>,
}

fn size(text: &str) -> Result<Bytes, String> {
    text.parse()
        .map_err(|()| format!("expected {}", Resource::Memory.expected()))
}

fn cpus(text: &str) -> Result<Cpus, String> {
    text.parse()
        .map_err(|()| format!("expected {}", Resource::Cpus.expected()))
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            pids: self.limit_pids,
            memory: self.limit_memory,
            cpus: self.limit_cpus,
            disk: self.limit_disk,
        }
    }
}

/// The sheep's limits as this machine applies them; its cgroup goes when this is dropped.
#[derive(Debug)]
pub(super) struct Applied {
    group: Option<cgroup::Group>,
    rlimits: Vec<(Resource, rlimit::Set)>,
    /// How, and what could not be applied as asked; `None` when nothing is limited.
    pub(super) enforcement: Option<Enforcement>,
}

impl Applied {
    /// Makes what the sheep `id` starts in: its cgroup where one can be made, the rlimits it
    /// starts under otherwise (and `RLIMIT_FSIZE` always).
    pub(super) fn prepare(args: &LimitArgs, id: &str) -> Self {
        let limits = args.limits();
        if limits.is_none() {
            return Self {
                group: None,
                rlimits: Vec::new(),
                enforcement: None,
            };
        }
        // The group's directory is named after the sheep; anything that is not a plain name
        // (no `/`, no `..`) names it after this supervisor instead.
        let plain = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        let name = if plain {
            id.to_owned()
        } else {
            format!("supervisor-{}", std::process::id())
        };
        let group = cgroup::Group::make(&cgroup::Hierarchies::here(), &name, &limits);
        let in_group = |resource| group.as_ref().is_some_and(|g| g.bounds.contains(&resource));
        let root = rustix::process::geteuid().is_root();
        let mut rlimits = Vec::new();
        let mut unapplied = Vec::new();
        let mut short = |resource, why: &str| {
            unapplied.push(Unapplied {
                resource,
                why: why.to_owned(),
            });
        };
        if let Some(pids) = limits.pids.filter(|_| !in_group(Resource::Pids)) {
            if root {
                short(
                    Resource::Pids,
                    "not applied (no cgroup could be made, and RLIMIT_NPROC does not hold root)",
                );
            } else {
                rlimits.push((Resource::Pids, rlimit::Set::processes(pids)));
                short(
                    Resource::Pids,
                    "counted over all the user's processes (RLIMIT_NPROC)",
                );
            }
        }
        if let Some(memory) = limits.memory.filter(|_| !in_group(Resource::Memory)) {
            rlimits.push((Resource::Memory, rlimit::Set::memory(memory.get())));
            short(Resource::Memory, "per process (RLIMIT_DATA)");
        }
        if limits.cpus.is_some() && !in_group(Resource::Cpus) {
            short(Resource::Cpus, "not applied (no cgroup could be made)");
        }
        if let Some(disk) = limits.disk {
            rlimits.push((Resource::Disk, rlimit::Set::file_size(disk.get())));
        }
        let by = group.as_ref().map_or(Mechanism::Rlimits, |g| g.mechanism);
        Self {
            group,
            rlimits,
            enforcement: Some(Enforcement { by, unapplied }),
        }
    }

    /// What the sheep does between fork and exec to start under its limits.
    pub(super) fn hook(&self) -> ChildHook {
        ChildHook {
            procs: self
                .group
                .as_ref()
                .map(cgroup::Group::entry)
                .unwrap_or_default(),
            rlimits: self.rlimits.iter().map(|(_, set)| *set).collect(),
        }
    }

    /// The limit that stopped the sheep, if one did: its cgroup's counters, else (for an
    /// rlimit or a full tmpfs) how it ended and what it printed last.
    pub(super) fn stopped_by(
        &self,
        code: Option<i32>,
        signal: Option<i32>,
        tail: &str,
    ) -> Option<Resource> {
        if let Some(resource) = self.group.as_ref().and_then(cgroup::Group::stopped_by) {
            return Some(resource);
        }
        if code == Some(0) {
            return None;
        }
        let limited: Vec<Resource> = self.rlimits.iter().map(|(r, _)| *r).collect();
        rlimit::stopped_by(signal, tail, &limited)
    }

    /// Ends whatever of the sheep's tree is still in its cgroup.
    pub(super) fn end(&self, deadline: std::time::Instant) {
        if let Some(group) = &self.group {
            group.empty(deadline);
        }
    }
}

/// What the forked sheep does before it runs its program: enter its cgroup, set its rlimits.
#[derive(Debug)]
pub(super) struct ChildHook {
    procs: Vec<OwnedFd>,
    rlimits: Vec<rlimit::Set>,
}

// SAFETY: `run` makes only `write` and `setrlimit` system calls on descriptors and values
// prepared before the fork; it allocates nothing and takes no lock.
#[allow(unsafe_code)]
unsafe impl shepherd_term::platform::BeforeExec for ChildHook {
    /// Runs in the forked child before exec: enters the cgroups, sets the rlimits.
    fn run(&self) -> std::io::Result<()> {
        for procs in &self.procs {
            rustix::io::write(procs, b"0").map_err(std::io::Error::from)?;
        }
        for set in &self.rlimits {
            set.apply()?;
        }
        Ok(())
    }
}

/// Gives each private tmpfs of a bubblewrap command line the disk limit as its size (bwrap's
/// `--size`, which applies to the `--tmpfs` right after it). Left as it is when this bwrap has
/// no `--size` (before 0.8): then only `RLIMIT_FSIZE` bounds what it writes there.
pub(super) fn size_tmpfs(argv: &mut Vec<String>, disk: Option<Bytes>) {
    let Some(disk) = disk else { return };
    if !argv.iter().any(|arg| arg == "--tmpfs") || !bwrap_has_size(&argv[0]) {
        return;
    }
    let mut sized = Vec::with_capacity(argv.len() + 8);
    for arg in argv.drain(..) {
        if arg == "--tmpfs" {
            sized.extend(["--size".to_owned(), disk.get().to_string()]);
        }
        sized.push(arg);
    }
    *argv = sized;
}

fn bwrap_has_size(bwrap: &str) -> bool {
    std::process::Command::new(bwrap)
        .arg("--help")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("--size"))
}

/// Collects the exit status of every child that has ended, so the killed leftovers of a
/// cgroup do not stay zombies in it.
fn reap_zombies() {
    use rustix::process::{WaitOptions, wait};
    while let Ok(Some(_)) = wait(WaitOptions::NOHANG) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tmpfs_gets_the_disk_limit_as_its_size_right_before_it() {
        let mut argv: Vec<String> = [
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/home/u",
            "--",
            "sh",
        ]
        .map(str::to_owned)
        .to_vec();
        size_tmpfs(&mut argv, Some(Bytes(64 << 20)));
        let size = (64u64 << 20).to_string();
        assert_eq!(
            argv,
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--size",
                &size,
                "--tmpfs",
                "/tmp",
                "--size",
                &size,
                "--tmpfs",
                "/home/u",
                "--",
                "sh"
            ]
        );
        let mut untouched = vec!["sh".to_owned()];
        size_tmpfs(&mut untouched, Some(Bytes(64 << 20)));
        assert_eq!(untouched, ["sh"]);
    }

    #[test]
    fn the_arguments_read_sizes_with_units() {
        assert_eq!(size("4G"), Ok(Bytes(4 << 30)));
        assert!(size("4 gallons").unwrap_err().contains("K, M, G or T"));
        assert_eq!(cpus("1.5").map(Cpus::millis), Ok(1500));
    }
}
