//! One notification as every channel sends it: a title in Shepherd's words, the words a sheep
//! wrote (sent where the user allows), and a link to the board page where it is answered.

use shepherd_core::herd::needs::{Need, NeedKind};

/// The most characters of a sheep's words a notification carries.
const MOST_WORDS: usize = 400;

/// A notification, ready for any channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The need's key, or `summary:` and the first folded need's key.
    pub key: String,
    /// The kind of moment; `None` for a summary of several.
    pub kind: Option<NeedKind>,
    /// One line: "worker: api asks you a question".
    pub title: String,
    /// What the sheep wrote (a summary: one headline per line).
    pub words: Option<String>,
    /// The board page where it is answered, when the board has been served; never a token.
    pub link: Option<String>,
    /// When the moment began (ms).
    pub at: i64,
}

impl Notice {
    /// The notice of one need; `board` is the board's base URL.
    pub fn of(need: &Need, board: Option<&str>) -> Self {
        Self {
            key: need.key.clone(),
            kind: Some(need.kind),
            title: need.headline.clone(),
            words: need.words.as_deref().map(clip),
            link: board.map(|base| format!("{base}{}", need.page)),
            at: need.at,
        }
    }

    /// One notice for several needs the rate limit folded together.
    pub fn summary(needs: &[Need], board: Option<&str>) -> Self {
        let lines: Vec<&str> = needs.iter().map(|n| n.headline.as_str()).collect();
        Self {
            key: format!("summary:{}", needs.first().map_or("", |n| n.key.as_str())),
            kind: None,
            title: format!("{} more things need you", needs.len()),
            words: Some(clip(&lines.join("\n"))),
            link: board.map(|base| format!("{base}/")),
            at: needs.first().map_or(0, |n| n.at),
        }
    }

    /// The body a channel shows: the words when `with_words` (and there are any), then where to
    /// answer. A summary's lines are Shepherd's own headlines, so they always go.
    pub fn body(&self, with_words: bool) -> String {
        let mut parts = Vec::new();
        if let Some(words) = &self.words
            && (with_words || self.kind.is_none())
        {
            parts.push(words.clone());
        }
        parts.push(match &self.link {
            Some(link) => format!("Open {link}"),
            None => "Answer with shepherd, or on the board (shepherd web).".to_owned(),
        });
        parts.join("\n")
    }
}

fn clip(words: &str) -> String {
    let words = words.trim();
    match words.char_indices().nth(MOST_WORDS) {
        Some((at, _)) => format!("{}…", &words[..at]),
        None => words.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(key: &str, words: Option<&str>) -> Need {
        Need {
            key: key.into(),
            kind: NeedKind::Question,
            subject: "worker: api".into(),
            headline: format!("worker: api asks you a question ({key})"),
            words: words.map(str::to_owned),
            page: "/sheep/a1".into(),
            at: 5,
        }
    }

    #[test]
    fn the_link_is_the_boards_page_and_the_words_go_only_when_allowed() {
        let notice = Notice::of(
            &need("question:m1", Some("Which database?")),
            Some("http://herd-ab.localhost:8421"),
        );
        assert_eq!(
            notice.link.as_deref(),
            Some("http://herd-ab.localhost:8421/sheep/a1")
        );
        assert_eq!(
            notice.body(true),
            "Which database?\nOpen http://herd-ab.localhost:8421/sheep/a1"
        );
        assert_eq!(
            notice.body(false),
            "Open http://herd-ab.localhost:8421/sheep/a1"
        );
        let unserved = Notice::of(&need("question:m1", None), None);
        assert_eq!(
            unserved.body(true),
            "Answer with shepherd, or on the board (shepherd web)."
        );
    }

    #[test]
    fn long_words_are_clipped_and_a_summary_lists_headlines() {
        let long = "x".repeat(1000);
        let notice = Notice::of(&need("question:m1", Some(&long)), None);
        assert_eq!(notice.words.unwrap().chars().count(), MOST_WORDS + 1);
        let summary = Notice::summary(
            &[need("question:a", None), need("question:b", None)],
            Some("http://b"),
        );
        assert_eq!(summary.title, "2 more things need you");
        assert_eq!(summary.key, "summary:question:a");
        assert!(summary.body(false).contains("(question:b)"), "{summary:?}");
        assert_eq!(summary.link.as_deref(), Some("http://b/"));
    }
}
