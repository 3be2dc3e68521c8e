//! The settings model: keys, defaults, validation, layering and migration, without file I/O.
//!
//! Shepherd keeps the original extension's settings files and keys so its users keep what they
//! configured: a user file and an optional project file that only takes effect when it says
//! `"projectScope": true` and then stands alone (its missing keys take built-in defaults, not
//! the user's values). Some keys are the user's alone, because a repository must never be able to
//! turn off the user's own safety gates (`confirmProjectAgents`) or lift their limits.
//!
//! Reading is lenient, as in the original: a stored value that is not valid falls back to its
//! default and the fallback is reported as data. Writing is strict: a value typed by a person is
//! checked against the key's rules and refused, naming the key and what it accepts. The file
//! side (paths, atomic writes, the legacy `settings.json` rename) lives in `shepherd-config`;
//! everything here works on parsed JSON objects.
//!
//! The only open JSON is a settings file's own object (see `layers`) and a key's value as
//! stored there.

mod key;
mod layers;
mod webhook;

use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::agent_def::AgentScope;
pub use crate::backend::Backend;

pub use key::{InvalidSettingValue, SettingKey, UnknownSettingKey};
pub use layers::{
    Layer, LayerDoc, LayerParseError, PROJECT_SCOPE_KEY, ResolvedSettings, SettingSource,
    SettingsWarning, UserOnlyKey, activate_project_layer, deactivate_project_layer,
    is_project_layer_active, parse_layer, resolve, set_in_project_layer, set_in_user_layer,
};
pub use webhook::{WebhookFormat, is_webhook_url};

/// Every setting with its effective value. Built from [`resolve`]; the defaults are
/// [`EffectiveSettings::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveSettings {
    /// Which agent-definition directories are searched (`user`).
    pub agent_scope: AgentScope,
    /// Whether the bundled agents are offered (`true`).
    pub include_bundled_agents: bool,
    /// Whether project agents need the user's approval before they run (`true`; user file only).
    pub confirm_project_agents: bool,
    /// Whether the legacy blocking `subagent` tool is offered (`false`; user file only).
    pub subagent_compatibility: bool,
    /// Keep a sheep's pane open after its task ends (`true`).
    pub keep_open: bool,
    /// Keep a sheep's agent running after its task ends (`false`).
    pub stay_open: bool,
    /// Write fieldnotes for delegated tasks (`true`).
    pub fieldnotes: bool,
    /// Show the walking sheep emoji in the herd widget (`true`).
    pub emoji_sheep: bool,
    /// Default task and reply deadline, in minutes (`20`).
    pub timeout_minutes: f64,
    /// Minutes a sheep may wait on an answer before one reminder; below 1 disables (`5`).
    pub stale_wait_threshold_minutes: f64,
    /// Where sheep run (`auto`).
    pub backend: Backend,
    /// How sheep are confined when neither their definition nor their spawn says (`off`).
    pub sandbox: crate::sandbox::Sandbox,
    /// Reminders sent to a sheep that ends its turn without `shepherd_done` (`1`).
    pub done_nudges: u32,
    /// Most tasks one legacy `subagent` call may carry (`8`).
    pub max_parallel_tasks: u32,
    /// Most of those tasks running at once (`4`).
    pub max_concurrency: u32,
    /// How deep sheep may spawn herds of their own (`2`; user file only).
    pub max_depth: u32,
    /// Minutes a broker with no sheep and no clients waits before it exits (`10`).
    pub broker_idle_minutes: f64,
    /// Most sheep one herd runs at once; 0 means no limit (`0`).
    pub max_sheep: u32,
    /// Minutes a task's sheep may stay silent before it is nudged, and again before the task
    /// settles blocked; 0 turns the watchdog off (`0`).
    pub stall_watchdog_minutes: f64,
    /// Minutes a remote host may stay unreachable before its sheep's tasks fail (`10`).
    pub remote_link_timeout_minutes: f64,
    /// Most sheep running turns at once on one provider key; 0 means no limit (`0`).
    pub max_concurrent_turns: u32,
    /// Seconds a rate- or usage-limited task waits when the provider names no reset (`60`).
    pub rate_limit_wait_seconds: u32,
    /// Whether one sheep's provider limit holds every sheep on its provider key until the
    /// reset; off, each limited sheep waits alone and its herd-mates keep asking (`true`).
    pub hold_provider_keys: bool,
    /// Minutes a limit's reset may lie ahead before a task whose agent names a `fallback:` is
    /// handed to it instead of waiting (`15`).
    pub fallback_after_minutes: f64,
    /// How `shepherd merge` lands each branch (`merge`).
    pub merge_strategy: crate::strategy::Strategy,
    /// Minutes a merge's check may run before it is stopped and counts as failed (`30`).
    pub merge_check_timeout_minutes: f64,
    /// Tell the desktop (freedesktop notifications) when the herd needs the person (`false`;
    /// user file only).
    pub notify_desktop: bool,
    /// The webhook posted to when the herd needs the person (none; user file only).
    pub notify_webhook: Option<String>,
    /// The shape of the webhook's body (`auto`; user file only).
    pub notify_webhook_format: WebhookFormat,
    /// Whether the webhook carries what a sheep wrote, its question or its error (`false`: it
    /// says who needs the person and why, in Shepherd's words; user file only).
    pub notify_words: bool,
}

impl Default for EffectiveSettings {
    fn default() -> Self {
        Self {
            agent_scope: AgentScope::User,
            include_bundled_agents: true,
            confirm_project_agents: true,
            subagent_compatibility: false,
            keep_open: true,
            stay_open: false,
            fieldnotes: true,
            emoji_sheep: true,
            timeout_minutes: 20.0,
            stale_wait_threshold_minutes: 5.0,
            backend: Backend::Auto,
            sandbox: crate::sandbox::Sandbox::Off,
            done_nudges: 1,
            max_parallel_tasks: 8,
            max_concurrency: 4,
            max_depth: 2,
            broker_idle_minutes: 10.0,
            max_sheep: 0,
            stall_watchdog_minutes: 0.0,
            remote_link_timeout_minutes: 10.0,
            max_concurrent_turns: 0,
            rate_limit_wait_seconds: 60,
            hold_provider_keys: true,
            fallback_after_minutes: 15.0,
            merge_strategy: crate::strategy::Strategy::Merge,
            merge_check_timeout_minutes: 30.0,
            notify_desktop: false,
            notify_webhook: None,
            notify_webhook_format: WebhookFormat::Auto,
            notify_words: false,
        }
    }
}

impl EffectiveSettings {
    /// The default deadline of a delegated task or a tracked reply.
    pub fn timeout(&self) -> Duration {
        minutes(self.timeout_minutes)
    }

    /// How long a wait may go unanswered before the one stale-wait reminder; `None` when
    /// reminders are off (a threshold below one minute).
    pub fn stale_wait_threshold(&self) -> Option<Duration> {
        (self.stale_wait_threshold_minutes >= 1.0)
            .then(|| minutes(self.stale_wait_threshold_minutes))
    }

    /// How long a merge's check may run.
    pub fn merge_check_timeout(&self) -> Duration {
        minutes(self.merge_check_timeout_minutes)
    }

    /// The most sheep one herd may run at once, when limited.
    pub fn max_sheep(&self) -> Option<u32> {
        (self.max_sheep > 0).then_some(self.max_sheep)
    }

    /// How long a task's sheep may stay silent before the watchdog acts; `None` when it is off
    /// (the default: a task never settles just because its sheep went quiet).
    pub fn stall_watchdog(&self) -> Option<Duration> {
        (self.stall_watchdog_minutes > 0.0).then(|| minutes(self.stall_watchdog_minutes))
    }

    /// How long a remote host may stay unreachable before its sheep's tasks fail.
    pub fn remote_link_timeout(&self) -> Duration {
        minutes(self.remote_link_timeout_minutes)
    }

    /// The most sheep that may run turns at once on one provider key, when limited.
    pub fn max_concurrent_turns(&self) -> Option<u32> {
        (self.max_concurrent_turns > 0).then_some(self.max_concurrent_turns)
    }

    /// How long a limited task waits when the provider's error names no reset.
    pub fn rate_limit_wait(&self) -> Duration {
        Duration::from_secs(u64::from(self.rate_limit_wait_seconds.max(1)))
    }

    /// How far ahead a limit's reset may lie before a task falls back.
    pub fn fallback_after(&self) -> Duration {
        minutes(self.fallback_after_minutes)
    }

    /// How long an idle broker lingers before it exits.
    pub fn broker_idle(&self) -> Duration {
        minutes(self.broker_idle_minutes)
    }

    /// One setting's value in its JSON form (what `settings get` prints and files store).
    pub fn get(&self, key: SettingKey) -> serde_json::Value {
        use serde_json::Value;
        match key {
            SettingKey::AgentScope => Value::from(self.agent_scope.as_str()),
            SettingKey::IncludeBundledAgents => Value::from(self.include_bundled_agents),
            SettingKey::ConfirmProjectAgents => Value::from(self.confirm_project_agents),
            SettingKey::SubagentCompatibility => Value::from(self.subagent_compatibility),
            SettingKey::KeepOpen => Value::from(self.keep_open),
            SettingKey::StayOpen => Value::from(self.stay_open),
            SettingKey::Fieldnotes => Value::from(self.fieldnotes),
            SettingKey::EmojiSheep => Value::from(self.emoji_sheep),
            SettingKey::Timeout => key::number_value(self.timeout_minutes),
            SettingKey::StaleWaitThreshold => key::number_value(self.stale_wait_threshold_minutes),
            SettingKey::Backend => Value::from(self.backend.as_str()),
            SettingKey::Sandbox => Value::from(self.sandbox.as_str()),
            SettingKey::DoneNudges => Value::from(self.done_nudges),
            SettingKey::MaxParallelTasks => Value::from(self.max_parallel_tasks),
            SettingKey::MaxConcurrency => Value::from(self.max_concurrency),
            SettingKey::MaxDepth => Value::from(self.max_depth),
            SettingKey::BrokerIdleMinutes => key::number_value(self.broker_idle_minutes),
            SettingKey::MaxSheep => Value::from(self.max_sheep),
            SettingKey::StallWatchdog => key::number_value(self.stall_watchdog_minutes),
            SettingKey::RemoteLinkTimeout => key::number_value(self.remote_link_timeout_minutes),
            SettingKey::MaxConcurrentTurns => Value::from(self.max_concurrent_turns),
            SettingKey::RateLimitWaitSeconds => Value::from(self.rate_limit_wait_seconds),
            SettingKey::HoldProviderKeys => Value::from(self.hold_provider_keys),
            SettingKey::FallbackAfterMinutes => key::number_value(self.fallback_after_minutes),
            SettingKey::MergeStrategy => Value::from(self.merge_strategy.as_str()),
            SettingKey::MergeCheckTimeout => key::number_value(self.merge_check_timeout_minutes),
            SettingKey::NotifyDesktop => Value::from(self.notify_desktop),
            SettingKey::NotifyWebhook => {
                Value::from(self.notify_webhook.clone().unwrap_or_default())
            }
            SettingKey::NotifyWebhookFormat => Value::from(self.notify_webhook_format.as_str()),
            SettingKey::NotifyWords => Value::from(self.notify_words),
        }
    }

    /// Stores a value already checked by [`SettingKey::read_stored`] or
    /// [`SettingKey::parse_input`]; a value of the wrong shape leaves the setting unchanged.
    fn set_checked(&mut self, key: SettingKey, value: &serde_json::Value) {
        let flag = value.as_bool();
        let number = value.as_f64();
        let count = number.map(|n| n as u32);
        let text = value.as_str().unwrap_or_default();
        let slot_bool = |slot: &mut bool| {
            if let Some(flag) = flag {
                *slot = flag;
            }
        };
        let slot_number = |slot: &mut f64| {
            if let Some(number) = number {
                *slot = number;
            }
        };
        let slot_count = |slot: &mut u32| {
            if let Some(count) = count {
                *slot = count;
            }
        };
        match key {
            SettingKey::AgentScope => {
                if let Ok(scope) = text.parse() {
                    self.agent_scope = scope;
                }
            }
            SettingKey::Backend => {
                if let Some(backend) = Backend::ALL.into_iter().find(|b| b.as_str() == text) {
                    self.backend = backend;
                }
            }
            SettingKey::Sandbox => {
                if let Ok(sandbox) = text.parse() {
                    self.sandbox = sandbox;
                }
            }
            SettingKey::IncludeBundledAgents => slot_bool(&mut self.include_bundled_agents),
            SettingKey::ConfirmProjectAgents => slot_bool(&mut self.confirm_project_agents),
            SettingKey::SubagentCompatibility => slot_bool(&mut self.subagent_compatibility),
            SettingKey::KeepOpen => slot_bool(&mut self.keep_open),
            SettingKey::StayOpen => slot_bool(&mut self.stay_open),
            SettingKey::Fieldnotes => slot_bool(&mut self.fieldnotes),
            SettingKey::EmojiSheep => slot_bool(&mut self.emoji_sheep),
            SettingKey::Timeout => slot_number(&mut self.timeout_minutes),
            SettingKey::StaleWaitThreshold => slot_number(&mut self.stale_wait_threshold_minutes),
            SettingKey::BrokerIdleMinutes => slot_number(&mut self.broker_idle_minutes),
            SettingKey::DoneNudges => slot_count(&mut self.done_nudges),
            SettingKey::MaxParallelTasks => slot_count(&mut self.max_parallel_tasks),
            SettingKey::MaxConcurrency => slot_count(&mut self.max_concurrency),
            SettingKey::MaxDepth => slot_count(&mut self.max_depth),
            SettingKey::MaxSheep => slot_count(&mut self.max_sheep),
            SettingKey::StallWatchdog => slot_number(&mut self.stall_watchdog_minutes),
            SettingKey::RemoteLinkTimeout => {
                slot_number(&mut self.remote_link_timeout_minutes);
            }
            SettingKey::MaxConcurrentTurns => slot_count(&mut self.max_concurrent_turns),
            SettingKey::RateLimitWaitSeconds => slot_count(&mut self.rate_limit_wait_seconds),
            SettingKey::HoldProviderKeys => slot_bool(&mut self.hold_provider_keys),
            SettingKey::FallbackAfterMinutes => slot_number(&mut self.fallback_after_minutes),
            SettingKey::MergeStrategy => {
                if let Ok(strategy) = crate::strategy::Strategy::parse(text) {
                    self.merge_strategy = strategy;
                }
            }
            SettingKey::MergeCheckTimeout => slot_number(&mut self.merge_check_timeout_minutes),
            SettingKey::NotifyDesktop => slot_bool(&mut self.notify_desktop),
            SettingKey::NotifyWebhook => {
                if let Some(url) = value.as_str() {
                    self.notify_webhook = Some(url.to_owned()).filter(|url| !url.is_empty());
                }
            }
            SettingKey::NotifyWebhookFormat => {
                if let Some(format) = WebhookFormat::parse(text) {
                    self.notify_webhook_format = format;
                }
            }
            SettingKey::NotifyWords => slot_bool(&mut self.notify_words),
        }
    }
}

/// Serialises as an object of every key's JSON value, keys in [`SettingKey::ALL`] order.
impl Serialize for EffectiveSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(SettingKey::ALL.len()))?;
        for key in SettingKey::ALL {
            map.serialize_entry(key.name(), &self.get(key))?;
        }
        map.end()
    }
}

fn minutes(value: f64) -> Duration {
    Duration::try_from_secs_f64(value * 60.0).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests;
