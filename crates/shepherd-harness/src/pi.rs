//! pi as a sheep, as far as this crate knows it: its [`Profile`] and how its errors read.
//!
//! The broker runs pi itself, with its own sheep extension, so pi has no [`Adapter`](crate::Adapter)
//! here; what Shepherd knows about pi besides how it runs is declared here like every other
//! agent's: its program, the providers its models reach (a model names its provider, so the
//! key is that provider's), and the login pi keeps per provider in its `auth.json`.

use shepherd_core::harness::Harness;

use crate::UserEnv;
use crate::profile::{Credentials, Login, MODEL_PROVIDER_HOSTS, Profile, Program, Provider};

/// pi's profile.
pub(crate) const PROFILE: Profile = Profile {
    harness: Harness::Pi,
    program: Program {
        var: "SHEPHERD_PI",
        name: "pi",
        install: "npm install -g @mariozechner/pi-coding-agent",
        version_home: None,
    },
    provider: Provider {
        name: None,
        endpoint_vars: &[],
        key_vars: &[],
        hosts: MODEL_PROVIDER_HOSTS,
    },
    login_with: "pi's /login",
    credentials,
    provider_config: None,
};

/// A pi sheep on `model`: the variables pi reads its provider's key from (pi-ai's
/// `getApiKeyEnvVars`), or a login for that provider in pi's `auth.json`.
fn credentials(model: Option<&str>, user: &dyn UserEnv) -> Option<Credentials> {
    let (provider, _) = model?.split_once('/')?;
    let vars = provider_key_vars(provider)?;
    let agent_dir = user.dir("PI_CODING_AGENT_DIR", ".pi/agent")?;
    Some(Credentials {
        provider: provider.to_owned(),
        vars: vars.to_vec(),
        logins: vec![Login {
            file: agent_dir.join("auth.json"),
            key: Some(provider.to_owned()),
        }],
    })
}

/// What the error that ended a pi sheep's run means. pi reports a provider's error as its
/// status and body: `429 {"type":"error","error":{"type":"rate_limit_error",…}}` (Anthropic's
/// API, both versions), `429 Rate limit reached for requests. Please try again in 2s.` (OpenAI's,
/// pi 0.73) or `429: {"message":…,"code":"rate_limit_exceeded"}` (pi 1.x); the shared rules
/// read them all.
pub(crate) fn classify_error(error: &str) -> shepherd_core::limit::Classified {
    shepherd_core::limit::classify(error)
}

/// The variables pi (and opencode, which reads the same ones) takes `provider`'s key from
/// (pi-ai's `getApiKeyEnvVars`), most specific first; `None` for a provider Shepherd does not
/// know.
pub(crate) fn provider_key_vars(provider: &str) -> Option<&'static [&'static str]> {
    Some(match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "moonshotai" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        _ => return None,
    })
}

#[cfg(test)]
mod limit_tests {
    use shepherd_core::limit::ErrorClass;

    /// pi's `errorMessage` for each provider error, as pi 0.73 and 1.6 wrote it against the
    /// fake provider with its own retries off.
    #[test]
    fn pi_s_error_messages_are_classified() {
        for (text, class) in [
            (
                r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
                ErrorClass::RateLimit,
            ),
            (
                r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorClass::RateLimit,
            ),
            (
                r#"401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
                ErrorClass::Fatal,
            ),
            (
                "429 Rate limit reached for requests. Please try again in 2s.",
                ErrorClass::RateLimit,
            ),
            ("401 Incorrect API key provided", ErrorClass::Fatal),
            (
                "500 The server had an error while processing your request. Sorry about that!",
                ErrorClass::Transient,
            ),
            (
                "429 The usage limit has been reached",
                ErrorClass::UsageLimit,
            ),
            (
                r#"429: {"message":"Rate limit reached for requests. Please try again in 2s.","type":"requests","param":null,"code":"rate_limit_exceeded"}"#,
                ErrorClass::RateLimit,
            ),
        ] {
            assert_eq!(super::classify_error(text).class, class, "{text}");
        }
        let reset =
            super::classify_error("429 Rate limit reached for requests. Please try again in 2s.")
                .reset;
        assert_eq!(reset, Some(shepherd_core::limit::Reset::AfterMs(2000)));
    }
}
