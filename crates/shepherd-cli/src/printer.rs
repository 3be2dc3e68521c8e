//! Everything a command shows goes through [`Printer`], so `--json` always yields exactly one
//! compact JSON document on one line. The printer holds the front end's writer: this crate
//! decides what to say, the binary owns stdout. Human text passes the one filter of terminal
//! control sequences ([`shepherd_core::printable`]) on its way out: much of it comes from
//! sheep (their output, summaries, messages) and repository files (definitions), and a
//! terminal obeys what it should only show. JSON needs no filter: it escapes every control
//! character.

use serde::Serialize;

/// Writes `text` to the front end's output exactly as given (no newline added).
pub type Sink = fn(&str);

/// Shows command results as human text or as one JSON line.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    json: bool,
    sink: Sink,
}

impl Printer {
    /// A printer for `--json` (or not) that writes through `sink`.
    pub fn new(json: bool, sink: Sink) -> Self {
        Self { json, sink }
    }

    /// Whether `--json` was given.
    pub fn is_json(self) -> bool {
        self.json
    }

    /// Shows `value` as one JSON line with `--json`, otherwise the text `human` builds.
    pub fn emit<T: Serialize>(self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            let line = serde_json::to_string(value).expect("results serialise to JSON");
            self.line(&line);
        } else {
            let text = human();
            if !text.is_empty() {
                self.line(text.trim_end_matches('\n'));
            }
        }
    }

    /// Shows `text` (filtered of terminal control sequences) and ends the line.
    pub fn line(self, text: &str) {
        let shown = if self.json {
            std::borrow::Cow::Borrowed(text)
        } else {
            shepherd_core::printable::printable(text)
        };
        (self.sink)(&format!("{shown}\n"));
    }

    /// Shows `text` exactly as it is, separators included (a sheep's inbox texts, which the
    /// caller filters item by item: `--null` separates them with NUL).
    pub fn raw(self, text: &str) {
        (self.sink)(text);
    }
}
