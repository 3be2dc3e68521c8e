//! What a pi test world is made of: where its sheep run, which agents and settings it has, and
//! the extension under test.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Where sheep run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `pi --mode rpc` under the supervisor, no terminal.
    Headless,
    /// Interactive pi in a pane of a private tmux server.
    Tmux,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Self::Headless => "headless",
            Self::Tmux => "tmux",
        }
    }
}

/// The extension's entry file in this repository.
pub fn extension_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../integrations/pi/extensions/shepherd.ts")
        .canonicalize()
        .expect("integrations/pi/extensions/shepherd.ts exists")
}

/// Options for one world.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sheep agents to define: (name, model id).
    pub agents: Vec<(&'static str, &'static str)>,
    /// Further models that think (provider `fakethink`), for definitions the test writes.
    pub thinking_models: Vec<&'static str>,
    /// Extra user settings (merged over `backend`).
    pub settings: Value,
    /// Extra environment for the parent pi (and so the broker and its sheep). `{fake}` in a
    /// value stands for the fake model server's URL.
    pub env: Vec<(String, String)>,
    /// Further extensions the parent pi loads beside ours.
    pub extensions: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            agents: vec![("worker", "worker-model")],
            thinking_models: Vec::new(),
            settings: json!({}),
            env: Vec::new(),
            extensions: Vec::new(),
        }
    }
}
