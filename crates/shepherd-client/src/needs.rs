//! What a herd started from here would lack: for each agent definition a user could spawn, the
//! program its sheep run and what they need from the environment (their provider's key, or a
//! login the user's configuration holds; the variables its `needs-env` names).
//!
//! A herd's broker, and every sheep it starts, inherit the environment of whoever started the
//! herd. From a shell that is everything the user has; from an MCP host it may be much less
//! (Codex passes almost nothing, Gemini CLI hides every variable named like a key), and a sheep
//! started without its key fails at its first turn ("Not logged in"). `shepherd mcp` checks
//! this when it starts and `shepherd doctor` on demand, each saying it in its own words.

use std::path::{Path, PathBuf};

use serde::Serialize;
use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::Harness;
use shepherd_harness::UserEnv;
use shepherd_harness::needs::{credentials, endpoint_vars};

/// One thing the sheep of some definitions need and the environment lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Lack {
    /// No key for a provider: none of `vars` is set, and the user has no login for it.
    #[serde(rename_all = "camelCase")]
    Credential {
        /// The coding agent that reaches the provider.
        harness: Harness,
        /// The provider, as the agent names it.
        provider: String,
        /// The variables it reads a key from; any one is enough.
        vars: Vec<String>,
        /// The definitions whose sheep need it.
        agents: Vec<String>,
    },
    /// A variable a definition's `needs-env` names is not set.
    #[serde(rename_all = "camelCase")]
    Variable {
        /// The variable.
        name: String,
        /// The definitions whose sheep need it.
        agents: Vec<String>,
    },
    /// The program a sheep runs is not found.
    #[serde(rename_all = "camelCase")]
    Program {
        /// The program as it is named (a path or a name looked up on `PATH`).
        program: String,
        /// The variable that names another one (`SHEPHERD_CLAUDE`), for a coding agent.
        var: Option<String>,
        /// The definitions whose sheep need it.
        agents: Vec<String>,
    },
}

impl Lack {
    /// The variables that, passed on, would supply it (for a credential, each of those the
    /// agent reads: the one the user has is enough); none for a program.
    pub fn variables(&self) -> Vec<&str> {
        match self {
            Self::Variable { name, .. } => vec![name],
            Self::Credential { vars, .. } => vars.iter().map(String::as_str).collect(),
            Self::Program { .. } => Vec::new(),
        }
    }

    /// The definitions whose sheep need it.
    pub fn agents(&self) -> &[String] {
        match self {
            Self::Credential { agents, .. }
            | Self::Variable { agents, .. }
            | Self::Program { agents, .. } => agents,
        }
    }

    /// What is missing, in one sentence that names the agents.
    pub fn describe(&self) -> String {
        let agents = self.agents().join(", ");
        match self {
            Self::Credential {
                harness,
                provider,
                vars,
                ..
            } => {
                let unset = match vars.as_slice() {
                    [one] => format!("{one} is not set"),
                    many => format!("none of {} is set", many.join(", ")),
                };
                format!(
                    "{unset} and there is no {} login for {provider} (needed by {agents})",
                    harness.title()
                )
            }
            Self::Variable { name, .. } => {
                format!("{name} is not set (named in the `needs-env` of {agents})")
            }
            Self::Program { program, var, .. } => {
                let instead = var
                    .as_ref()
                    .map(|var| format!("; install it, or set {var} to its path"))
                    .unwrap_or_default();
                format!("`{program}` is not found (needed by {agents}{instead})")
            }
        }
    }
}

/// What the sheep of `defs` would lack in the environment `env` (one entry per missing thing,
/// naming every definition that needs it, in the definitions' order).
pub fn lacks(defs: &[AgentDef], env: &dyn UserEnv) -> Vec<Lack> {
    let mut found: Vec<Lack> = Vec::new();
    let mut add = |lack: Lack, agent: &str| {
        let same = found.iter_mut().find(|known| same_need(known, &lack));
        let agents = match same {
            Some(known) => known,
            None => {
                found.push(lack);
                found.last_mut().expect("just pushed")
            }
        };
        let list = match agents {
            Lack::Credential { agents, .. }
            | Lack::Variable { agents, .. }
            | Lack::Program { agents, .. } => agents,
        };
        if !list.iter().any(|name| name == agent) {
            list.push(agent.to_owned());
        }
    };
    for def in defs {
        let agent = def.name.as_str();
        let (program, var) = program_of(def, env);
        if !program_found(&program, env) {
            add(
                Lack::Program {
                    program,
                    var: var.map(str::to_owned),
                    agents: Vec::new(),
                },
                agent,
            );
        }
        if def.command.is_none() {
            let model = def.model_for(def.harness, None, None);
            if let Some(needed) = credentials(def.harness, model.as_deref(), env)
                && !needed.found(env)
            {
                add(
                    Lack::Credential {
                        harness: def.harness,
                        provider: needed.provider,
                        vars: needed.vars.iter().map(|v| (*v).to_owned()).collect(),
                        agents: Vec::new(),
                    },
                    agent,
                );
            }
        }
        for name in &def.needs_env {
            if env.var(name).is_none_or(|value| value.is_empty()) {
                add(
                    Lack::Variable {
                        name: name.clone(),
                        agents: Vec::new(),
                    },
                    agent,
                );
            }
        }
    }
    found
}

/// A variable the sheep of some definitions take from this environment, where it is set: the
/// key a coding agent or pi reads when the user has no login for it, or a `needs-env` name.
/// An MCP host that starts `shepherd mcp` must pass each on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Used {
    /// The variable.
    pub name: String,
    /// The definitions whose sheep need it.
    pub agents: Vec<String>,
}

/// The variables the sheep of `defs` would take from `host`, the environment of the program
/// that started this one, that this one's own environment `own` lacks: what an MCP host has
/// and did not pass on. Each is named once, with the definitions that use it.
pub fn withheld(defs: &[AgentDef], host: &dyn UserEnv, own: &dyn UserEnv) -> Vec<Used> {
    used_vars(defs, host)
        .into_iter()
        .filter(|used| own.var(&used.name).is_none_or(|value| value.is_empty()))
        .collect()
}

/// The variables the sheep of `defs` take from `env` (see [`Used`]), in the definitions' order.
pub fn used_vars(defs: &[AgentDef], env: &dyn UserEnv) -> Vec<Used> {
    let mut used: Vec<Used> = Vec::new();
    let mut add = |name: &str, agent: &str| {
        let index = match used.iter().position(|u| u.name == name) {
            Some(index) => index,
            None => {
                used.push(Used {
                    name: name.to_owned(),
                    agents: Vec::new(),
                });
                used.len() - 1
            }
        };
        if !used[index].agents.iter().any(|a| a == agent) {
            used[index].agents.push(agent.to_owned());
        }
    };
    for def in defs {
        if def.command.is_none() {
            let model = def.model_for(def.harness, None, None);
            if let Some(needed) = credentials(def.harness, model.as_deref(), env)
                && needed.login().is_none()
                && let Some(name) = needed.set_var(env)
            {
                add(name, &def.name);
            }
            // The endpoint is used with a login as with a key.
            for name in endpoint_vars(def.harness) {
                if env.var(name).is_some_and(|value| !value.is_empty()) {
                    add(name, &def.name);
                }
            }
        }
        for name in &def.needs_env {
            if env.var(name).is_some_and(|value| !value.is_empty()) {
                add(name, &def.name);
            }
        }
    }
    used
}

fn same_need(a: &Lack, b: &Lack) -> bool {
    match (a, b) {
        (
            Lack::Credential {
                harness: h1,
                provider: p1,
                ..
            },
            Lack::Credential {
                harness: h2,
                provider: p2,
                ..
            },
        ) => h1 == h2 && p1 == p2,
        (Lack::Variable { name: a, .. }, Lack::Variable { name: b, .. }) => a == b,
        (Lack::Program { program: a, .. }, Lack::Program { program: b, .. }) => a == b,
        _ => false,
    }
}

/// The program a sheep of `def` runs, as named, and the variable that names another.
fn program_of(def: &AgentDef, env: &dyn UserEnv) -> (String, Option<&'static str>) {
    if let Some(program) = def.command.as_ref().and_then(|argv| argv.first()) {
        return (program.clone(), None);
    }
    let program = &shepherd_harness::profile(def.harness).program;
    (program.named(env), Some(program.var))
}

/// Whether `program` is a file (named with a path) or on the environment's `PATH`.
pub fn program_found(program: &str, env: &dyn UserEnv) -> bool {
    which(program, env).is_some()
}

/// Where `program` is: itself when named with a path, else the first on the environment's
/// `PATH`.
pub fn which(program: &str, env: &dyn UserEnv) -> Option<PathBuf> {
    let named = Path::new(program);
    if named.components().count() > 1 {
        return named.is_file().then(|| named.to_owned());
    }
    let path = env.var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(named))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ffi::OsString;

    use shepherd_core::agent_def::{AgentSource, parse_agent_def};

    use super::*;

    struct Env(HashMap<String, OsString>);

    impl UserEnv for Env {
        fn var(&self, name: &str) -> Option<OsString> {
            self.0.get(name).cloned()
        }
    }

    fn def(frontmatter: &str) -> AgentDef {
        let name = frontmatter
            .lines()
            .find_map(|l| l.strip_prefix("name: "))
            .unwrap();
        let text = format!("---\n{frontmatter}\ndescription: d\n---\nbody\n");
        parse_agent_def(
            text.as_bytes(),
            AgentSource::User,
            PathBuf::from(format!("/{name}.md")),
        )
        .unwrap()
        .def
    }

    #[test]
    fn each_missing_thing_once_with_every_agent_that_needs_it() {
        let home = tempfile::tempdir().unwrap();
        let bin = home.path().join("bin");
        fs_err::create_dir_all(&bin).unwrap();
        fs_err::write(bin.join("claude"), "").unwrap();
        let env = Env(HashMap::from([
            ("HOME".to_owned(), home.path().into()),
            ("PATH".to_owned(), bin.clone().into()),
            ("OPENAI_API_KEY".to_owned(), "".into()),
            ("SET_ONE".to_owned(), "x".into()),
        ]));
        let defs = [
            def("name: reviewer\nharness: claude-code"),
            def("name: writer\nharness: claude-code\nneeds-env: [SET_ONE, TOKEN_X]"),
            def("name: bot\ncommand: [/nowhere/bot]\nneeds-env: TOKEN_X"),
            def("name: coder\nharness: codex"),
        ];
        let lacks = lacks(&defs, &env);
        let described: Vec<String> = lacks.iter().map(Lack::describe).collect();
        assert_eq!(lacks.len(), 5, "{described:#?}");
        assert!(matches!(
            &lacks[0],
            Lack::Credential { harness: Harness::ClaudeCode, agents, .. } if agents == &["reviewer", "writer"]
        ));
        assert!(lacks[0].variables().contains(&"ANTHROPIC_API_KEY"));
        assert_eq!(
            lacks[1],
            Lack::Variable {
                name: "TOKEN_X".into(),
                agents: vec!["writer".into(), "bot".into()]
            }
        );
        assert_eq!(described[2], "`/nowhere/bot` is not found (needed by bot)");
        // Codex: neither its program nor its key (an empty variable is no key).
        assert!(
            described[3].starts_with(
                "`codex` is not found (needed by coder; install it, or set SHEPHERD_CODEX"
            ),
            "{}",
            described[3]
        );
        assert!(
            described[4]
                == "none of CODEX_API_KEY, OPENAI_API_KEY is set and there is no Codex login for openai (needed by coder)",
            "{}",
            described[4]
        );
        assert_eq!(lacks[4].variables(), ["CODEX_API_KEY", "OPENAI_API_KEY"]);
    }

    #[test]
    fn the_variables_taken_from_the_environment_are_those_set_without_a_login() {
        let home = tempfile::tempdir().unwrap();
        let env = Env(HashMap::from([
            ("HOME".to_owned(), home.path().into()),
            ("ANTHROPIC_API_KEY".to_owned(), "k".into()),
            ("SET_ONE".to_owned(), "x".into()),
        ]));
        let defs = [
            def("name: reviewer\nharness: claude-code"),
            def("name: bot\ncommand: [bot]\nneeds-env: [SET_ONE, UNSET]"),
            def("name: coder\nharness: codex"),
        ];
        let used = used_vars(&defs, &env);
        let names: Vec<&str> = used.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["ANTHROPIC_API_KEY", "SET_ONE"]);
        // With a login, the key in the environment is not what the sheep use.
        fs_err::create_dir_all(home.path().join(".claude")).unwrap();
        fs_err::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
        let names: Vec<String> = used_vars(&defs, &env).into_iter().map(|u| u.name).collect();
        assert_eq!(names, ["SET_ONE"]);
    }
}
