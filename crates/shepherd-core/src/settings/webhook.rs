//! The webhook a notifier posts to: its address as the user's settings accept it, and the
//! shape of the body the receiving service reads.

/// The body a webhook gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WebhookFormat {
    /// Told by the address: Slack's and Discord's webhook hosts and an ntfy server get their
    /// shapes, any other address plain JSON.
    #[default]
    Auto,
    /// A JSON object with every field of the need.
    Json,
    /// Slack's incoming webhook: `{"text": …}`.
    Slack,
    /// Discord's webhook: `{"content": …}`.
    Discord,
    /// An ntfy topic: the text as the body, the title and the link in headers.
    Ntfy,
}

impl WebhookFormat {
    /// Every format, in the order the settings list them.
    pub const ALL: [Self; 5] = [
        Self::Auto,
        Self::Json,
        Self::Slack,
        Self::Discord,
        Self::Ntfy,
    ];

    /// Its spelling in the settings files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Json => "json",
            Self::Slack => "slack",
            Self::Discord => "discord",
            Self::Ntfy => "ntfy",
        }
    }

    /// Reads a spelling (lower case).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// The format a post to `url` uses: `Auto` told by the address's host.
    pub fn for_url(self, url: &str) -> Self {
        if self != Self::Auto {
            return self;
        }
        let host = host_of(url).unwrap_or_default().to_ascii_lowercase();
        if host == "hooks.slack.com" {
            Self::Slack
        } else if (host == "discord.com" || host == "discordapp.com")
            && url.contains("/api/webhooks/")
        {
            Self::Discord
        } else if host == "ntfy.sh" || host.starts_with("ntfy.") {
            Self::Ntfy
        } else {
            Self::Json
        }
    }
}

/// Whether `text` is a webhook address Shepherd posts to: `http://` or `https://`, a host, no
/// white space and no user name or password in it (a password in a settings file is better kept
/// in the path or query the service issued).
pub fn is_webhook_url(text: &str) -> bool {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    let Some(rest) = rest else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    !text.chars().any(char::is_whitespace)
        && !authority.is_empty()
        && !authority.contains('@')
        && host_of(text).is_some_and(|host| !host.is_empty())
}

/// The host of an `http(s)://` address, without its port.
fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next()?,
        None => authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host),
    };
    Some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_web_addresses_with_a_host_are_webhooks() {
        for good in [
            "https://hooks.slack.com/services/T/B/x",
            "http://127.0.0.1:8080/hook",
            "https://[::1]:9/x",
            "https://ntfy.sh/my-topic",
        ] {
            assert!(is_webhook_url(good), "{good}");
        }
        for bad in [
            "",
            "ftp://x/y",
            "https://",
            "https:///path",
            "https://user:pw@example.com/x",
            "https://example.com/a b",
            "example.com/hook",
        ] {
            assert!(!is_webhook_url(bad), "{bad}");
        }
    }

    #[test]
    fn auto_is_told_by_the_host() {
        let auto = WebhookFormat::Auto;
        assert_eq!(
            auto.for_url("https://hooks.slack.com/services/T/B/x"),
            WebhookFormat::Slack
        );
        assert_eq!(
            auto.for_url("https://discord.com/api/webhooks/1/abc"),
            WebhookFormat::Discord
        );
        assert_eq!(auto.for_url("https://ntfy.sh/topic"), WebhookFormat::Ntfy);
        assert_eq!(
            auto.for_url("https://ntfy.example.org/topic"),
            WebhookFormat::Ntfy
        );
        assert_eq!(auto.for_url("http://127.0.0.1:9/x"), WebhookFormat::Json);
        assert_eq!(
            WebhookFormat::Slack.for_url("http://127.0.0.1:9/x"),
            WebhookFormat::Slack,
            "a format named in the settings wins"
        );
    }
}
