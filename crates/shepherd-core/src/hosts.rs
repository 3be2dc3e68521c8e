//! Named hosts: other machines a sheep may run on, reached over OpenSSH.
//!
//! A host is defined in the user's settings file only, under `hosts`: a repository must never
//! be able to choose where Shepherd connects, so a project (its settings, its agent
//! definitions, its run plans) may only *name* a host the user defined. A definition says how
//! to reach the machine (anything `ssh` accepts as a destination, so `~/.ssh/config` aliases,
//! jump hosts and keys work as the user set them up, plus optional extra `ssh` arguments), where
//! the project lives there, which backend runs sheep there and which `shepherd` binary to use.
//! Reading is strict per host: a malformed definition is reported with its name and what would
//! be accepted, and only that host is unusable.
//!
//! Definitions are read out of the user's settings object (open JSON, see
//! [`crate::settings`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;

/// A user-defined host, as the settings file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostDef {
    /// The SSH destination (`user@box`, an alias from `~/.ssh/config`, …).
    pub destination: String,
    /// The project's absolute path on that host.
    pub project_path: PathBuf,
    /// Where sheep run there (`headless` by default).
    #[serde(default = "headless")]
    pub backend: BackendKind,
    /// The `shepherd` binary on the host (`shepherd`, found through the login PATH, by default).
    #[serde(default = "shepherd_binary")]
    pub shepherd: String,
    /// Extra arguments for every `ssh` call to this host (e.g. `["-F", "/path/config"]`).
    #[serde(default)]
    pub ssh_args: Vec<String>,
    /// The command that runs pi on the host (`["pi"]`, from the login PATH, by default).
    #[serde(default = "pi_command")]
    pub pi: Vec<String>,
}

fn pi_command() -> Vec<String> {
    vec!["pi".to_owned()]
}

fn headless() -> BackendKind {
    BackendKind::Headless
}

fn shepherd_binary() -> String {
    "shepherd".to_owned()
}

/// Why a host name or definition cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The name is not a valid host name.
    #[error(
        "host name `{0}` is not valid: use 1–63 lowercase letters, digits, `-`, `_` or `.`, \
         starting with a letter or digit"
    )]
    InvalidName(String),
    /// The definition does not parse.
    #[error("host `{name}` in {file} is not usable: {why}")]
    InvalidDefinition {
        /// The host's name.
        name: String,
        /// The settings file.
        file: String,
        /// What is wrong and what would be accepted.
        why: String,
    },
    /// The host is defined in a project's settings only, where hosts are not read.
    #[error(
        "host `{name}` is defined only in the project's settings ({file}); only your user \
         settings may define hosts, so that a project you clone cannot choose where Shepherd \
         connects"
    )]
    ProjectOnly {
        /// The host's name.
        name: String,
        /// The project's settings file.
        file: String,
    },
    /// No host of that name is defined.
    #[error("no host `{name}` is defined; {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The defined hosts, or how to define one.
        known: String,
    },
}

/// Checks a host name: 1–63 of `[a-z0-9._-]`, starting with a letter or digit.
pub fn validate_host_name(name: &str) -> Result<(), HostError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if valid {
        Ok(())
    } else {
        Err(HostError::InvalidName(name.to_owned()))
    }
}

/// The hosts of a user settings file, each usable or with why not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    /// Usable definitions by name.
    pub defined: BTreeMap<String, HostDef>,
    /// Definitions that could not be used, by name.
    pub broken: BTreeMap<String, HostError>,
}

impl Hosts {
    /// Reads the `hosts` object of a parsed user settings file (`file` names it in errors).
    /// Anything that is not an object of objects is reported per entry; a missing key is no
    /// hosts.
    pub fn from_settings(settings: &serde_json::Value, file: &str) -> Self {
        let mut hosts = Self::default();
        let Some(entries) = settings.get("hosts") else {
            return hosts;
        };
        let Some(entries) = entries.as_object() else {
            hosts.broken.insert(
                String::new(),
                HostError::InvalidDefinition {
                    name: String::new(),
                    file: file.to_owned(),
                    why: "`hosts` must be an object of host definitions".to_owned(),
                },
            );
            return hosts;
        };
        for (name, value) in entries {
            let parsed = validate_host_name(name).and_then(|()| {
                let def: HostDef = serde_json::from_value(value.clone()).map_err(|err| {
                    HostError::InvalidDefinition {
                        name: name.clone(),
                        file: file.to_owned(),
                        why: format!(
                            "{err}; a host needs `destination` and an absolute `projectPath`, \
                             and may set `backend` (headless, tmux, herdr), `shepherd`, `sshArgs` \
                             and `pi`"
                        ),
                    }
                })?;
                check_definition(name, file, &def)?;
                Ok(def)
            });
            match parsed {
                Ok(def) => {
                    hosts.defined.insert(name.clone(), def);
                }
                Err(err) => {
                    hosts.broken.insert(name.clone(), err);
                }
            }
        }
        hosts
    }

    /// The definition of `name`, or why there is none.
    pub fn get(&self, name: &str) -> Result<&HostDef, HostError> {
        validate_host_name(name)?;
        if let Some(def) = self.defined.get(name) {
            return Ok(def);
        }
        // A host's own fault first, else the whole file's (kept under the empty name).
        if let Some(err) = self.broken.get(name).or_else(|| self.broken.get("")) {
            return Err(err.clone());
        }
        let known = if self.defined.is_empty() {
            "define hosts under `hosts` in your user settings file (see docs/remote.md)".to_owned()
        } else {
            format!(
                "defined hosts: {}",
                self.defined.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        };
        Err(HostError::Unknown {
            name: name.to_owned(),
            known,
        })
    }
}

fn check_definition(name: &str, file: &str, def: &HostDef) -> Result<(), HostError> {
    let invalid = |why: String| HostError::InvalidDefinition {
        name: name.to_owned(),
        file: file.to_owned(),
        why,
    };
    if def.destination.trim().is_empty() || def.destination.starts_with('-') {
        return Err(invalid(format!(
            "destination `{}` must be an SSH destination such as `user@box` or an alias, not \
             empty or an option",
            def.destination
        )));
    }
    if !def.project_path.is_absolute() {
        return Err(invalid(format!(
            "projectPath `{}` must be an absolute path on the host",
            def.project_path.display()
        )));
    }
    if def.shepherd.trim().is_empty() {
        return Err(invalid(
            "`shepherd` must name the binary on the host".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_with_defaults_and_bad_ones_say_why() {
        let settings = serde_json::json!({
            "hosts": {
                "devbox": {"destination": "me@devbox", "projectPath": "/srv/app"},
                "ci": {"destination": "ci", "projectPath": "/w", "backend": "tmux",
                       "shepherd": "/opt/shepherd", "sshArgs": ["-F", "/x"]},
                "relative": {"destination": "box", "projectPath": "app"},
                "typo": {"destination": "box", "projectPath": "/a", "backnd": "tmux"},
                "Upper": {"destination": "box", "projectPath": "/a"}
            }
        });
        let hosts = Hosts::from_settings(&settings, "config.json");
        let devbox = hosts.get("devbox").unwrap();
        assert_eq!(devbox.backend, BackendKind::Headless);
        assert_eq!(devbox.shepherd, "shepherd");
        assert_eq!(hosts.get("ci").unwrap().ssh_args, ["-F", "/x"]);
        let relative = hosts.get("relative").unwrap_err().to_string();
        assert!(relative.contains("projectPath `app`"), "{relative}");
        let typo = hosts.get("typo").unwrap_err().to_string();
        assert!(typo.contains("backnd"), "{typo}");
        assert!(matches!(
            hosts.get("Upper"),
            Err(HostError::InvalidName(name)) if name == "Upper"
        ));
        let unknown = hosts.get("elsewhere").unwrap_err().to_string();
        assert!(unknown.contains("ci, devbox"), "{unknown}");
    }
}
