//! What the fake model server remembers: the queues left, every request received and every
//! mismatch between the script and what the agent actually sent.
//!
//! Tests assert on this record (what a sheep was told, which tool results it saw), so it keeps
//! the full request bodies in arrival order.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::Write as _;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::limits::reply::{self, LimitReply};
use super::limits::{LimitedReply, Limiter, as_millis};
use super::request::{Api, Limited, RecordedRequest, credential, gemini_model};
use super::script::{Exhausted, Script, Step};

/// The name the default queue (`responses`) has in records and in `GET /_state`.
pub const DEFAULT_QUEUE: &str = "default";
/// The queue name recorded for requests the script's `toolless` step answered.
pub const TOOLLESS_QUEUE: &str = "toolless";

/// A difference between the script and what arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The request's [`RecordedRequest::seq`].
    pub request: usize,
    /// The queue it was answered from.
    pub queue: String,
    /// What went wrong.
    #[serde(flatten)]
    pub kind: MismatchKind,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MismatchKind {
    /// A step's `expect` was not in the last user or tool message.
    Expect {
        /// The expected substring.
        expect: String,
        /// The end of the text that arrived instead.
        got: String,
    },
    /// The queue was empty and `exhausted` is `error` (or `repeat_last` with nothing to repeat).
    Exhausted,
    /// A tool call to match by suffix or to the shell tool found no such tool offered; the
    /// model answered with text saying so instead.
    NoSuchTool {
        /// What the script asked for (`shell` for the shell tool).
        wanted: String,
        /// The tools the request offered.
        offered: Vec<String>,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { request, queue, .. } = self;
        match &self.kind {
            MismatchKind::Expect { expect, got } => write!(
                f,
                "request {request} (queue {queue}): expected {expect:?} in the last message, got {got:?}"
            ),
            MismatchKind::Exhausted => {
                write!(f, "request {request} (queue {queue}): script exhausted")
            }
            MismatchKind::NoSuchTool { wanted, offered } => write!(
                f,
                "request {request} (queue {queue}): no offered tool matches {wanted:?}; offered {offered:?}"
            ),
        }
    }
}

/// The mutable state behind the server's lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    default_queue: VecDeque<Step>,
    queues: BTreeMap<String, VecDeque<Step>>,
    last: BTreeMap<String, Step>,
    exhausted: Exhausted,
    toolless: Option<Step>,
    pub(crate) requests: Vec<RecordedRequest>,
    pub(crate) mismatches: Vec<Mismatch>,
    /// Gates released so far (they stay open).
    pub(crate) released: BTreeSet<String>,
    pub(crate) log: Option<File>,
    /// The rate-limit policies, the requests in flight and the refusals.
    pub(crate) limiter: Limiter,
}

/// What to do with one model request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Reply as this step says.
    Step(Step),
    /// The script has nothing for this queue.
    Exhausted { queue: String },
    /// The rate limiter refused it: send this, and take no step.
    Limited(LimitReply),
}

impl State {
    /// Replaces the queues (the request record and mismatches stay).
    pub(crate) fn load(&mut self, script: Script) {
        self.default_queue = script.responses.into();
        self.queues = script
            .queues
            .into_iter()
            .map(|(model, steps)| (model, steps.into()))
            .collect();
        self.last.clear();
        self.exhausted = script.exhausted;
        self.toolless = script.toolless;
    }

    /// Appends steps to a model's queue, or to the default queue when `model` is `None`.
    pub(crate) fn append(&mut self, model: Option<&str>, steps: impl IntoIterator<Item = Step>) {
        match model {
            Some(model) => self
                .queues
                .entry(model.to_owned())
                .or_default()
                .extend(steps),
            None => self.default_queue.extend(steps),
        }
    }

    /// Steps left per queue.
    pub(crate) fn pending(&self) -> BTreeMap<String, usize> {
        let mut out: BTreeMap<String, usize> = self
            .queues
            .iter()
            .map(|(name, queue)| (name.clone(), queue.len()))
            .collect();
        out.insert(DEFAULT_QUEUE.to_owned(), self.default_queue.len());
        out
    }

    /// The model ids that have queues.
    pub(crate) fn models(&self) -> Vec<String> {
        self.queues.keys().cloned().collect()
    }

    /// The body of `GET /_state`.
    pub(crate) fn snapshot(&self) -> Value {
        json!({
            "served": self.requests.len(),
            "pending": self.pending(),
            "mismatches": self.mismatches,
            "limited": self.limiter.counts(),
            "limited_replies": self.limiter.replies(),
        })
    }

    /// Records a request and picks its answer: a limit reply when the rate limiter refuses it
    /// (no step taken), else the next step of its queue. An admitted request stays in flight
    /// for the limiter until `self.limiter.finished(credential)`.
    pub(crate) fn take(&mut self, incoming: Incoming) -> (RecordedRequest, Answer) {
        let Incoming {
            api,
            path,
            query,
            headers,
            body,
        } = incoming;
        let model = if api == Api::Gemini {
            gemini_model(&path)
        } else {
            body.get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let seq = self.requests.len();
        let credential = credential(&headers, &query);
        let mut request = RecordedRequest {
            seq,
            path,
            query,
            api,
            model,
            queue: String::new(),
            headers,
            body,
            limited: None,
        };
        let queue = self.queue_of(&request);
        let now = Instant::now();
        if let Err(refusal) = self.limiter.admit(&credential, &request.model, &queue, now) {
            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, as_millis);
            let reply = reply::render(api, &refusal, &request.model, now_ms);
            request.queue = queue;
            request.limited = Some(Limited {
                reason: refusal.reason,
                status: reply.status,
            });
            self.limiter.record(LimitedReply {
                request: seq,
                credential,
                model: request.model.clone(),
                api,
                reason: refusal.reason,
                status: reply.status,
                retry_after: refusal.retry_after,
                at: self.limiter.elapsed(now),
            });
            self.log(&request);
            self.requests.push(request.clone());
            return (request, Answer::Limited(reply));
        }
        let (queue_name, step) = match &self.toolless {
            Some(step) if request.offered_tools().is_empty() => {
                (TOOLLESS_QUEUE.to_owned(), Some(step.clone()))
            }
            _ => self.next_step(&request.model),
        };
        request.queue.clone_from(&queue_name);
        self.log(&request);
        let answer = match step {
            Some(step) => {
                if let Some(expect) = &step.expect {
                    let got = request.last_input_text();
                    if !got.contains(expect.as_str()) {
                        self.mismatches.push(Mismatch {
                            request: seq,
                            queue: queue_name,
                            kind: MismatchKind::Expect {
                                expect: expect.clone(),
                                got: tail(&got, 500),
                            },
                        });
                    }
                }
                Answer::Step(step)
            }
            None => {
                self.mismatches.push(Mismatch {
                    request: seq,
                    queue: queue_name.clone(),
                    kind: MismatchKind::Exhausted,
                });
                Answer::Exhausted { queue: queue_name }
            }
        };
        self.requests.push(request.clone());
        (request, answer)
    }
}

/// A model request as it arrived, before it is recorded.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) api: Api,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Value,
}

impl State {
    /// Appends the request to the log file, if any.
    fn log(&mut self, request: &RecordedRequest) {
        if let Some(log) = &mut self.log {
            // The log is a debugging aid; a full disk must not fail the request.
            drop(writeln!(log, "{}", json!(request)).and_then(|()| log.flush()));
        }
    }

    /// The queue that would answer `request`, without taking a step.
    fn queue_of(&self, request: &RecordedRequest) -> String {
        if self.toolless.is_some() && request.offered_tools().is_empty() {
            TOOLLESS_QUEUE.to_owned()
        } else if self.queues.contains_key(&request.model) {
            request.model.clone()
        } else {
            DEFAULT_QUEUE.to_owned()
        }
    }

    /// The next step for `model`'s queue (or the default queue), as `exhausted` says when
    /// empty; with the queue's name.
    fn next_step(&mut self, model: &str) -> (String, Option<Step>) {
        let (queue_name, queue) = match self.queues.get_mut(model) {
            Some(queue) => (model.to_owned(), queue),
            None => (DEFAULT_QUEUE.to_owned(), &mut self.default_queue),
        };
        let step = match queue.pop_front() {
            Some(step) => {
                self.last.insert(queue_name.clone(), step.clone());
                Some(step)
            }
            None => match &self.exhausted {
                Exhausted::Error => None,
                Exhausted::RepeatLast => self.last.get(&queue_name).cloned(),
                Exhausted::Step(step) => Some((**step).clone()),
            },
        };
        (queue_name, step)
    }

    /// Records that a scripted call found no matching tool.
    pub(crate) fn no_such_tool(&mut self, request: &RecordedRequest, wanted: &str) {
        self.mismatches.push(Mismatch {
            request: request.seq,
            queue: request.queue.clone(),
            kind: MismatchKind::NoSuchTool {
                wanted: wanted.to_owned(),
                offered: request.tool_names(),
            },
        });
    }
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}
