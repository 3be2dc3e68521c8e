//! A webhook: the body each service reads (plain JSON, Slack, Discord, ntfy) and the post.
//!
//! A sheep's words can hold anything, so each body is built as data (never by pasting text
//! into a template): Slack's three control characters are escaped, Discord is told to ping
//! nobody, and the words are there only when the user's `notifyWords` says so.

use std::time::Duration;

use serde_json::{Value, json};
use shepherd_core::settings::WebhookFormat;

use crate::notice::Notice;

/// How long one post may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// The waits before the second and third tries of a post that failed on the way or with a
/// server error; a refusal (4xx) is not tried again.
const RETRY_WAITS: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(4)];

/// A webhook the user configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Where to post.
    pub url: String,
    /// The body's shape (`Auto` already told by the address).
    pub format: WebhookFormat,
    /// Whether a sheep's words go in the body.
    pub with_words: bool,
}

/// A post that did not go through.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The receiver answered with an error status.
    #[error("the webhook answered HTTP {status}")]
    Refused {
        /// The status.
        status: u16,
    },
    /// The post did not reach it, or timed out.
    #[error("the webhook could not be reached: {0}")]
    Unreachable(String),
}

/// One request: where it goes and its JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The address posted to.
    pub url: String,
    /// The body.
    pub body: Value,
}

impl Webhook {
    /// A webhook posting to `url` in `format` (`Auto` is told by the address).
    pub fn new(url: &str, format: WebhookFormat, with_words: bool) -> Self {
        Self {
            url: url.to_owned(),
            format: format.for_url(url),
            with_words,
        }
    }

    /// The request that tells `notice`.
    pub fn request(&self, notice: &Notice) -> Request {
        let text = notice.body(self.with_words);
        match self.format {
            WebhookFormat::Slack => Request {
                url: self.url.clone(),
                body: json!({ "text": format!("*{}*\n{}", slack_escape(&notice.title), slack_escape(&text)) }),
            },
            WebhookFormat::Discord => Request {
                url: self.url.clone(),
                body: json!({
                    "content": clip_chars(&format!("**{}**\n{text}", notice.title), 2000),
                    "allowed_mentions": { "parse": [] },
                }),
            },
            WebhookFormat::Ntfy => {
                let (server, topic) = ntfy_parts(&self.url);
                let mut body = json!({
                    "topic": topic,
                    "title": notice.title,
                    "message": text,
                    "tags": ["sheep"],
                });
                if let Some(link) = &notice.link {
                    body["click"] = Value::from(link.as_str());
                }
                Request { url: server, body }
            }
            WebhookFormat::Json | WebhookFormat::Auto => {
                let mut body = json!({
                    "source": "shepherd",
                    "key": notice.key,
                    "kind": notice.kind.map_or("summary", |k| k.as_str()),
                    "title": notice.title,
                    "text": text,
                    "link": notice.link,
                    "at": notice.at,
                });
                if self.with_words {
                    body["words"] = Value::from(notice.words.clone());
                }
                Request {
                    url: self.url.clone(),
                    body,
                }
            }
        }
    }

    /// Posts `notice`, trying again after a failure on the way or a server error.
    ///
    /// # Errors
    /// The last failure, when no try went through.
    pub async fn send(&self, notice: &Notice) -> Result<(), WebhookError> {
        let request = self.request(notice);
        let mut waits = RETRY_WAITS.iter();
        loop {
            let attempt = request.clone();
            let outcome = tokio::task::spawn_blocking(move || post(&attempt))
                .await
                .unwrap_or_else(|err| Err(WebhookError::Unreachable(err.to_string())));
            match (outcome, waits.next()) {
                (Ok(()), _) => return Ok(()),
                (Err(WebhookError::Refused { status }), _) if status < 500 => {
                    return Err(WebhookError::Refused { status });
                }
                (Err(err), None) => return Err(err),
                (Err(err), Some(wait)) => {
                    tracing::warn!(%err, "webhook post failed; trying again");
                    tokio::time::sleep(*wait).await;
                }
            }
        }
    }
}

// rustls marks its ring provider deprecated for want of post-quantum key exchange; a
// notification's post is not worth aws-lc's build and its megabytes in the binary.
#[allow(deprecated)]
fn post(request: &Request) -> Result<(), WebhookError> {
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .unversioned_rustls_crypto_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(POST_TIMEOUT))
        .http_status_as_error(false)
        .tls_config(tls)
        .build()
        .into();
    let response = agent
        .post(&request.url)
        .header("content-type", "application/json")
        .send(request.body.to_string())
        .map_err(|err| WebhookError::Unreachable(err.to_string()))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(WebhookError::Refused { status })
    }
}

/// Slack reads `&`, `<` and `>` as markup.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn clip_chars(text: &str, most: usize) -> String {
    text.chars().take(most).collect()
}

/// An ntfy topic's address split into the server (posted to) and the topic.
fn ntfy_parts(url: &str) -> (String, String) {
    let trimmed = url.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((server, topic)) if server.contains("://") && !server.ends_with('/') => {
            (format!("{server}/"), topic.to_owned())
        }
        _ => (trimmed.to_owned(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::herd::needs::NeedKind;

    fn notice(words: &str) -> Notice {
        Notice {
            key: "question:m1".into(),
            kind: Some(NeedKind::Question),
            title: "worker: api asks you a question".into(),
            words: Some(words.into()),
            link: Some("http://herd-ab.localhost:8421/sheep/a1".into()),
            at: 7,
        }
    }

    #[test]
    fn plain_json_carries_the_words_only_when_allowed() {
        let quiet = Webhook::new("http://127.0.0.1:9/hook", WebhookFormat::Auto, false);
        let body = quiet.request(&notice("the secret plan")).body;
        assert_eq!(body["kind"], "question");
        assert_eq!(body["link"], "http://herd-ab.localhost:8421/sheep/a1");
        assert!(!body.to_string().contains("secret plan"), "{body}");
        let told = Webhook::new("http://127.0.0.1:9/hook", WebhookFormat::Json, true);
        let body = told.request(&notice("the secret plan")).body;
        assert_eq!(body["words"], "the secret plan");
    }

    #[test]
    fn slack_escapes_markup_and_discord_pings_nobody() {
        let slack = Webhook::new(
            "https://hooks.slack.com/services/T/B/x",
            WebhookFormat::Auto,
            true,
        );
        let body = slack
            .request(&notice("<!channel> & <http://evil|click>"))
            .body;
        let text = body["text"].as_str().unwrap();
        assert!(
            text.starts_with("*worker: api asks you a question*\n"),
            "{text}"
        );
        assert!(
            text.contains("&lt;!channel&gt; &amp; &lt;http://evil|click&gt;"),
            "{text}"
        );

        let discord = Webhook::new(
            "https://discord.com/api/webhooks/1/x",
            WebhookFormat::Auto,
            true,
        );
        let body = discord.request(&notice("@everyone look")).body;
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        assert!(
            body["content"]
                .as_str()
                .unwrap()
                .starts_with("**worker: api")
        );
    }

    #[test]
    fn ntfy_posts_to_the_server_with_the_topic_and_the_link_as_click() {
        let ntfy = Webhook::new("https://ntfy.sh/my-herd", WebhookFormat::Auto, false);
        let request = ntfy.request(&notice("words"));
        assert_eq!(request.url, "https://ntfy.sh/");
        assert_eq!(request.body["topic"], "my-herd");
        assert_eq!(request.body["title"], "worker: api asks you a question");
        assert_eq!(
            request.body["click"],
            "http://herd-ab.localhost:8421/sheep/a1"
        );
        assert_eq!(
            request.body["message"],
            "Open http://herd-ab.localhost:8421/sheep/a1"
        );
    }
}
