//! How far a sheep is confined: its sandbox and its network.
//!
//! A herd often runs with permission prompts off, so what keeps a confused sheep away from the
//! user's home directory, keys and other checkouts has to be outside the sheep. These two
//! closed sets are what a definition (`sandbox:`, `network:`), a spawn (`--sandbox`) and the
//! settings (`sandbox`) may ask for; how a sandbox is made lives with the supervisor that
//! starts the sheep. Each set is declared once here, with the one line that names its
//! accepted values when a value is refused.

mod options;

use std::fmt;
use std::str::FromStr;

pub use options::{SandboxOptions, SandboxOptionsWarning};

use serde::{Deserialize, Serialize};

/// What a sheep's processes may see and change.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    /// Not confined (the default).
    #[default]
    Off,
    /// The system read-only, its working directory writable, the rest of `$HOME` hidden.
    Workspace,
    /// As `workspace`, and the project outside its working directory hidden too.
    Strict,
}

impl Sandbox {
    /// Every sandbox, in the order they are listed.
    pub const ALL: [Self; 3] = [Self::Off, Self::Workspace, Self::Strict];

    /// The accepted values, as one phrase for refusals.
    pub const EXPECTED: &'static str = "off, workspace or strict";

    /// The name used in definitions, on the command line and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Workspace => "workspace",
            Self::Strict => "strict",
        }
    }

    /// Whether the sheep is confined at all.
    pub fn is_on(self) -> bool {
        self != Self::Off
    }
}

impl fmt::Display for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who asks for a sheep's sandbox, and how far each may move it. The user's `sandbox` setting
/// is the floor: what a repository or an agent asks for may only confine a sheep more; only the
/// user's own definitions and the person's own flag at the command line may confine it less.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SandboxChoices {
    /// The user's `sandbox` setting (user file only).
    pub setting: Sandbox,
    /// The definition's `sandbox:`.
    pub definition: Option<Sandbox>,
    /// Whether the definition is the project's (repository-controlled): then it only tightens.
    pub definition_from_project: bool,
    /// The person's own `--sandbox` at the command line: it may loosen.
    pub person: Option<Sandbox>,
    /// A plan's `sandbox`, or an MCP or pi tool's `sandbox` argument: it only tightens.
    pub requested: Option<Sandbox>,
}

impl SandboxChoices {
    /// The sandbox the sheep runs in.
    pub fn decide(self) -> Sandbox {
        let defined = self.definition.unwrap_or(self.setting);
        let base = if self.definition_from_project {
            defined.max(self.setting)
        } else {
            defined
        };
        self.person
            .unwrap_or(base)
            .max(self.requested.unwrap_or(Sandbox::Off))
    }
}

/// A sandbox name Shepherd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox {0:?}; expected off, workspace or strict")]
pub struct UnknownSandbox(pub String);

impl FromStr for Sandbox {
    type Err = UnknownSandbox;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let wanted = raw.trim().to_lowercase();
        Self::ALL
            .into_iter()
            .find(|sandbox| sandbox.as_str() == wanted)
            .ok_or_else(|| UnknownSandbox(raw.to_owned()))
    }
}

/// What a sheep may reach over the network.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// Everything the machine reaches (the default).
    #[default]
    All,
    /// Only its model provider's hosts, through an allow-listing proxy outside the sandbox.
    Model,
    /// Nothing but the broker.
    None,
}

impl Network {
    /// Every network choice, in the order they are listed.
    pub const ALL: [Self; 3] = [Self::All, Self::Model, Self::None];

    /// The accepted values, as one phrase for refusals.
    pub const EXPECTED: &'static str = "all, model or none";

    /// Whether it is the default, everything (a serde skip test, hence the reference).
    #[allow(clippy::trivially_copy_pass_by_ref)]
    pub fn is_all(&self) -> bool {
        *self == Self::All
    }

    /// The name used in definitions and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Model => "model",
            Self::None => "none",
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A network name Shepherd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown network {0:?}; expected all, model or none")]
pub struct UnknownNetwork(pub String);

impl FromStr for Network {
    type Err = UnknownNetwork;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let wanted = raw.trim().to_lowercase();
        Self::ALL
            .into_iter()
            .find(|network| network.as_str() == wanted)
            .ok_or_else(|| UnknownNetwork(raw.to_owned()))
    }
}

/// Environment variables that point an agent (or a `command` sheep's client) at another model
/// endpoint; a sheep with `network: model` may reach the host each names.
pub const BASE_URL_VARIABLES: [&str; 6] = [
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_BASE_URL",
    "OLLAMA_HOST",
];

/// `host:port` of a URL (`http://127.0.0.1:4000/v1` → `127.0.0.1:4000`), the port the scheme's
/// own when none is written; a bare `host:port` is taken as it is. `None` when there is no host.
pub fn url_endpoint(url: &str) -> Option<String> {
    let url = url.trim();
    let (default_port, rest) = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (443, rest),
        Some((_, rest)) => (80, rest),
        None => (80, url),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if authority.is_empty() {
        return None;
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.ends_with(':') && port.parse::<u16>().is_ok());
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

/// The endpoints a configuration file names under a base-URL key (`base_url = "…"` in Codex's
/// TOML, `"baseURL": "…"` in opencode's JSON), read as text so one rule serves both.
pub fn config_endpoints(text: &str) -> Vec<String> {
    const KEYS: [&str; 3] = ["base_url", "baseURL", "baseUrl"];
    let mut endpoints = Vec::new();
    for key in KEYS {
        for (at, _) in text.match_indices(key) {
            let rest = text[at + key.len()..].trim_start_matches(['"', '\'', ' ', '\t']);
            let Some(rest) = rest.strip_prefix(['=', ':']) else {
                continue;
            };
            let rest = rest.trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let value = rest[1..].split(quote).next().unwrap_or_default();
            endpoints.extend(url_endpoint(value));
        }
    }
    endpoints
}

/// The endpoints in pi's `models.json`: each provider's `baseUrl`.
pub fn pi_model_endpoints(models_json: &str) -> Vec<String> {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(models_json) else {
        return Vec::new();
    };
    doc["providers"]
        .as_object()
        .into_iter()
        .flat_map(|providers| providers.values())
        .filter_map(|provider| provider["baseUrl"].as_str())
        .filter_map(url_endpoint)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_setting_is_a_floor_that_only_the_user_lowers() {
        use Sandbox::{Off, Strict, Workspace};
        let strict = SandboxChoices {
            setting: Strict,
            ..SandboxChoices::default()
        };
        assert_eq!(strict.decide(), Strict);
        // A project's definition and an agent's request only tighten.
        let project = SandboxChoices {
            definition: Some(Off),
            definition_from_project: true,
            ..strict
        };
        assert_eq!(project.decide(), Strict);
        let requested = SandboxChoices {
            requested: Some(Off),
            ..strict
        };
        assert_eq!(requested.decide(), Strict);
        let tighter = SandboxChoices {
            setting: Workspace,
            requested: Some(Strict),
            ..SandboxChoices::default()
        };
        assert_eq!(tighter.decide(), Strict);
        // The user's own definition and own flag may loosen; a request still tightens after.
        let own = SandboxChoices {
            definition: Some(Off),
            ..strict
        };
        assert_eq!(own.decide(), Off);
        let flag = SandboxChoices {
            person: Some(Off),
            ..project
        };
        assert_eq!(flag.decide(), Off);
        let flag_then_request = SandboxChoices {
            requested: Some(Workspace),
            ..flag
        };
        assert_eq!(flag_then_request.decide(), Workspace);
    }

    #[test]
    fn an_endpoint_is_read_from_a_url_with_the_schemes_port_when_none_is_written() {
        assert_eq!(
            url_endpoint("http://127.0.0.1:4000/v1").as_deref(),
            Some("127.0.0.1:4000")
        );
        assert_eq!(
            url_endpoint("https://api.example.com/v1").as_deref(),
            Some("api.example.com:443")
        );
        assert_eq!(
            url_endpoint("http://user:pw@[::1]:8080").as_deref(),
            Some("[::1]:8080")
        );
        assert_eq!(url_endpoint("https:///nothing"), None);
        let models = r#"{"providers":{"fake":{"baseUrl":"http://127.0.0.1:9/v1"}}}"#;
        assert_eq!(pi_model_endpoints(models), ["127.0.0.1:9"]);
        let codex = "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:7/v1\"\n";
        assert_eq!(config_endpoints(codex), ["127.0.0.1:7"]);
        let opencode = r#"{"provider":{"fake":{"options":{"baseURL":"https://m.example/v1"}}}}"#;
        assert_eq!(config_endpoints(opencode), ["m.example:443"]);
    }

    #[test]
    fn every_name_reads_back_and_an_unknown_one_names_the_accepted_values() {
        for sandbox in Sandbox::ALL {
            assert_eq!(sandbox.as_str().parse::<Sandbox>(), Ok(sandbox));
        }
        for network in Network::ALL {
            assert_eq!(network.as_str().parse::<Network>(), Ok(network));
        }
        let refused = "jail".parse::<Sandbox>().unwrap_err().to_string();
        assert!(refused.contains("\"jail\"") && refused.contains(Sandbox::EXPECTED));
        let refused = "some".parse::<Network>().unwrap_err().to_string();
        assert!(refused.contains("\"some\"") && refused.contains(Network::EXPECTED));
    }
}
