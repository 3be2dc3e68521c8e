//! An isolated pi environment: everything pi reads or writes lives in one temporary directory,
//! and its only model is the fake server.
//!
//! pi reads settings, models, sessions and extensions from its agent directory and the user's
//! home, and would reach the network at startup; a test must see none of the machine's state
//! and leave none behind, so this builds a fresh agent directory, HOME and TMPDIR per test.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

use super::{PiBinary, PiError, io_err};
use crate::fake_llm::FakeLlm;

/// Flags that keep pi from loading anything from the machine: context files (`AGENTS.md`),
/// skills, prompt templates, themes, and extensions it would discover (`-e` still loads).
pub const HERMETIC_ARGS: &[&str] = &[
    "--no-context-files",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-extensions",
];

/// Variables removed from pi's environment, so a test run inside a pi session (or a shell
/// configured for pi) stays hermetic.
pub const REMOVED_VARS: &[&str] = &[
    "PI_CODING_AGENT_SESSION_DIR",
    "PI_SKIP_VERSION_CHECK",
    "PI_SESSION_ID",
    "PI_SESSION_FILE",
    "PI_PROVIDER",
    "PI_MODEL",
    "PI_CODING_AGENT",
    "AI_AGENT",
    "XDG_RUNTIME_DIR",
];

/// The provider name of the fake OpenAI-compatible models in `models.json`.
pub const PROVIDER: &str = "fake";
/// The provider name of the fake Anthropic models.
pub const ANTHROPIC_PROVIDER: &str = "fakeant";
/// The provider name of the fake OpenAI-compatible models that think: pi sends them its
/// thinking level as `reasoning_effort`, so a request shows the level a pi ran at.
pub const THINKING_PROVIDER: &str = "fakethink";
/// The API key in `models.json` (not an environment variable name, so pi takes it literally).
pub const API_KEY: &str = "fake-key";

/// Builds a [`PiEnv`].
#[derive(Debug)]
pub struct PiEnvBuilder {
    openai_url: String,
    anthropic_url: String,
    models: Vec<String>,
    anthropic_models: Vec<String>,
    thinking_models: Vec<String>,
    default_model: Option<String>,
    settings: Map<String, Value>,
}

impl PiEnvBuilder {
    /// Adds an OpenAI-compatible model id (provider [`PROVIDER`]); give the parent and each
    /// sheep their own, so the fake server scripts them separately.
    #[must_use]
    pub fn model(mut self, id: &str) -> Self {
        self.models.push(id.to_owned());
        self
    }

    /// Adds an Anthropic-messages model id (provider [`ANTHROPIC_PROVIDER`]).
    #[must_use]
    pub fn anthropic_model(mut self, id: &str) -> Self {
        self.anthropic_models.push(id.to_owned());
        self
    }

    /// Adds an OpenAI-compatible model id that reasons (provider [`THINKING_PROVIDER`]): its
    /// requests carry pi's thinking level as `reasoning_effort` (none when thinking is off).
    #[must_use]
    pub fn thinking_model(mut self, id: &str) -> Self {
        self.thinking_models.push(id.to_owned());
        self
    }

    /// The model pi uses without `--model` (default: the first model added).
    #[must_use]
    pub fn default_model(mut self, id: &str) -> Self {
        self.default_model = Some(id.to_owned());
        self
    }

    /// Sets a top-level key of `settings.json`, over the hermetic defaults.
    #[must_use]
    pub fn setting(mut self, key: &str, value: Value) -> Self {
        self.settings.insert(key.to_owned(), value);
        self
    }

    /// Creates the directories and files.
    ///
    /// # Errors
    /// When the temporary directory or a file cannot be written.
    pub fn build(mut self) -> Result<PiEnv, PiError> {
        if self.models.is_empty() && self.anthropic_models.is_empty() {
            self.models.push("fake-model".to_owned());
        }
        // `SHEPHERD_KEEP_TEST_DIRS=1` keeps the directory (logs, journals, notes) for a post-mortem.
        let keep = std::env::var_os("SHEPHERD_KEEP_TEST_DIRS").is_some_and(|v| v == "1");
        let root = tempfile::Builder::new()
            .prefix("shepherd-pi-")
            .disable_cleanup(keep)
            .tempdir()
            .map_err(io_err("creating a temporary directory"))?;
        let base = root.path();
        let env = PiEnv {
            agent_dir: base.join("agent"),
            home: base.join("home"),
            work_dir: base.join("work"),
            tmp_dir: base.join("tmp"),
            root,
        };
        for dir in [&env.agent_dir, &env.home, &env.work_dir, &env.tmp_dir] {
            std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        }
        let model_list = |ids: &[String], context: u64| -> Vec<Value> {
            ids.iter()
                .map(|id| json!({"id": id, "contextWindow": context, "maxTokens": 4096}))
                .collect()
        };
        let mut providers = Map::new();
        if !self.models.is_empty() {
            providers.insert(
                PROVIDER.to_owned(),
                json!({
                    "baseUrl": self.openai_url, "api": "openai-completions", "apiKey": API_KEY,
                    "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                    "models": model_list(&self.models, 128_000),
                }),
            );
        }
        if !self.thinking_models.is_empty() {
            let models: Vec<Value> = model_list(&self.thinking_models, 128_000)
                .into_iter()
                .map(|mut model| {
                    model["reasoning"] = json!(true);
                    model
                })
                .collect();
            providers.insert(
                THINKING_PROVIDER.to_owned(),
                json!({
                    "baseUrl": self.openai_url, "api": "openai-completions", "apiKey": API_KEY,
                    "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": true},
                    "models": models,
                }),
            );
        }
        if !self.anthropic_models.is_empty() {
            providers.insert(
                ANTHROPIC_PROVIDER.to_owned(),
                json!({
                    "baseUrl": self.anthropic_url, "api": "anthropic-messages", "apiKey": API_KEY,
                    "models": model_list(&self.anthropic_models, 200_000),
                }),
            );
        }
        let (provider, model) = match (&self.default_model, self.models.first()) {
            (Some(id), _) if self.anthropic_models.contains(id) => (ANTHROPIC_PROVIDER, id),
            (Some(id), _) if self.thinking_models.contains(id) => (THINKING_PROVIDER, id),
            (Some(id), _) | (None, Some(id)) => (PROVIDER, id),
            (None, None) => (ANTHROPIC_PROVIDER, &self.anthropic_models[0]),
        };
        let mut settings = json!({
            "defaultProvider": provider,
            "defaultModel": model,
            "quietStartup": true,
            "collapseChangelog": true,
            "enableInstallTelemetry": false,
            "enableAnalytics": false,
            "cacheWarming": "off",
            "retry": {"enabled": false, "provider": {"maxRetries": 0}},
            "compaction": {"enabled": false},
        });
        if let Some(map) = settings.as_object_mut() {
            map.extend(self.settings);
        }
        env.write("models.json", &json!({"providers": providers}))?;
        env.write("settings.json", &settings)?;
        Ok(env)
    }
}

/// An isolated pi environment: a temporary agent directory (`models.json` pointing at a
/// [`FakeLlm`], a hermetic `settings.json`), an empty HOME, a working directory and a TMPDIR.
/// Everything is removed when it is dropped.
#[derive(Debug)]
pub struct PiEnv {
    root: tempfile::TempDir,
    agent_dir: PathBuf,
    home: PathBuf,
    work_dir: PathBuf,
    tmp_dir: PathBuf,
}

impl PiEnv {
    /// Starts a builder whose models talk to `fake`.
    #[must_use]
    pub fn builder(fake: &FakeLlm) -> PiEnvBuilder {
        PiEnvBuilder {
            openai_url: fake.openai_base_url(),
            anthropic_url: fake.url(),
            models: Vec::new(),
            anthropic_models: Vec::new(),
            thinking_models: Vec::new(),
            default_model: None,
            settings: Map::new(),
        }
    }

    /// An environment with one model, `fake-model`.
    ///
    /// # Errors
    /// As [`PiEnvBuilder::build`].
    pub fn new(fake: &FakeLlm) -> Result<Self, PiError> {
        Self::builder(fake).build()
    }

    fn write(&self, name: &str, value: &Value) -> Result<(), PiError> {
        let path = self.agent_dir.join(name);
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        std::fs::write(&path, text).map_err(io_err(format!("writing {}", path.display())))
    }

    /// The temporary directory holding everything else.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `PI_CODING_AGENT_DIR`: `models.json`, `settings.json`, `sessions/`.
    #[must_use]
    pub fn agent_dir(&self) -> &Path {
        &self.agent_dir
    }

    /// Where pi writes sessions by default.
    #[must_use]
    pub fn sessions_dir(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// `HOME` (and the XDG directories under it): nothing should appear here.
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory pi runs in.
    #[must_use]
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// The variables to set for pi.
    #[must_use]
    pub fn vars(&self) -> Vec<(&'static str, OsString)> {
        let home = &self.home;
        vec![
            ("PI_CODING_AGENT_DIR", self.agent_dir.clone().into()),
            ("PI_OFFLINE", "1".into()),
            ("HOME", home.clone().into()),
            ("XDG_CONFIG_HOME", home.join(".config").into()),
            ("XDG_CACHE_HOME", home.join(".cache").into()),
            ("XDG_DATA_HOME", home.join(".local/share").into()),
            ("XDG_STATE_HOME", home.join(".local/state").into()),
            ("TMPDIR", self.tmp_dir.clone().into()),
            ("NO_COLOR", "1".into()),
        ]
    }

    /// Sets [`vars`](Self::vars), removes [`REMOVED_VARS`] and runs in the working directory.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        for var in REMOVED_VARS {
            command.env_remove(var);
        }
        command.envs(self.vars()).current_dir(&self.work_dir)
    }

    /// A command for `pi` in this environment with [`HERMETIC_ARGS`] and stdin from
    /// `/dev/null` (print and JSON modes read stdin to its end otherwise).
    #[must_use]
    pub fn command(&self, pi: &PiBinary) -> Command {
        let mut command = Command::new(&pi.path);
        self.apply(&mut command)
            .args(HERMETIC_ARGS)
            .stdin(Stdio::null());
        command
    }

    /// Every path under HOME, relative to it (empty when pi wrote nothing there).
    #[must_use]
    pub fn home_entries(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut dirs = vec![self.home.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path.clone());
                }
                out.push(path.strip_prefix(&self.home).unwrap_or(&path).to_owned());
            }
        }
        out.sort();
        out
    }
}
