//! A refused request's reply in the shape of the provider its API belongs to: the status, the
//! JSON body and the headers each agent's client reads to decide whether and when to retry.
//!
//! Every reply carries `retry-after` (whole seconds, rounded up, at least 1) and `retry-after-ms`
//! (the exact wait, which the OpenAI and Anthropic SDKs prefer), and is a plain JSON reply even
//! for a streamed request, as the real providers send it.

use serde_json::{Value, json};

use super::{LimitReason, Refusal, as_millis};
use crate::fake_llm::request::Api;

/// A refused request's reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LimitReply {
    pub(crate) status: u16,
    /// Extra headers, names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

/// The reply to `refusal` for a request in `api` naming `model`, sent at `now_ms` (Unix time in
/// milliseconds).
pub(crate) fn render(api: Api, refusal: &Refusal, model: &str, now_ms: u64) -> LimitReply {
    let wait_ms = as_millis(refusal.retry_after);
    let wait = whole_seconds(wait_ms);
    // The instant the limit resets, in whole seconds (rounded up, so never before the wait).
    let reset_at = now_ms.saturating_add(wait_ms).div_ceil(1000);
    let mut headers = vec![
        ("retry-after".to_owned(), wait.to_string()),
        ("retry-after-ms".to_owned(), wait_ms.to_string()),
    ];
    let mut add = |name: &str, value: String| headers.push((name.to_owned(), value));
    let usage = refusal.reason == LimitReason::UsageLimit;
    let (status, body) = match api {
        Api::AnthropicMessages if usage => {
            add("anthropic-ratelimit-unified-status", "rejected".to_owned());
            add("anthropic-ratelimit-unified-reset", reset_at.to_string());
            let message = "This request would exceed your account's rate limit. Please try again \
                           later.";
            (429, anthropic("rate_limit_error", message))
        }
        Api::AnthropicMessages if refusal.overloaded => {
            (529, anthropic("overloaded_error", "Overloaded"))
        }
        Api::AnthropicMessages => {
            add(
                "anthropic-ratelimit-requests-limit",
                refusal.limit.to_string(),
            );
            add("anthropic-ratelimit-requests-remaining", "0".to_owned());
            add("anthropic-ratelimit-requests-reset", rfc3339(reset_at));
            let message = format!(
                "This request would exceed your organization's rate limit of {} {}. For \
                 details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the \
                 response headers for current usage. Please try again later.",
                refusal.limit, refusal.per
            );
            (429, anthropic("rate_limit_error", &message))
        }
        Api::ChatCompletions | Api::Responses if usage => (
            429,
            json!({"error": {"type": "usage_limit_reached",
                             "message": "The usage limit has been reached",
                             "plan_type": "plus", "resets_at": reset_at,
                             "resets_in_seconds": wait}}),
        ),
        Api::ChatCompletions | Api::Responses if refusal.overloaded => (
            503,
            json!({"error": {"message": "The server is overloaded or not ready yet.",
                             "type": "server_error", "param": null,
                             "code": "server_is_overloaded"}}),
        ),
        Api::ChatCompletions | Api::Responses => {
            let reset = go_duration(wait);
            add("x-ratelimit-limit-requests", refusal.limit.to_string());
            add("x-ratelimit-remaining-requests", "0".to_owned());
            add("x-ratelimit-reset-requests", reset.clone());
            let message = format!(
                "Rate limit reached for requests in organization org-fake-llm on {}: Limit {}, \
                 Used {}, Requested 1. Please try again in {reset}. Visit \
                 https://platform.openai.com/account/rate-limits to learn more.",
                refusal.per, refusal.limit, refusal.limit
            );
            (
                429,
                json!({"error": {"message": message, "type": "requests", "param": null,
                                 "code": "rate_limit_exceeded"}}),
            )
        }
        Api::Gemini if usage => {
            let quota = json!({
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": model},
                }],
            });
            let message = "You exceeded your current quota, please check your plan and billing \
                           details. For more information on this error, head to: \
                           https://ai.google.dev/gemini-api/docs/rate-limits.";
            (
                429,
                gemini(
                    429,
                    "RESOURCE_EXHAUSTED",
                    message,
                    vec![quota, retry_info(wait)],
                ),
            )
        }
        Api::Gemini if refusal.overloaded => (
            503,
            gemini(
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
                Vec::new(),
            ),
        ),
        Api::Gemini => (
            429,
            gemini(
                429,
                "RESOURCE_EXHAUSTED",
                "Resource has been exhausted (e.g. check quota).",
                vec![retry_info(wait)],
            ),
        ),
    };
    LimitReply {
        status,
        headers,
        body,
    }
}

fn anthropic(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn gemini(code: u16, status: &str, message: &str, details: Vec<Value>) -> Value {
    let mut error = json!({"code": code, "message": message, "status": status});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({ "error": error })
}

fn retry_info(seconds: u64) -> Value {
    json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{seconds}s")})
}

/// Milliseconds as whole seconds, rounded up, at least 1 (what `retry-after` may carry).
pub(crate) fn whole_seconds(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1)
}

/// Seconds the way OpenAI writes a reset: `2s`, `1m30s`, `2h0m5s`.
pub(crate) fn go_duration(seconds: u64) -> String {
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// Unix seconds as an RFC 3339 UTC instant, e.g. `2023-11-14T22:13:20Z`.
pub(crate) fn rfc3339(unix: u64) -> String {
    let (days, rest) = (unix / 86_400, unix % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
