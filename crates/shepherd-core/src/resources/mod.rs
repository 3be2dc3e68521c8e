//! Resource limits: how many processes, how much memory, CPU and disk one sheep may use.
//!
//! A herd runs many sheep on one machine, often with permission prompts off, so one sheep that
//! forks without end or allocates without end must not take the machine (and the rest of the
//! herd) down with it. The limits are one `limits:` block, written the same way in an agent
//! definition, in the user's settings and (for the containers to come) wherever a sheep is
//! started: `pids`, `memory`, `cpus`, `disk`. This module declares that block once: the four
//! resources ([`Resource`]), what a definition or the settings write for them ([`LimitsLayer`],
//! where a value may also be `unlimited`), the limits a sheep runs with ([`Limits`]), and the
//! two ways a layer combines with what is below it: it replaces ([`Limits::over`]: the user's
//! settings over the defaults, the user's own or a bundled definition over those) or it may
//! only lower ([`Limits::lowered_by`]: a project's definition, a spawn's request).
//! `AgentDef::limits` applies the rule for a definition. How a limit is applied on a
//! machine (cgroups, rlimits, a tmpfs size) is the supervisor's business; what it could apply
//! is reported back as an [`Enforcement`].

mod value;

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use value::{Bytes, Cap, Cpus, LimitValue};

/// One resource a sheep's limits bound. Declared once: every list, flag and message names
/// these.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Processes and threads of the sheep's whole process tree.
    Pids,
    /// Memory of the sheep's whole process tree.
    Memory,
    /// CPU time, as a number of CPUs.
    Cpus,
    /// Disk: the size of its private temporary directories and of any one file it writes.
    Disk,
}

impl Resource {
    /// Every resource, in the order they are listed.
    pub const ALL: [Self; 4] = [Self::Pids, Self::Memory, Self::Cpus, Self::Disk];

    /// The key in a `limits:` block.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
            Self::Cpus => "cpus",
            Self::Disk => "disk",
        }
    }

    /// The key with its block, as refusals name it (`limits.memory`).
    pub fn field(self) -> &'static str {
        match self {
            Self::Pids => "limits.pids",
            Self::Memory => "limits.memory",
            Self::Cpus => "limits.cpus",
            Self::Disk => "limits.disk",
        }
    }

    /// What a value of this key may be, as one phrase for refusals.
    pub fn expected(self) -> &'static str {
        match self {
            Self::Pids => "a whole number of processes, 1 or more, or unlimited",
            Self::Memory | Self::Disk => {
                "a size of 1M or more: bytes, or a number with K, M, G or T (binary units, \
                 e.g. 512M, 4G), or unlimited"
            }
            Self::Cpus => "a number of CPUs from 0.01 to 4096 (e.g. 1.5), or unlimited",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The keys a `limits:` block accepts, as one phrase.
pub const KEYS_EXPECTED: &str = "a mapping of pids, memory, cpus and disk (e.g. {pids: 512, \
                                 memory: 4G})";

/// A `limits:` value that cannot be used: one line naming the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field} {value}: expected {expected}")]
pub struct LimitsError {
    /// The key (`limits`, `limits.memory`, …).
    pub field: &'static str,
    /// The value as written (JSON notation).
    pub value: String,
    /// What would be accepted.
    pub expected: &'static str,
}

/// A `limits:` block as a definition, the settings or a spawn write it: each key absent (the
/// layer below decides), a value, or `unlimited`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsLayer {
    /// Most processes and threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<Cap<u32>>,
    /// Most memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Cap<Bytes>>,
    /// Most CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Cap<Cpus>>,
    /// Most disk in its private temporary directories, and the largest file it may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Cap<Bytes>>,
}

impl LimitsLayer {
    /// Whether it writes no key (a serde skip test, hence the reference).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Reads a `limits` block from JSON (a definition's YAML converted, or the settings file).
    /// Absent or null is an empty layer; a key Shepherd does not know, or a value it cannot
    /// use, is refused naming it.
    pub fn from_json(value: Option<&Value>) -> Result<Self, LimitsError> {
        let entries = match value {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(entries)) => entries,
            Some(other) => {
                return Err(LimitsError {
                    field: "limits",
                    value: other.to_string(),
                    expected: KEYS_EXPECTED,
                });
            }
        };
        let mut layer = Self::default();
        for (key, value) in entries {
            let Some(resource) = Resource::ALL.into_iter().find(|r| r.as_str() == key) else {
                return Err(LimitsError {
                    field: "limits",
                    value: Value::String(key.clone()).to_string(),
                    expected: KEYS_EXPECTED,
                });
            };
            let refused = || LimitsError {
                field: resource.field(),
                value: value.to_string(),
                expected: resource.expected(),
            };
            if value.is_null() {
                continue;
            }
            match resource {
                Resource::Pids => layer.pids = Some(Cap::read(value).ok_or_else(refused)?),
                Resource::Memory => layer.memory = Some(Cap::read(value).ok_or_else(refused)?),
                Resource::Cpus => layer.cpus = Some(Cap::read(value).ok_or_else(refused)?),
                Resource::Disk => layer.disk = Some(Cap::read(value).ok_or_else(refused)?),
            }
        }
        Ok(layer)
    }
}

/// The limits a sheep runs with: each one a bound, or `None` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Most processes and threads of its whole tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u32>,
    /// Most memory of its whole tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Bytes>,
    /// Most CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Cpus>,
    /// Most disk in each private temporary directory, and the largest file it may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Bytes>,
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Limits {
    /// No limit at all.
    pub const NONE: Self = Self {
        pids: None,
        memory: None,
        cpus: None,
        disk: None,
    };

    /// The built-in defaults: a fork bomb and a memory hog are stopped, ordinary work (a coding
    /// agent, its builds and tests: hundreds of processes, a few GiB) is not. `docs/sandbox.md`
    /// gives the measurements behind them.
    pub const DEFAULT: Self = Self {
        pids: Some(4096),
        memory: Some(Bytes(8 << 30)),
        cpus: None,
        disk: Some(Bytes(4 << 30)),
    };

    /// These limits lowered where `layer` writes a lower value; a higher one and `unlimited`
    /// change nothing.
    pub fn lowered_by(self, layer: &LimitsLayer) -> Self {
        self.tightest(&Self::NONE.over(layer))
    }

    /// These limits with every key `layer` writes replaced by its value.
    pub fn over(self, layer: &LimitsLayer) -> Self {
        fn pick<T: Copy>(current: Option<T>, written: Option<Cap<T>>) -> Option<T> {
            match written {
                None => current,
                Some(Cap::Unlimited) => None,
                Some(Cap::At(value)) => Some(value),
            }
        }
        Self {
            pids: pick(self.pids, layer.pids),
            memory: pick(self.memory, layer.memory),
            cpus: pick(self.cpus, layer.cpus),
            disk: pick(self.disk, layer.disk),
        }
    }

    /// The lower of these and `other`, key by key (no limit is the highest): what a source that
    /// may only tighten (a project's definition, a spawn's own request) leaves.
    pub fn tightest(self, other: &Self) -> Self {
        fn lower<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        Self {
            pids: lower(self.pids, other.pids),
            memory: lower(self.memory, other.memory),
            cpus: lower(self.cpus, other.cpus),
            disk: lower(self.disk, other.disk),
        }
    }

    /// The value of one resource, as people read it (`4096`, `8 GiB`, `1.5`), when limited.
    pub fn shown(&self, resource: Resource) -> Option<String> {
        match resource {
            Resource::Pids => self.pids.map(|n| n.to_string()),
            Resource::Memory => self.memory.map(|b| b.to_string()),
            Resource::Cpus => self.cpus.map(|c| c.to_string()),
            Resource::Disk => self.disk.map(|b| b.to_string()),
        }
    }

    /// Whether nothing is limited.
    pub fn is_none(&self) -> bool {
        *self == Self::NONE
    }
}

impl fmt::Display for Limits {
    /// `pids 4096, memory 8 GiB, disk 4 GiB`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Resource::ALL
            .into_iter()
            .filter_map(|r| self.shown(r).map(|v| format!("{r} {v}")))
            .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// How a sheep's limits are applied on the machine it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// A cgroup v2 of its own (a writable unified hierarchy).
    CgroupV2,
    /// cgroups of its own in the machine's cgroup v1 controllers (as root).
    CgroupV1,
    /// Resource limits of its processes (`setrlimit`): no cgroup could be made.
    #[default]
    Rlimits,
}

impl Mechanism {
    /// `cgroup v2`, `cgroup v1`, `rlimits`.
    pub fn words(self) -> &'static str {
        match self {
            Self::CgroupV2 => "cgroup v2",
            Self::CgroupV1 => "cgroup v1",
            Self::Rlimits => "rlimits",
        }
    }
}

/// What the supervisor could apply of a sheep's limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enforcement {
    /// How they are applied.
    pub by: Mechanism,
    /// Limits that could not be applied as asked on that machine (not at all, or only per
    /// process or per user), and why, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unapplied: Vec<Unapplied>,
}

/// A limit the machine could not apply as asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Unapplied {
    /// Which.
    pub resource: Resource,
    /// Why (one line).
    pub why: String,
}

impl fmt::Display for Enforcement {
    /// `cgroup v1`, or `rlimits; memory: per process (RLIMIT_DATA); cpus: not applied (no
    /// cgroup)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.by.words())?;
        for unapplied in &self.unapplied {
            write!(f, "; {}: {}", unapplied.resource, unapplied.why)?;
        }
        Ok(())
    }
}

/// Why a sheep ended, as its limits tell: the resource whose limit stopped it, with its value.
pub fn stopped_by(resource: Resource, limits: &Limits) -> String {
    match limits.shown(resource) {
        Some(value) => format!("was stopped by its {resource} limit ({value})"),
        None => format!("was stopped by its {resource} limit"),
    }
}

#[cfg(test)]
mod limit_tests;
