//! Text from a sheep, made safe to print on a person's terminal.
//!
//! What a sheep prints, the summary it settles with and what a repository's definition says
//! about itself reach the person's terminal through `read`, `watch`, `run`, `status`, `agents
//! show` and error messages. A terminal does not show escape sequences, it obeys them: an OSC 52
//! sequence writes the clipboard, an OSC 0 retitles the window, a clear-screen or a carriage
//! return hides what was printed before it (`sandbox: off\r` overwritten by `sandbox: strict`),
//! and bidirectional overrides reorder what is shown (CVE-2021-42574). [`printable`] is the one
//! filter all of them pass: every escape sequence (CSI, OSC, DCS, SOS, PM, APC, and two-byte
//! escapes) and every other control character goes, a carriage return becomes a line break,
//! and line breaks and tabs stay.

use std::borrow::Cow;

/// `text` without terminal escape sequences, control characters or bidirectional overrides;
/// `\r\n` and a lone `\r` become `\n`. Borrowed when there was nothing to take out.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM and APC: a string up to BEL or the string terminator.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || c == '\u{9c}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.next_if_eq(&'\\').is_some() {
                            break;
                        }
                    }
                }
                // Any other escape is two characters long.
                _ => {}
            },
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if needs_care(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is anything but plain text (line breaks and tabs are plain).
fn needs_care(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_overrides_go_and_text_stays() {
        let cases = [
            ("plain text\twith a tab\n", "plain text\twith a tab\n"),
            ("\u{1b}]52;c;ZXZpbA==\u{7}copied", "copied"),
            ("\u{1b}]0;title\u{1b}\\named", "named"),
            ("\u{1b}[2J\u{1b}[Hcleared", "cleared"),
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}Pq#0;2;0;0;0\u{1b}\\sixel", "sixel"),
            ("\u{1b}_apc\u{9c}after", "after"),
            ("\u{1b}cReset", "Reset"),
            (
                "sandbox: off\rsandbox: strict",
                "sandbox: off\nsandbox: strict",
            ),
            ("windows\r\nline", "windows\nline"),
            ("bell\u{7}back\u{8}", "bellback"),
            ("c1\u{9b}31m", "c131m"),
            ("a\u{202e}evil\u{2066}b", "aevilb"),
            ("unterminated \u{1b}]52;c;", "unterminated "),
        ];
        for (text, shown) in cases {
            assert_eq!(printable(text), shown, "{text:?}");
        }
        assert!(matches!(printable("nothing to do"), Cow::Borrowed(_)));
    }

    proptest::proptest! {
        #[test]
        fn nothing_a_terminal_obeys_survives(text in "\\PC*|[\\x00-\\x{a0}\\x{202a}-\\x{202e}]*") {
            let shown = printable(&text);
            proptest::prop_assert!(!shown.chars().any(needs_care), "{:?} -> {:?}", text, shown);
        }
    }
}
