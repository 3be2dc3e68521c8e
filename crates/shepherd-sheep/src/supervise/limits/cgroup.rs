//! A cgroup of the sheep's own, so its limits hold for its whole process tree.
//!
//! Two kinds of machine give one. Where a cgroup v2 (unified) hierarchy has the controllers
//! and a directory this user may write — the machine's root as root, or the subtree the user's
//! systemd delegates to them (`user@UID.service`) — the sheep gets `<base>/shepherd/<id>` there.
//! Where the controllers are cgroup v1 hierarchies (a hybrid layout, as on this project's own
//! machines) and this process may write its own cgroup in them (as root), the sheep gets
//! `<own cgroup>/shepherd/<id>` in each controller it needs, the way Podman's cgroupfs manager
//! does; nesting under the supervisor's own cgroup keeps the sheep inside whatever limits the
//! machine already puts on its parent. The groups are made before the sheep starts, the sheep
//! enters them between fork and exec (by writing `0` to `cgroup.procs` through a descriptor
//! opened beforehand), and they are emptied and removed when the supervisor ends; groups a
//! killed supervisor left behind are removed by the next one once empty.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use shepherd_core::resources::{Limits, Mechanism, Resource};

/// The directory every sheep's group is made in, below a base.
const SHEPHERD_DIR: &str = "shepherd";
/// How old an empty group must be before another supervisor sweeps it away: older than any
/// supervisor needs between making its group and starting its sheep in it.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// A controller a limit needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Controller {
    Pids,
    Memory,
    Cpu,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
            Self::Cpu => "cpu",
        }
    }

    fn of(resource: Resource) -> Option<Self> {
        match resource {
            Resource::Pids => Some(Self::Pids),
            Resource::Memory => Some(Self::Memory),
            Resource::Cpus => Some(Self::Cpu),
            Resource::Disk => None,
        }
    }
}

/// The cgroup hierarchies this process is in, as `/proc/self/mountinfo` and
/// `/proc/self/cgroup` tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Hierarchies {
    /// The unified hierarchy's mount point and this process's cgroup in it.
    v2: Option<(PathBuf, String)>,
    /// Each v1 hierarchy: its controllers and this process's cgroup directory in it.
    v1: Vec<(Vec<String>, PathBuf)>,
}

impl Hierarchies {
    /// This process's hierarchies.
    pub(super) fn here() -> Self {
        let mountinfo = fs_err::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let cgroup = fs_err::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Self::parse(&mountinfo, &cgroup)
    }

    fn parse(mountinfo: &str, cgroup: &str) -> Self {
        // `hierarchy-id:controllers:path`; v2 is `0::path`.
        let own: Vec<(&str, &str)> = cgroup
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ':');
                let _id = parts.next()?;
                Some((parts.next()?, parts.next()?))
            })
            .collect();
        let mut found = Self::default();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let (Some(root), Some(point), Some(kind), Some(options)) =
                (left.get(3), left.get(4), right.first(), right.get(2))
            else {
                continue;
            };
            let dir = |path: &str| {
                let inside = path.strip_prefix(root).unwrap_or(path);
                Path::new(point).join(inside.trim_start_matches('/'))
            };
            match *kind {
                "cgroup2" => {
                    if let Some((_, path)) =
                        own.iter().find(|(controllers, _)| controllers.is_empty())
                    {
                        found.v2 = Some((PathBuf::from(point), (*path).to_owned()));
                    }
                }
                "cgroup" => {
                    let controllers: Vec<String> = options
                        .split(',')
                        .filter(|o| ["pids", "memory", "cpu"].contains(o))
                        .map(str::to_owned)
                        .collect();
                    if controllers.is_empty() {
                        continue;
                    }
                    let path = own.iter().find(|(names, _)| {
                        names
                            .split(',')
                            .any(|name| controllers.iter().any(|c| c == name))
                    });
                    if let Some((_, path)) = path {
                        found.v1.push((controllers, dir(path)));
                    }
                }
                _ => {}
            }
        }
        found
    }
}

/// The sheep's cgroup(s), made and ready for it to enter.
#[derive(Debug)]
pub(super) struct Group {
    /// Which kind.
    pub(super) mechanism: Mechanism,
    /// The resources it bounds.
    pub(super) bounds: BTreeSet<Resource>,
    /// Its directories (one per v1 hierarchy, one for v2).
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each, opened for writing before the fork.
    procs: Vec<OwnedFd>,
}

impl Group {
    /// Makes the sheep `id`'s group for what of `limits` a cgroup can bound here; `None` when
    /// no cgroup can be made.
    pub(super) fn make(hierarchies: &Hierarchies, id: &str, limits: &Limits) -> Option<Self> {
        let wanted: BTreeSet<Controller> = Resource::ALL
            .into_iter()
            .filter(|r| limits.shown(*r).is_some())
            .filter_map(Controller::of)
            .collect();
        if wanted.is_empty() {
            return None;
        }
        Self::make_v2(hierarchies, id, limits, &wanted)
            .or_else(|| Self::make_v1(hierarchies, id, limits, &wanted))
    }

    fn make_v2(
        hierarchies: &Hierarchies,
        id: &str,
        limits: &Limits,
        wanted: &BTreeSet<Controller>,
    ) -> Option<Self> {
        let (mount, _own) = hierarchies.v2.as_ref()?;
        let uid = rustix::process::getuid().as_raw();
        let candidates = [
            mount.clone(),
            mount.join(format!("user.slice/user-{uid}.slice/user@{uid}.service")),
        ];
        let base = candidates.into_iter().find(|base| {
            let available =
                fs_err::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
            wanted
                .iter()
                .all(|c| available.split_whitespace().any(|a| a == c.name()))
                && writable(base)
        })?;
        let enable = |dir: &Path| {
            for controller in wanted {
                let _done = write(
                    &dir.join("cgroup.subtree_control"),
                    &format!("+{}", controller.name()),
                );
            }
        };
        enable(&base);
        let parent = base.join(SHEPHERD_DIR);
        let _made = fs_err::create_dir(&parent);
        enable(&parent);
        sweep(&parent);
        let dir = parent.join(id);
        let _made = fs_err::create_dir(&dir);
        let mut bounds = BTreeSet::new();
        let mut set = |file: &str, value: String, resource: Resource| {
            if write(&dir.join(file), &value).is_ok() {
                bounds.insert(resource);
            }
        };
        if let Some(pids) = limits.pids {
            set("pids.max", pids.to_string(), Resource::Pids);
        }
        if let Some(memory) = limits.memory {
            set("memory.max", memory.get().to_string(), Resource::Memory);
            let _no_swap = write(&dir.join("memory.swap.max"), "0");
        }
        if let Some(cpus) = limits.cpus {
            let quota = u64::from(cpus.millis()) * 100;
            set("cpu.max", format!("{quota} 100000"), Resource::Cpus);
        }
        Self::finish(Mechanism::CgroupV2, bounds, vec![dir])
    }

    fn make_v1(
        hierarchies: &Hierarchies,
        id: &str,
        limits: &Limits,
        wanted: &BTreeSet<Controller>,
    ) -> Option<Self> {
        let mut bounds = BTreeSet::new();
        let mut dirs = Vec::new();
        for (controllers, own) in &hierarchies.v1 {
            let serves: Vec<Controller> = wanted
                .iter()
                .copied()
                .filter(|c| controllers.iter().any(|name| name == c.name()))
                .collect();
            if serves.is_empty() || !writable(own) {
                continue;
            }
            let parent = own.join(SHEPHERD_DIR);
            let _made = fs_err::create_dir(&parent);
            sweep(&parent);
            let dir = parent.join(id);
            if fs_err::create_dir(&dir).is_err() && !dir.is_dir() {
                continue;
            }
            let mut set = |file: &str, value: String, resource: Resource| {
                if write(&dir.join(file), &value).is_ok() {
                    bounds.insert(resource);
                }
            };
            for controller in serves {
                match controller {
                    Controller::Pids => {
                        if let Some(pids) = limits.pids {
                            set("pids.max", pids.to_string(), Resource::Pids);
                        }
                    }
                    Controller::Memory => {
                        if let Some(memory) = limits.memory {
                            let bytes = memory.get().to_string();
                            set("memory.limit_in_bytes", bytes.clone(), Resource::Memory);
                            // With swap accounting, swap counts too (never below the limit).
                            let _with_swap =
                                write(&dir.join("memory.memsw.limit_in_bytes"), &bytes);
                        }
                    }
                    Controller::Cpu => {
                        if let Some(cpus) = limits.cpus {
                            let _period = write(&dir.join("cpu.cfs_period_us"), "100000");
                            let quota = u64::from(cpus.millis()) * 100;
                            set("cpu.cfs_quota_us", quota.to_string(), Resource::Cpus);
                        }
                    }
                }
            }
            dirs.push(dir);
        }
        Self::finish(Mechanism::CgroupV1, bounds, dirs)
    }

    fn finish(
        mechanism: Mechanism,
        bounds: BTreeSet<Resource>,
        dirs: Vec<PathBuf>,
    ) -> Option<Self> {
        let procs: Option<Vec<OwnedFd>> = dirs
            .iter()
            .map(|dir| {
                fs_err::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))
                    .ok()
                    .map(|file| OwnedFd::from(file.into_parts().0))
            })
            .collect();
        match procs {
            Some(procs) if !bounds.is_empty() => Some(Self {
                mechanism,
                bounds,
                dirs,
                procs,
            }),
            _ => {
                for dir in &dirs {
                    let _removed = fs_err::remove_dir(dir);
                }
                None
            }
        }
    }

    /// The descriptors the sheep writes `0` to between fork and exec, to enter its group.
    pub(super) fn entry(&self) -> Vec<OwnedFd> {
        self.procs
            .iter()
            .filter_map(|fd| fd.try_clone().ok())
            .collect()
    }

    /// The resource whose limit the group enforced by stopping something: an out-of-memory
    /// kill first, then a refused fork.
    pub(super) fn stopped_by(&self) -> Option<Resource> {
        let count = |file: &str, key: &str| -> u64 {
            self.dirs
                .iter()
                .filter_map(|dir| fs_err::read_to_string(dir.join(file)).ok())
                .map(|text| counter(&text, key))
                .sum()
        };
        let (oom, forks) = match self.mechanism {
            Mechanism::CgroupV2 => (
                count("memory.events", "oom_kill"),
                count("pids.events", "max"),
            ),
            _ => (
                count("memory.oom_control", "oom_kill"),
                count("pids.events", "max"),
            ),
        };
        if oom > 0 && self.bounds.contains(&Resource::Memory) {
            Some(Resource::Memory)
        } else if forks > 0 && self.bounds.contains(&Resource::Pids) {
            Some(Resource::Pids)
        } else {
            None
        }
    }

    /// Kills whatever still runs in the group (the sheep's leftovers, wherever they moved in
    /// its tree), until it is empty or `deadline` passes.
    pub(super) fn empty(&self, deadline: std::time::Instant) {
        loop {
            let pids: Vec<u32> = self
                .dirs
                .iter()
                .filter_map(|dir| fs_err::read_to_string(dir.join("cgroup.procs")).ok())
                .flat_map(|text| {
                    text.lines()
                        .filter_map(|line| line.trim().parse().ok())
                        .collect::<Vec<u32>>()
                })
                .collect();
            if pids.is_empty() || std::time::Instant::now() >= deadline {
                return;
            }
            for pid in pids {
                if let Some(pid) = i32::try_from(pid)
                    .ok()
                    .and_then(rustix::process::Pid::from_raw)
                {
                    let _gone = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            super::reap_zombies();
            std::thread::yield_now();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _removed = fs_err::remove_dir(dir);
        }
    }
}

/// Removes the empty groups older than [`STALE_AFTER`] in `parent` (left by supervisors that
/// were killed); a group still in use is not empty, and the kernel refuses to remove it.
fn sweep(parent: &Path) {
    let Ok(entries) = fs_err::read_dir(parent) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|made| now.duration_since(made).unwrap_or_default() >= STALE_AFTER);
        if stale {
            let _removed = fs_err::remove_dir(entry.path());
        }
    }
}

fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
        && rustix::fs::access(dir.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).is_ok()
}

fn write(file: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = fs_err::OpenOptions::new().write(true).open(file)?;
    file.write_all(value.as_bytes())
}

/// `key N` in a cgroup's flat-keyed file (`memory.events`, `pids.events`, `memory.oom_control`).
fn counter(text: &str, key: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(name, _)| *name == key)
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTS: &str = "\
35 25 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
37 35 0:32 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
38 35 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 35 0:34 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
40 35 0:35 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices";
    const HYBRID_CGROUP: &str = "\
8:pids:/
4:memory:/jobs/a1
2:cpu,cpuacct:/
5:devices:/
0::/";

    #[test]
    fn a_hybrid_layout_gives_each_v1_controller_its_own_directory_for_this_process() {
        let found = Hierarchies::parse(HYBRID_MOUNTS, HYBRID_CGROUP);
        assert_eq!(
            found.v2,
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_owned()))
        );
        assert_eq!(
            found.v1,
            [
                (
                    vec!["pids".to_owned()],
                    PathBuf::from("/sys/fs/cgroup/pids")
                ),
                (
                    vec!["memory".to_owned()],
                    PathBuf::from("/sys/fs/cgroup/memory/jobs/a1")
                ),
                (
                    vec!["cpu".to_owned()],
                    PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
                ),
            ]
        );
    }

    #[test]
    fn a_unified_layout_has_no_v1_hierarchy() {
        let found = Hierarchies::parse(
            "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate",
            "0::/user.slice/user-1000.slice/session-2.scope",
        );
        assert_eq!(
            found.v2,
            Some((
                PathBuf::from("/sys/fs/cgroup"),
                "/user.slice/user-1000.slice/session-2.scope".to_owned()
            ))
        );
        assert!(found.v1.is_empty());
    }

    #[test]
    fn counters_are_read_by_key() {
        let v2 = "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(counter(v2, "oom_kill"), 1);
        assert_eq!(counter(v2, "max"), 4);
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(counter(v1, "oom_kill"), 2);
        assert_eq!(counter("max 0", "max"), 0);
        assert_eq!(counter("", "max"), 0);
    }
}
