//! What a sheep on each coding agent needs from the user's environment to reach its provider:
//! one of the variables the agent reads its key from, or a login the user's own configuration
//! already holds (which the sheep's composed home copies).
//!
//! A herd's sheep inherit the environment of whoever started the herd, and an MCP host may start
//! `shepherd mcp` with much less than the user's shell has (Codex passes almost nothing, Gemini
//! CLI hides every variable named like a key). The front ends check these before a sheep fails
//! for them: `shepherd mcp` when it starts, `shepherd doctor` on demand. Only what can be known
//! for sure is said: an agent whose provider is configured some other way (opencode's own
//! configuration, a Codex provider of the user's, Vertex or Bedrock) needs nothing here.

use shepherd_core::harness::Harness;

pub use crate::profile::{Credentials, Login};
use crate::{UserEnv, profile};

/// What a sheep on `harness` running `model` (pi's `provider/id`; `None` for the agent's own
/// default) needs to reach its provider, read against the user's configuration; `None` when
/// that cannot be said from here.
pub fn credentials(
    harness: Harness,
    model: Option<&str>,
    user: &dyn UserEnv,
) -> Option<Credentials> {
    (profile(harness).credentials)(model, user)
}

/// The variables that point a sheep on `harness` at another endpoint of its provider
/// (`ANTHROPIC_BASE_URL` for Claude Code). A sheep started without one its user has set goes
/// to the provider's default endpoint, with a key meant for another.
pub fn endpoint_vars(harness: Harness) -> &'static [&'static str] {
    profile(harness).provider.endpoint_vars
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ffi::OsString;

    use super::*;

    struct Env(HashMap<&'static str, OsString>);

    impl UserEnv for Env {
        fn var(&self, name: &str) -> Option<OsString> {
            self.0.get(name).cloned()
        }
    }

    fn env(home: &std::path::Path, vars: &[(&'static str, &str)]) -> Env {
        let mut map: HashMap<&'static str, OsString> =
            vars.iter().map(|(k, v)| (*k, OsString::from(v))).collect();
        map.insert("HOME", home.as_os_str().to_owned());
        Env(map)
    }

    #[test]
    fn a_key_in_the_environment_or_a_login_is_enough() {
        let home = tempfile::tempdir().unwrap();
        let bare = env(home.path(), &[]);
        let claude = credentials(Harness::ClaudeCode, None, &bare).unwrap();
        assert_eq!(claude.provider, "anthropic");
        assert!(claude.vars.contains(&"ANTHROPIC_API_KEY"));
        assert!(!claude.found(&bare));
        let keyed = env(home.path(), &[("ANTHROPIC_AUTH_TOKEN", "t")]);
        assert_eq!(claude.set_var(&keyed), Some("ANTHROPIC_AUTH_TOKEN"));
        // An empty variable is no key.
        assert!(!claude.found(&env(home.path(), &[("ANTHROPIC_API_KEY", "")])));
        fs_err::create_dir_all(home.path().join(".claude")).unwrap();
        fs_err::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
        assert!(claude.found(&bare));

        let codex = credentials(Harness::Codex, None, &bare).unwrap();
        assert!(!codex.found(&bare));
        assert!(codex.found(&env(home.path(), &[("OPENAI_API_KEY", "k")])));
        let gemini = credentials(Harness::Gemini, None, &bare).unwrap();
        assert_eq!(gemini.vars, ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
        assert!(credentials(Harness::Opencode, None, &bare).is_none());
    }

    #[test]
    fn a_provider_configured_another_way_is_not_checked() {
        let home = tempfile::tempdir().unwrap();
        let bare = env(home.path(), &[]);
        fs_err::create_dir_all(home.path().join(".codex")).unwrap();
        fs_err::write(
            home.path().join(".codex/config.toml"),
            "model = \"m\"\nmodel_provider = \"mine\"\n[model_providers.mine]\nenv_key = \"X\"\n",
        )
        .unwrap();
        assert!(credentials(Harness::Codex, None, &bare).is_none());
        fs_err::create_dir_all(home.path().join(".gemini")).unwrap();
        fs_err::write(
            home.path().join(".gemini/settings.json"),
            r#"{"security": {"auth": {"selectedType": "vertex-ai"}}}"#,
        )
        .unwrap();
        assert!(credentials(Harness::Gemini, None, &bare).is_none());
        let bedrock = env(home.path(), &[("CLAUDE_CODE_USE_BEDROCK", "1")]);
        assert!(credentials(Harness::ClaudeCode, None, &bedrock).is_none());
    }

    #[test]
    fn a_pi_sheep_needs_its_providers_key_or_a_login_for_it() {
        let home = tempfile::tempdir().unwrap();
        let bare = env(home.path(), &[]);
        assert!(credentials(Harness::Pi, None, &bare).is_none());
        assert!(credentials(Harness::Pi, Some("sonnet"), &bare).is_none());
        let pi = credentials(Harness::Pi, Some("openrouter/x/y"), &bare).unwrap();
        assert_eq!(pi.provider, "openrouter");
        assert_eq!(pi.vars, ["OPENROUTER_API_KEY"]);
        assert!(!pi.found(&bare));
        let auth = home.path().join(".pi/agent/auth.json");
        fs_err::create_dir_all(auth.parent().unwrap()).unwrap();
        fs_err::write(&auth, r#"{"anthropic": {"type": "oauth"}}"#).unwrap();
        assert!(!pi.found(&bare));
        let anthropic = credentials(Harness::Pi, Some("anthropic/claude"), &bare).unwrap();
        assert!(anthropic.found(&bare));
    }
}
