//! The rate-limit mode: the limiter's rules on a synthetic clock, then the server over real
//! HTTP on loopback (the in-flight cap per credential, a short window, each provider's bodies
//! and headers, usage limits, the control endpoints), never taking a script step when refusing.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::limits::reply::{go_duration, rfc3339, whole_seconds};
use super::limits::{Limiter, Limits, UsageLimit};
use super::request::{LimitReason, credential};
use crate::fake_llm::client::{self, HttpReply};
use crate::fake_llm::{DEFAULT_QUEUE, Exhausted, FakeLlm, Options, Script, Step};

const T: Duration = Duration::from_secs(10);

fn post(fake: &FakeLlm, path: &str, headers: &[(&str, &str)], body: &Value) -> HttpReply {
    let url = format!("{}{path}", fake.url());
    client::request_with("POST", &url, headers, Some(body), T).unwrap()
}

fn chat_body(stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

/// A chat completions request with `Authorization: Bearer <key>`.
fn chat_as(fake: &FakeLlm, key: &str) -> HttpReply {
    let bearer = format!("Bearer {key}");
    post(
        fake,
        "/v1/chat/completions",
        &[("authorization", &bearer)],
        &chat_body(false),
    )
}

fn gemini_body() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn always(text: &str) -> Exhausted {
    Exhausted::Step(Box::new(Step::text(text)))
}

fn with_limits(script: Script, limits: Limits) -> FakeLlm {
    let options = Options {
        limits,
        ..Options::default()
    };
    FakeLlm::start_with(script, &options).unwrap()
}

#[test]
fn credentials_come_from_each_providers_header_or_the_key_parameter() {
    let headers = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    assert_eq!(
        credential(&headers(&[("x-api-key", "sk-ant")]), ""),
        "sk-ant"
    );
    assert_eq!(
        credential(&headers(&[("authorization", "Bearer sk-oai")]), ""),
        "sk-oai"
    );
    assert_eq!(
        credential(&headers(&[("x-goog-api-key", "AIza")]), "alt=sse"),
        "AIza"
    );
    assert_eq!(credential(&headers(&[]), "alt=sse&key=AIzq"), "AIzq");
    assert_eq!(
        credential(&headers(&[("x-api-key", "")]), "alt=sse"),
        "anonymous"
    );
}

#[test]
fn the_limiter_caps_in_flight_and_windows_per_credential_on_its_clock() {
    let mut limiter = Limiter::default();
    limiter.set(Limits::new().with_max_in_flight(1));
    let t0 = Instant::now();
    limiter.admit("a", "m", DEFAULT_QUEUE, t0).unwrap();
    let refusal = limiter.admit("a", "m", DEFAULT_QUEUE, t0).unwrap_err();
    assert_eq!(refusal.reason, LimitReason::InFlight);
    assert_eq!(refusal.retry_after, Duration::from_secs(1));
    limiter.admit("b", "m", DEFAULT_QUEUE, t0).unwrap();
    limiter.finished("a");
    limiter.admit("a", "m", DEFAULT_QUEUE, t0).unwrap();

    let mut limiter = Limiter::default();
    limiter.set(Limits::new().with_window(2, Duration::from_secs(10)));
    let at = |secs| t0 + Duration::from_secs(secs);
    limiter.admit("a", "m", DEFAULT_QUEUE, at(0)).unwrap();
    limiter.admit("a", "m", DEFAULT_QUEUE, at(1)).unwrap();
    let refusal = limiter.admit("a", "m", DEFAULT_QUEUE, at(4)).unwrap_err();
    assert_eq!(refusal.reason, LimitReason::Window);
    assert_eq!(refusal.retry_after, Duration::from_secs(6));
    assert_eq!(
        (refusal.limit, refusal.per.as_str()),
        (2, "requests per 10s")
    );
    // Refusals do not count, and another credential has its own window.
    limiter.admit("b", "m", DEFAULT_QUEUE, at(4)).unwrap();
    assert!(limiter.admit("a", "m", DEFAULT_QUEUE, at(9)).is_err());
    limiter.admit("a", "m", DEFAULT_QUEUE, at(10)).unwrap();
}

#[test]
fn times_are_written_as_the_providers_write_them() {
    assert_eq!(
        [whole_seconds(0), whole_seconds(1), whole_seconds(1500)],
        [1, 1, 2]
    );
    assert_eq!(go_duration(2), "2s");
    assert_eq!(go_duration(90), "1m30s");
    assert_eq!(go_duration(7205), "2h0m5s");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
}

#[test]
fn the_in_flight_cap_refuses_the_extra_request_of_one_credential_only() {
    let held = || Step::text("held").held_until("go");
    let script = Script::new().with_responses([held(), held(), held(), Step::text("after")]);
    let fake = with_limits(script, Limits::new().with_max_in_flight(2));
    thread::scope(|scope| {
        let first = [
            scope.spawn(|| chat_as(&fake, "sk-a")),
            scope.spawn(|| chat_as(&fake, "sk-a")),
        ];
        fake.wait_for_requests(2, T).unwrap();
        let third = chat_as(&fake, "sk-a");
        assert_eq!(third.status, 429, "{}", third.body);
        let other = scope.spawn(|| chat_as(&fake, "sk-b"));
        let requests = fake.wait_for_requests(4, T).unwrap();
        assert_eq!(
            requests[2].limited.map(|l| l.reason),
            Some(LimitReason::InFlight)
        );
        assert_eq!(requests[3].credential(), "sk-b");
        assert_eq!(requests[3].limited, None);
        fake.release("go");
        for handle in first.into_iter().chain([other]) {
            let reply = handle.join().unwrap();
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
    });
    // The answered requests freed their slots; the refused one took no step.
    let after = chat_as(&fake, "sk-a");
    assert_eq!(after.status, 200);
    assert_eq!(
        after.json().unwrap()["choices"][0]["message"]["content"],
        "after"
    );
    assert_eq!(fake.limited(), BTreeMap::from([("sk-a".to_owned(), 1)]));
    assert_eq!(fake.pending()[DEFAULT_QUEUE], 0);
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

#[test]
fn a_short_window_refuses_past_its_count_then_serves_again_once_over() {
    let window = Duration::from_millis(750);
    let script = Script::new().with_exhausted(always("ok"));
    let fake = with_limits(script, Limits::new().with_window(2, window));
    assert_eq!(chat_as(&fake, "sk-a").status, 200);
    // The window began when the first request was admitted, before its reply came back.
    let over = Instant::now() + window;
    assert_eq!(chat_as(&fake, "sk-a").status, 200);
    let refused = chat_as(&fake, "sk-a");
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let wait: u64 = refused.header("retry-after-ms").unwrap().parse().unwrap();
    assert!(wait <= 750, "{wait}");
    assert_eq!(chat_as(&fake, "sk-b").status, 200);
    // Bounded by the window: nothing to await but the clock.
    thread::sleep(over.saturating_duration_since(Instant::now()));
    assert_eq!(chat_as(&fake, "sk-a").status, 200);
    assert_eq!(fake.limited(), BTreeMap::from([("sk-a".to_owned(), 1)]));
}

#[test]
fn rate_limit_replies_have_each_providers_body_and_headers() {
    let limits = Limits::new()
        .with_window(1, Duration::from_secs(60))
        .with_retry_after(Duration::from_secs(2));
    let fake = with_limits(Script::new().with_exhausted(always("ok")), limits);
    let twice = |path: &str, headers: &[(&str, &str)], body: &Value| {
        let first = post(&fake, path, headers, body);
        assert_eq!(first.status, 200, "{path}: {}", first.body);
        let second = post(&fake, path, headers, body);
        assert_eq!(second.status, 429, "{path}: {}", second.body);
        // Streamed or not, a refusal is one plain JSON reply.
        assert_eq!(second.header("content-type"), Some("application/json"));
        assert_eq!(second.header("retry-after"), Some("2"));
        assert_eq!(second.header("retry-after-ms"), Some("2000"));
        second
    };

    let before = rfc3339(unix_now());
    let anthropic = twice(
        "/v1/messages",
        &[("x-api-key", "k-anthropic")],
        &chat_body(true),
    );
    let body = anthropic.json().unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "This request would exceed your organization's rate limit of 1 requests per minute."
        ),
        "{message}"
    );
    assert_eq!(
        anthropic.header("anthropic-ratelimit-requests-limit"),
        Some("1")
    );
    assert_eq!(
        anthropic.header("anthropic-ratelimit-requests-remaining"),
        Some("0")
    );
    let reset = anthropic
        .header("anthropic-ratelimit-requests-reset")
        .unwrap();
    assert!(
        reset.len() == 20 && reset.ends_with('Z') && reset > before.as_str(),
        "{reset}"
    );

    for (path, key) in [
        ("/v1/chat/completions", "Bearer k-chat"),
        ("/v1/responses", "Bearer k-responses"),
    ] {
        let reply = twice(path, &[("authorization", key)], &chat_body(true));
        let error = &reply.json().unwrap()["error"];
        assert_eq!(
            (&error["type"], &error["code"], &error["param"]),
            (
                &json!("requests"),
                &json!("rate_limit_exceeded"),
                &Value::Null
            )
        );
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with("Rate limit reached for requests")
                && message.contains("Please try again in 2s."),
            "{message}"
        );
        assert_eq!(reply.header("x-ratelimit-reset-requests"), Some("2s"));
        assert_eq!(reply.header("x-ratelimit-remaining-requests"), Some("0"));
    }

    let gemini_rate_limit = json!({"error": {"code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}});
    let gemini = twice(
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &[("x-goog-api-key", "k-gemini")],
        &gemini_body(),
    );
    assert_eq!(gemini.json().unwrap(), gemini_rate_limit);
    let by_query = twice(
        "/v1beta/models/g:generateContent?key=k-query",
        &[],
        &gemini_body(),
    );
    assert_eq!(by_query.json().unwrap(), gemini_rate_limit);

    let limited = fake.limited();
    assert_eq!(limited.len(), 5, "{limited:?}");
    assert!(limited.values().all(|count| *count == 1), "{limited:?}");
    let refused: Vec<_> = fake
        .requests()
        .into_iter()
        .filter_map(|r| r.limited)
        .collect();
    assert_eq!(refused.len(), 5);
    assert!(
        refused
            .iter()
            .all(|l| l.reason == LimitReason::Window && l.status == 429)
    );
}

#[test]
fn overloaded_replies_are_529_for_anthropic_and_503_elsewhere() {
    let limits = Limits::new().with_max_in_flight(0).with_overloaded();
    let fake = with_limits(Script::new().with_responses([Step::text("kept")]), limits);
    let anthropic = post(&fake, "/v1/messages", &[], &chat_body(true));
    assert_eq!(anthropic.status, 529);
    assert_eq!(
        anthropic.json().unwrap(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    let chat = post(&fake, "/v1/chat/completions", &[], &chat_body(false));
    assert_eq!(chat.status, 503);
    assert_eq!(chat.json().unwrap()["error"]["type"], "server_error");
    let gemini = post(
        &fake,
        "/v1beta/models/g:generateContent",
        &[],
        &gemini_body(),
    );
    assert_eq!(gemini.status, 503);
    assert_eq!(gemini.json().unwrap()["error"]["status"], "UNAVAILABLE");
    let statuses: Vec<u16> = fake.limited_replies().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [529, 503, 503]);
    assert_eq!(fake.limited()["anonymous"], 3);
    assert_eq!(fake.pending()[DEFAULT_QUEUE], 1);
}

#[test]
fn usage_limits_answer_the_next_requests_then_service_goes_on() {
    let limits = Limits::new()
        .with_usage_limit(UsageLimit::next(2, Duration::from_secs(5400)).for_credential("sk-a"))
        .with_usage_limit(UsageLimit::next(1, Duration::from_secs(3600)).for_model("gem"));
    let script = Script::new()
        .with_responses([Step::text("served a"), Step::text("served b")])
        .with_queue("gem", [Step::text("gem served")]);
    let fake = with_limits(script, limits);

    let now = unix_now();
    let openai = chat_as(&fake, "sk-a");
    assert_eq!(openai.status, 429, "{}", openai.body);
    let error = &openai.json().unwrap()["error"];
    assert_eq!(error["type"], "usage_limit_reached");
    assert_eq!(error["message"], "The usage limit has been reached");
    assert_eq!(error["plan_type"], "plus");
    assert_eq!(error["resets_in_seconds"], 5400);
    let resets_at = error["resets_at"].as_u64().unwrap();
    assert!(
        (now + 5400..=now + 5402).contains(&resets_at),
        "{resets_at}"
    );

    let anthropic = post(
        &fake,
        "/v1/messages",
        &[("x-api-key", "sk-a")],
        &chat_body(true),
    );
    assert_eq!(anthropic.status, 429);
    assert_eq!(
        anthropic.json().unwrap()["error"]["type"],
        "rate_limit_error"
    );
    assert_eq!(
        anthropic.header("anthropic-ratelimit-unified-status"),
        Some("rejected")
    );
    let reset: u64 = anthropic
        .header("anthropic-ratelimit-unified-reset")
        .unwrap()
        .parse()
        .unwrap();
    assert!((now + 5400..=now + 5402).contains(&reset), "{reset}");

    // Both shots spent: sk-a is served again, from the steps the refusals did not take.
    let served = chat_as(&fake, "sk-a");
    assert_eq!(
        served.json().unwrap()["choices"][0]["message"]["content"],
        "served a"
    );
    let other = chat_as(&fake, "sk-b");
    assert_eq!(
        other.json().unwrap()["choices"][0]["message"]["content"],
        "served b"
    );

    let path = "/v1beta/models/gem:generateContent";
    let gemini = post(&fake, path, &[], &gemini_body());
    assert_eq!(gemini.status, 429);
    let error = &gemini.json().unwrap()["error"];
    assert_eq!(error["status"], "RESOURCE_EXHAUSTED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("exceeded your current quota")
    );
    assert_eq!(
        error["details"][0]["@type"],
        "type.googleapis.com/google.rpc.QuotaFailure"
    );
    assert_eq!(error["details"][1]["retryDelay"], "3600s");
    assert_eq!(post(&fake, path, &[], &gemini_body()).status, 200);

    assert!(fake.limits().usage_limits.is_empty());
    assert!(fake.pending().values().all(|left| *left == 0));
    let replies = fake.limited_replies();
    let seen: Vec<(usize, &str, LimitReason)> = replies
        .iter()
        .map(|r| (r.request, r.credential.as_str(), r.reason))
        .collect();
    assert_eq!(
        seen,
        [
            (0, "sk-a", LimitReason::UsageLimit),
            (1, "sk-a", LimitReason::UsageLimit),
            (4, "anonymous", LimitReason::UsageLimit)
        ]
    );
    assert!(replies.windows(2).all(|pair| pair[0].at <= pair[1].at));
    assert_eq!(replies[2].retry_after, Duration::from_secs(3600));
}

#[test]
fn limits_are_driven_over_the_control_endpoints_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let options = Options {
        log: Some(log.clone()),
        ..Options::default()
    };
    let fake =
        FakeLlm::start_with(Script::new().with_responses([Step::text("ok")]), &options).unwrap();
    let control = |path: &str, body: &Value| {
        client::post_json(&format!("{}{path}", fake.url()), body, T).unwrap()
    };
    let set = json!({"max_in_flight": 0, "retry_after_ms": 1500});
    assert_eq!(control("/_limits", &set).status, 200);
    let bad = control("/_limits", &json!({"max_inflight": 1}));
    assert_eq!(bad.status, 400, "{}", bad.body);
    let got = client::get(&format!("{}/_limits", fake.url()), T).unwrap();
    assert_eq!(
        got.json().unwrap(),
        json!({"max_in_flight": 0, "window_ms": 60000, "retry_after_ms": 1500})
    );
    assert_eq!(Limits::from_json(&got.body).unwrap(), fake.limits());

    let refused = post(&fake, "/v1/chat/completions", &[], &chat_body(true));
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), Some("2"));
    assert_eq!(refused.header("retry-after-ms"), Some("1500"));
    let state = client::get(&format!("{}/_state", fake.url()), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(state["limited"], json!({"anonymous": 1}));
    let reply = &state["limited_replies"][0];
    assert_eq!(
        (&reply["reason"], &reply["status"], &reply["retry_after_ms"]),
        (&json!("in_flight"), &json!(429), &json!(1500))
    );
    assert_eq!(state["pending"][DEFAULT_QUEUE], 1);
    let requests = client::get(&format!("{}/_requests", fake.url()), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        requests[0]["limited"],
        json!({"reason": "in_flight", "status": 429})
    );
    let logged: Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(logged["limited"]["status"], 429);

    assert_eq!(control("/_limits", &json!({})).status, 200);
    let served = post(&fake, "/v1/chat/completions", &[], &chat_body(false));
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(fake.requests()[1].limited, None);
}

#[test]
fn unauthorized_steps_answer_in_each_apis_shape() {
    let steps = (0..4).map(|_| Step::unauthorized());
    let fake = FakeLlm::start(Script::new().with_responses(steps)).unwrap();
    let anthropic = post(&fake, "/v1/messages", &[], &chat_body(true));
    assert_eq!(anthropic.status, 401);
    assert_eq!(
        anthropic.json().unwrap(),
        json!({"type": "error", "error": {"type": "authentication_error",
                                          "message": "invalid x-api-key"}})
    );
    for path in ["/v1/chat/completions", "/v1/responses"] {
        let reply = post(&fake, path, &[], &chat_body(true));
        assert_eq!(reply.status, 401);
        let error = &reply.json().unwrap()["error"];
        assert_eq!(error["code"], "invalid_api_key");
        assert_eq!(error["type"], "invalid_request_error");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("Incorrect API key")
        );
    }
    let gemini = post(
        &fake,
        "/v1beta/models/g:generateContent",
        &[],
        &gemini_body(),
    );
    assert_eq!(gemini.status, 401);
    let error = &gemini.json().unwrap()["error"];
    assert_eq!(
        (&error["code"], &error["status"]),
        (&json!(401), &json!("UNAUTHENTICATED"))
    );
}
