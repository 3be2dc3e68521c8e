//! What Shepherd knows about one coding agent besides how its turns run, declared once per
//! agent in its own module.
//!
//! A harness's facts used to be spread over the front ends: doctor kept the program and its
//! install line, the environment checks the credentials, the sandbox the provider's hosts and
//! the file naming a provider of the user's own. Each harness module now declares one
//! [`Profile`] (pi's too, although the broker runs pi itself), and every user reads it through
//! [`profile`]: so a new harness brings its facts with its module, and no list elsewhere needs
//! another line.

use std::path::PathBuf;

use shepherd_core::harness::Harness;

use crate::UserEnv;
use crate::compose::read_object;

/// What Shepherd knows about one coding agent besides how its turns run.
#[derive(Debug)]
pub struct Profile {
    /// Which harness this is.
    pub harness: Harness,
    /// Its program: how to find it and how to install it.
    pub program: Program,
    /// The provider its model requests go to.
    pub provider: Provider,
    /// What a user logs in with, in doctor's words ("log in with …").
    pub login_with: &'static str,
    /// What a sheep running `model` (pi's `provider/id`; `None` for the agent's own default)
    /// needs to reach its provider, read against the user's configuration; `None` when that
    /// cannot be said from here (a provider configured some other way).
    pub(crate) credentials: fn(Option<&str>, &dyn UserEnv) -> Option<Credentials>,
    /// The user's configuration file that may name a provider of their own (whose endpoint a
    /// sheep confined to its model's hosts may reach), for agents that keep one; read with
    /// `shepherd_core::sandbox::config_endpoints`.
    pub provider_config: Option<fn(&dyn UserEnv) -> Option<PathBuf>>,
}

/// An agent's program.
#[derive(Debug)]
pub struct Program {
    /// The variable naming another program (a path or a name), e.g. `SHEPHERD_CLAUDE`.
    pub var: &'static str,
    /// The program's usual name on `PATH`.
    pub name: &'static str,
    /// The command line that installs it.
    pub install: &'static str,
    /// For an agent that writes under its home even to say its version (Gemini CLI keeps its
    /// project registry there): the variable naming that home, so that a probe runs it in a
    /// home of its own.
    pub version_home: Option<&'static str>,
}

/// Where an agent's model requests go.
#[derive(Debug)]
pub struct Provider {
    /// The provider, when the agent has one of its own (`anthropic`, `openai`, `google`);
    /// `None` for pi and opencode, whose provider is their model's.
    pub name: Option<&'static str>,
    /// The variables naming another endpoint of the provider, most specific first.
    pub endpoint_vars: &'static [&'static str],
    /// The variables the agent reads its key from, most specific first; empty when the key
    /// is the model's provider's (pi's and opencode's).
    pub key_vars: &'static [&'static str],
    /// The hosts its provider answers on by default (its API and its login), which a sheep
    /// with `network: model` may reach.
    pub hosts: &'static [&'static str],
}

/// The hosts of the providers pi and opencode reach most, for agents whose provider is their
/// model's.
pub(crate) const MODEL_PROVIDER_HOSTS: &[&str] = &[
    "api.anthropic.com:443",
    "api.openai.com:443",
    "generativelanguage.googleapis.com:443",
    "openrouter.ai:443",
];

/// What reaching a provider takes: any one of `vars` set (not empty), or one of `logins`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The provider, as the agent names it (`anthropic`, `openai`, `google`, pi's provider).
    pub provider: String,
    /// The variables the agent reads a key from; any one is enough.
    pub vars: Vec<&'static str>,
    /// Logins the user's configuration may hold instead.
    pub logins: Vec<Login>,
}

/// A login an agent keeps in a file of the user's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The file.
    pub file: PathBuf,
    /// The key the file's JSON object must have (pi's `auth.json` holds one per provider);
    /// `None` when the file alone is the login.
    pub key: Option<String>,
}

impl Login {
    /// A login that is the file itself.
    pub(crate) fn file(file: PathBuf) -> Self {
        Self { file, key: None }
    }

    /// Whether the user has it.
    pub fn present(&self) -> bool {
        match &self.key {
            None => self.file.is_file(),
            Some(key) => read_object(&self.file).contains_key(key),
        }
    }
}

impl Credentials {
    /// The key variables of `profile`'s own provider, or one of `logins`.
    pub(crate) fn own(profile: &Profile, logins: Vec<Login>) -> Self {
        Self {
            provider: profile.provider.name.unwrap_or_default().to_owned(),
            vars: profile.provider.key_vars.to_vec(),
            logins,
        }
    }

    /// The variable of `vars` the user has set (not empty), if any.
    pub fn set_var(&self, user: &dyn UserEnv) -> Option<&'static str> {
        self.vars
            .iter()
            .copied()
            .find(|name| user.var(name).is_some_and(|value| !value.is_empty()))
    }

    /// The login the user has, if any.
    pub fn login(&self) -> Option<&Login> {
        self.logins.iter().find(|login| login.present())
    }

    /// Whether the user has what it takes: a variable set or a login.
    pub fn found(&self, user: &dyn UserEnv) -> bool {
        self.set_var(user).is_some() || self.login().is_some()
    }
}

/// An agent whose provider is configured in a way Shepherd cannot check (opencode's own
/// configuration): it needs nothing said here.
pub(crate) fn unchecked(_model: Option<&str>, _user: &dyn UserEnv) -> Option<Credentials> {
    None
}

impl Program {
    /// The program as the user's environment names it: `var` when set (not empty), else its
    /// usual name.
    pub fn named(&self, user: &dyn UserEnv) -> String {
        user.var(self.var)
            .filter(|value| !value.is_empty())
            .map_or_else(
                || self.name.to_owned(),
                |v| v.to_string_lossy().into_owned(),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_harness_has_its_own_profile() {
        for harness in Harness::ALL {
            let profile = crate::profile(harness);
            assert_eq!(profile.harness, harness);
            assert!(profile.program.var.starts_with("SHEPHERD_"), "{harness}");
            assert_eq!(
                crate::adapter(harness).map(crate::Adapter::harness),
                (harness != Harness::Pi).then_some(harness)
            );
        }
    }

    /// A sandboxed sheep may reach the endpoint any base-URL variable names: each agent's own
    /// are among them.
    #[test]
    fn every_endpoint_variable_is_one_the_sandbox_reads() {
        for harness in Harness::ALL {
            for var in crate::profile(harness).provider.endpoint_vars {
                assert!(
                    shepherd_core::sandbox::BASE_URL_VARIABLES.contains(var),
                    "{harness}: {var}"
                );
            }
        }
    }
}
