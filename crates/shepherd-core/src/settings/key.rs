//! The setting keys: their names in the files, who may set them, and what values they accept.
//!
//! Each key has one [`ValueKind`]; the kind decides both the strict check of a value a person
//! types ([`SettingKey::parse_input`]) and the lenient reading of a stored value
//! ([`SettingKey::read_stored`]), so the two can never disagree about what is valid.
//!
//! Values are JSON because they are read from and written to the settings files' objects.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Stored timeouts at or above this are milliseconds written by old versions of the original.
const LEGACY_MILLISECONDS_FROM: f64 = 1000.0;

/// One setting, named as in the settings files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingKey {
    /// `agentScope`.
    AgentScope,
    /// `includeBundledAgents`.
    IncludeBundledAgents,
    /// `confirmProjectAgents` (user file only).
    ConfirmProjectAgents,
    /// `subagentCompatibility` (user file only).
    SubagentCompatibility,
    /// `keepOpen`.
    KeepOpen,
    /// `stayOpen`.
    StayOpen,
    /// `fieldnotes`.
    Fieldnotes,
    /// `emojiSheep`.
    EmojiSheep,
    /// `timeout` (minutes).
    Timeout,
    /// `staleWaitThreshold` (minutes).
    StaleWaitThreshold,
    /// `backend`.
    Backend,
    /// `sandbox`.
    Sandbox,
    /// `doneNudges`.
    DoneNudges,
    /// `maxParallelTasks`.
    MaxParallelTasks,
    /// `maxConcurrency`.
    MaxConcurrency,
    /// `maxDepth` (user file only).
    MaxDepth,
    /// `brokerIdleMinutes`.
    BrokerIdleMinutes,
    /// `maxSheep` (0: no limit).
    MaxSheep,
    /// `stallWatchdog` (minutes; 0: off).
    StallWatchdog,
    /// `remoteLinkTimeoutMinutes` (minutes).
    #[serde(rename = "remoteLinkTimeoutMinutes")]
    RemoteLinkTimeout,
    /// `maxConcurrentTurns` (per provider key; 0: no limit).
    MaxConcurrentTurns,
    /// `rateLimitWaitSeconds`.
    RateLimitWaitSeconds,
    /// `holdProviderKeys`.
    HoldProviderKeys,
    /// `fallbackAfterMinutes`.
    FallbackAfterMinutes,
    /// `mergeStrategy`.
    MergeStrategy,
    /// `mergeCheckTimeout` (minutes).
    MergeCheckTimeout,
    /// `notifyDesktop` (user file only).
    NotifyDesktop,
    /// `notifyWebhook` (user file only; empty: none).
    NotifyWebhook,
    /// `notifyWebhookFormat` (user file only).
    NotifyWebhookFormat,
    /// `notifyWords` (user file only).
    NotifyWords,
}

/// The shape of a key's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    Bool,
    Scope,
    Backend,
    Sandbox,
    /// Positive minutes; stored values of 1000 and more are legacy milliseconds.
    Timeout,
    /// Any number of minutes; below 1 disables.
    Threshold,
    /// A whole number at least `min`.
    Count {
        min: u32,
    },
    /// Positive minutes.
    Minutes,
    /// Minutes, 0 or more; 0 (or `off`) turns the feature off.
    MinutesOrOff,
    /// A merge strategy.
    Strategy,
    /// A webhook's `http(s)://` address, or empty (`off`) for none.
    WebhookUrl,
    /// A webhook body's shape.
    WebhookFormat,
}

impl SettingKey {
    /// Every key, in the order settings are listed.
    pub const ALL: [Self; 30] = [
        Self::AgentScope,
        Self::IncludeBundledAgents,
        Self::ConfirmProjectAgents,
        Self::SubagentCompatibility,
        Self::KeepOpen,
        Self::StayOpen,
        Self::Fieldnotes,
        Self::EmojiSheep,
        Self::Timeout,
        Self::StaleWaitThreshold,
        Self::Backend,
        Self::Sandbox,
        Self::DoneNudges,
        Self::MaxParallelTasks,
        Self::MaxConcurrency,
        Self::MaxDepth,
        Self::BrokerIdleMinutes,
        Self::MaxSheep,
        Self::StallWatchdog,
        Self::RemoteLinkTimeout,
        Self::MaxConcurrentTurns,
        Self::RateLimitWaitSeconds,
        Self::HoldProviderKeys,
        Self::FallbackAfterMinutes,
        Self::MergeStrategy,
        Self::MergeCheckTimeout,
        Self::NotifyDesktop,
        Self::NotifyWebhook,
        Self::NotifyWebhookFormat,
        Self::NotifyWords,
    ];

    /// The key as written in the settings files.
    pub fn name(self) -> &'static str {
        match self {
            Self::AgentScope => "agentScope",
            Self::IncludeBundledAgents => "includeBundledAgents",
            Self::ConfirmProjectAgents => "confirmProjectAgents",
            Self::SubagentCompatibility => "subagentCompatibility",
            Self::KeepOpen => "keepOpen",
            Self::StayOpen => "stayOpen",
            Self::Fieldnotes => "fieldnotes",
            Self::EmojiSheep => "emojiSheep",
            Self::Timeout => "timeout",
            Self::StaleWaitThreshold => "staleWaitThreshold",
            Self::Backend => "backend",
            Self::Sandbox => "sandbox",
            Self::DoneNudges => "doneNudges",
            Self::MaxParallelTasks => "maxParallelTasks",
            Self::MaxConcurrency => "maxConcurrency",
            Self::MaxDepth => "maxDepth",
            Self::BrokerIdleMinutes => "brokerIdleMinutes",
            Self::MaxSheep => "maxSheep",
            Self::StallWatchdog => "stallWatchdog",
            Self::RemoteLinkTimeout => "remoteLinkTimeoutMinutes",
            Self::MaxConcurrentTurns => "maxConcurrentTurns",
            Self::RateLimitWaitSeconds => "rateLimitWaitSeconds",
            Self::HoldProviderKeys => "holdProviderKeys",
            Self::FallbackAfterMinutes => "fallbackAfterMinutes",
            Self::MergeStrategy => "mergeStrategy",
            Self::MergeCheckTimeout => "mergeCheckTimeout",
            Self::NotifyDesktop => "notifyDesktop",
            Self::NotifyWebhook => "notifyWebhook",
            Self::NotifyWebhookFormat => "notifyWebhookFormat",
            Self::NotifyWords => "notifyWords",
        }
    }

    /// Looks a key up by its file name (exact, case-sensitive as in the files).
    pub fn parse_name(raw: &str) -> Result<Self, UnknownSettingKey> {
        Self::ALL
            .into_iter()
            .find(|key| key.name() == raw)
            .ok_or_else(|| UnknownSettingKey(raw.to_owned()))
    }

    /// Whether only the user file may set this key. A project file is repository-controlled:
    /// it must not switch off the approval gate, turn on the legacy tool, lift the recursion
    /// guard, let sheep out of the sandbox the user asked for, or send the herd's news (and the
    /// sheep's words) to an address of its choosing.
    pub fn is_user_only(self) -> bool {
        matches!(
            self,
            Self::ConfirmProjectAgents
                | Self::SubagentCompatibility
                | Self::MaxDepth
                | Self::Sandbox
                | Self::NotifyDesktop
                | Self::NotifyWebhook
                | Self::NotifyWebhookFormat
                | Self::NotifyWords
        )
    }

    /// What the key means, in a few words.
    pub fn description(self) -> &'static str {
        match self {
            Self::AgentScope => "which agent definitions are searched",
            Self::IncludeBundledAgents => "offer the bundled agents",
            Self::ConfirmProjectAgents => "project agents need approval before they run",
            Self::SubagentCompatibility => "offer the legacy subagent tool",
            Self::KeepOpen => "keep a sheep's pane open after its task",
            Self::StayOpen => "keep a sheep's agent running after its task",
            Self::Fieldnotes => "write fieldnotes for delegated tasks",
            Self::EmojiSheep => "show the sheep emoji in the herd widget",
            Self::Timeout => "default task and reply deadline, in minutes",
            Self::StaleWaitThreshold => "minutes before a stale-wait reminder (below 1: off)",
            Self::Backend => "where sheep run",
            Self::Sandbox => "how sheep are confined unless their definition or spawn says",
            Self::DoneNudges => "reminders to a sheep that forgets shepherd_done",
            Self::MaxParallelTasks => "most tasks in one subagent call",
            Self::MaxConcurrency => "most subagent tasks running at once",
            Self::MaxDepth => "how deep sheep may spawn their own herds",
            Self::BrokerIdleMinutes => "minutes an idle broker waits before it exits",
            Self::MaxSheep => "most sheep one herd runs at once (0: no limit)",
            Self::StallWatchdog => {
                "minutes of silence before a task's sheep is nudged, then blocked (0: off)"
            }
            Self::RemoteLinkTimeout => {
                "minutes a remote host may stay unreachable before its sheep's tasks fail"
            }
            Self::MaxConcurrentTurns => {
                "most sheep running turns at once on one provider account (0: no limit)"
            }
            Self::RateLimitWaitSeconds => {
                "seconds a rate-limited task waits when the provider names no reset time"
            }
            Self::HoldProviderKeys => {
                "when one sheep meets a provider limit, hold every sheep on that account until the reset"
            }
            Self::FallbackAfterMinutes => {
                "minutes a limit may last before its task goes to the agent's fallback"
            }
            Self::MergeStrategy => "how shepherd merge lands each branch",
            Self::MergeCheckTimeout => "minutes a merge's check may run",
            Self::NotifyDesktop => "a desktop notification when the herd needs you",
            Self::NotifyWebhook => "a webhook posted to when the herd needs you (empty: none)",
            Self::NotifyWebhookFormat => "the webhook's body: auto, json, slack, discord or ntfy",
            Self::NotifyWords => {
                "send what a sheep wrote (its question, its error) in the webhook too"
            }
        }
    }

    fn kind(self) -> ValueKind {
        match self {
            Self::AgentScope => ValueKind::Scope,
            Self::Backend => ValueKind::Backend,
            Self::Sandbox => ValueKind::Sandbox,
            Self::Timeout => ValueKind::Timeout,
            Self::StaleWaitThreshold => ValueKind::Threshold,
            Self::BrokerIdleMinutes
            | Self::RemoteLinkTimeout
            | Self::FallbackAfterMinutes
            | Self::MergeCheckTimeout => ValueKind::Minutes,
            Self::MergeStrategy => ValueKind::Strategy,
            Self::NotifyWebhook => ValueKind::WebhookUrl,
            Self::NotifyWebhookFormat => ValueKind::WebhookFormat,
            Self::StallWatchdog => ValueKind::MinutesOrOff,
            Self::DoneNudges | Self::MaxDepth | Self::MaxSheep | Self::MaxConcurrentTurns => {
                ValueKind::Count { min: 0 }
            }
            Self::MaxParallelTasks | Self::MaxConcurrency | Self::RateLimitWaitSeconds => {
                ValueKind::Count { min: 1 }
            }
            Self::IncludeBundledAgents
            | Self::ConfirmProjectAgents
            | Self::SubagentCompatibility
            | Self::KeepOpen
            | Self::StayOpen
            | Self::Fieldnotes
            | Self::EmojiSheep
            | Self::HoldProviderKeys
            | Self::NotifyDesktop
            | Self::NotifyWords => ValueKind::Bool,
        }
    }

    /// What a person may type for this key.
    pub fn accepted(self) -> &'static str {
        match self.kind() {
            ValueKind::Bool => "true or false",
            ValueKind::Scope => "user, project or both",
            ValueKind::Backend => "auto, herdr, tmux or headless",
            ValueKind::Sandbox => crate::sandbox::Sandbox::EXPECTED,
            ValueKind::Timeout => {
                "a positive number of minutes below 1000, fractions allowed (e.g. 20 or 0.5)"
            }
            ValueKind::Threshold => "a number of minutes, 0 or more, or off (below 1 is off)",
            ValueKind::Count { min: 0 } => "a whole number, 0 or more",
            ValueKind::Count { .. } => "a whole number, 1 or more",
            ValueKind::Minutes => "a positive number of minutes, fractions allowed",
            ValueKind::MinutesOrOff => {
                "a number of minutes, fractions allowed, or 0 or off to turn it off"
            }
            ValueKind::Strategy => "merge, squash, rebase or ff-only",
            ValueKind::WebhookUrl => {
                "an http:// or https:// address without a user name or password, or off"
            }
            ValueKind::WebhookFormat => "auto, json, slack, discord or ntfy",
        }
    }

    /// Checks a value typed by a person and returns it in the form the files store.
    pub fn parse_input(self, raw: &str) -> Result<Value, InvalidSettingValue> {
        let text = raw.trim();
        let lowered = text.to_lowercase();
        let number = text.parse::<f64>().ok().filter(|n| n.is_finite());
        let parsed = match self.kind() {
            ValueKind::Bool => match lowered.as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            ValueKind::Scope => ["user", "project", "both"]
                .contains(&lowered.as_str())
                .then(|| Value::from(lowered.as_str())),
            ValueKind::Backend => ["auto", "herdr", "tmux", "headless"]
                .contains(&lowered.as_str())
                .then(|| Value::from(lowered.as_str())),
            ValueKind::Sandbox => lowered
                .parse::<crate::sandbox::Sandbox>()
                .ok()
                .map(|sandbox| Value::from(sandbox.as_str())),
            ValueKind::Timeout => number
                .filter(|n| *n > 0.0 && *n < LEGACY_MILLISECONDS_FROM)
                .map(number_value),
            ValueKind::Threshold if lowered == "off" => Some(Value::from(0)),
            ValueKind::Threshold => number.filter(|n| *n >= 0.0).map(number_value),
            ValueKind::Count { min } => text
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= min)
                .map(Value::from),
            ValueKind::Minutes => number.filter(|n| *n > 0.0).map(number_value),
            ValueKind::MinutesOrOff if lowered == "off" => Some(Value::from(0)),
            ValueKind::MinutesOrOff => number.filter(|n| *n >= 0.0).map(number_value),
            ValueKind::Strategy => crate::strategy::Strategy::parse(&lowered)
                .ok()
                .map(|strategy| Value::from(strategy.as_str())),
            ValueKind::WebhookUrl if text.is_empty() || lowered == "off" => Some(Value::from("")),
            ValueKind::WebhookUrl => {
                super::webhook::is_webhook_url(text).then(|| Value::from(text))
            }
            ValueKind::WebhookFormat => super::webhook::WebhookFormat::parse(&lowered)
                .map(|format| Value::from(format.as_str())),
        };
        parsed.ok_or_else(|| InvalidSettingValue {
            key: self,
            value: raw.to_owned(),
        })
    }

    /// Reads a value found in a settings file, leniently: returns the value to use (legacy
    /// millisecond timeouts converted to minutes), or `None` when it is not valid and the
    /// default applies.
    pub fn read_stored(self, stored: &Value) -> Option<Value> {
        let number = stored.as_f64().filter(|n| n.is_finite());
        match self.kind() {
            ValueKind::Bool => stored.as_bool().map(Value::Bool),
            ValueKind::Scope => stored
                .as_str()
                .filter(|text| ["user", "project", "both"].contains(text))
                .map(Value::from),
            ValueKind::Backend => stored
                .as_str()
                .filter(|text| ["auto", "herdr", "tmux", "headless"].contains(text))
                .map(Value::from),
            ValueKind::Sandbox => stored
                .as_str()
                .and_then(|text| text.parse::<crate::sandbox::Sandbox>().ok())
                .map(|sandbox| Value::from(sandbox.as_str())),
            ValueKind::Timeout => number.filter(|n| *n > 0.0).map(|n| {
                if n >= LEGACY_MILLISECONDS_FROM {
                    number_value((n / 60_000.0).round().max(1.0))
                } else {
                    number_value(n)
                }
            }),
            ValueKind::Threshold => number.map(number_value),
            ValueKind::Count { min } => number
                .filter(|n| n.fract() == 0.0 && *n >= f64::from(min) && *n <= f64::from(u32::MAX))
                .map(number_value),
            ValueKind::Minutes => number.filter(|n| *n > 0.0).map(number_value),
            ValueKind::MinutesOrOff => number.filter(|n| *n >= 0.0).map(number_value),
            ValueKind::Strategy => stored
                .as_str()
                .and_then(|text| crate::strategy::Strategy::parse(text).ok())
                .map(|strategy| Value::from(strategy.as_str())),
            ValueKind::WebhookUrl => stored
                .as_str()
                .filter(|text| text.is_empty() || super::webhook::is_webhook_url(text))
                .map(Value::from),
            ValueKind::WebhookFormat => stored
                .as_str()
                .and_then(super::webhook::WebhookFormat::parse)
                .map(|format| Value::from(format.as_str())),
        }
    }
}

impl fmt::Display for SettingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A key that is not a setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown setting {0:?}. Known settings: {known}.", known = known_names())]
pub struct UnknownSettingKey(pub String);

/// A value a key does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid value {value:?} for {key}: expected {accepted}.", accepted = key.accepted())]
pub struct InvalidSettingValue {
    /// The key.
    pub key: SettingKey,
    /// The value as typed.
    pub value: String,
}

fn known_names() -> String {
    SettingKey::ALL.map(SettingKey::name).join(", ")
}

/// A number as JSON: whole numbers without a fraction (`20`, not `20.0`).
pub(super) fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}
