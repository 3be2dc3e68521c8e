//! A note or `shepherd.md` as a page that reads as a document: the frontmatter folded into a
//! one-line summary (agent, status, times, summary) with the whole table behind a toggle, the
//! Markdown rendered so that nothing in a note can run, the note format's own `<!-- … -->`
//! markers left out, the Flow section drawn as a small graph, the orchestration section
//! folded.
//!
//! Safe by construction rather than by cleaning afterwards: the only markup on the page is what
//! pulldown-cmark writes for Markdown constructs (it escapes every text and attribute); raw
//! HTML in a note is shown as the text it is, never parsed, so no `<script>`, `on…` handler or
//! frame gets in; and a link or image whose URL has a scheme other than `http`, `https` or
//! `mailto` (`javascript:`, `data:`, …) loses its URL. (A sanitiser crate such as ammonia would
//! let some HTML through, but it needs `cssparser`, under a licence the project does not ship.) Relative links are left as they are: a file's page lives at `/files/` plus its path
//! in the project, so the browser resolves them to the linked file's page. Pure.

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

use crate::html::esc;

/// The Markdown options notes are written with.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Where a link or image whose URL could run something points instead.
const REMOVED_URL: &str = "#unsafe-link-removed";

/// Whether a link may point at `url`: relative, or `http`, `https` or `mailto`.
fn safe_url(url: &str) -> bool {
    // Browsers ignore tabs, newlines and other controls inside a scheme (`java\tscript:`).
    let url: String = url
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase();
    let scheme_end = url.find(':');
    let path_start = url.find(['/', '?', '#']);
    match (scheme_end, path_start) {
        (Some(colon), Some(slash)) if slash < colon => true,
        (Some(colon), _) => matches!(&url[..colon], "http" | "https" | "mailto"),
        (None, _) => true,
    }
}

/// Whether raw HTML is (part of) a comment: the note format marks its parts with comments
/// (`<!-- Shepherd orchestration -->`), which a reader need not see. `open` carries a comment
/// that spans several raw pieces from one to the next.
fn in_comment(raw: &str, open: &mut bool) -> bool {
    let text = raw.trim();
    if *open {
        *open = !text.contains("-->");
        return true;
    }
    if text.starts_with("<!--") {
        *open = !text.ends_with("-->");
        return true;
    }
    false
}

/// Markdown to HTML with nothing in it that could run: raw HTML becomes text (comments are
/// left out), unsafe URLs go.
fn markdown(text: &str) -> String {
    let mut comment = false;
    let events = Parser::new_ext(text, options()).filter_map(move |event| {
        Some(match event {
            Event::Html(raw) | Event::InlineHtml(raw) if in_comment(&raw, &mut comment) => {
                return None;
            }
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) if !safe_url(&dest_url) => Event::Start(Tag::Link {
                link_type,
                dest_url: CowStr::Borrowed(REMOVED_URL),
                title,
                id,
            }),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) if !safe_url(&dest_url) => Event::Start(Tag::Image {
                link_type,
                dest_url: CowStr::Borrowed(REMOVED_URL),
                title,
                id,
            }),
            other => other,
        })
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// The frontmatter (between `---` lines at the very top) and the rest.
fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else {
        return (None, text);
    };
    match rest.find("\n---\n") {
        Some(end) => (Some(&rest[..end]), &rest[end + 5..]),
        None => match rest.strip_suffix("\n---") {
            Some(front) => (Some(front), ""),
            None => (None, text),
        },
    }
}

/// The fields a note's one-line summary shows, in this order, when it has them.
const SUMMARY_FIELDS: &[&str] = &[
    "sessionName",
    "agent",
    "status",
    "started",
    "completed",
    "finished",
    "summary",
];

/// How a frontmatter value reads.
fn yaml_text(value: &serde_yaml_ng::Value) -> String {
    match value {
        serde_yaml_ng::Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_owned(),
    }
}

/// The frontmatter folded: a one-line summary of the fields a reader wants first, and the whole
/// table behind it. YAML that does not parse is shown as it is, folded the same way.
fn frontmatter(yaml: &str) -> String {
    let Ok(serde_yaml_ng::Value::Mapping(map)) = serde_yaml_ng::from_str(yaml) else {
        return format!(
            r#"<details class="frontmatter"><summary>details</summary><pre>{}</pre></details>"#,
            esc(yaml)
        );
    };
    let mut summary = Vec::new();
    for field in SUMMARY_FIELDS {
        if let Some(value) = map.get(*field).map(yaml_text).filter(|v| !v.is_empty()) {
            summary.push(format!(
                r#"<span class="field-{field}">{}</span>"#,
                esc(&value)
            ));
        }
    }
    if summary.is_empty() {
        summary.push("details".to_owned());
    }
    let mut html = format!(
        r#"<details class="frontmatter"><summary>{}</summary><table class="frontmatter"><tbody>"#,
        summary.join(" · ")
    );
    for (key, value) in &map {
        let _ = write!(
            html,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&yaml_text(key)),
            esc(&yaml_text(value))
        );
    }
    html.push_str("</tbody></table></details>");
    html
}

/// One step of a Flow line (`[a](./a.md)`, or `parallel: [b](./b.md) · [c](./c.md)`).
fn flow_step(step: &str) -> String {
    let (label, nodes) = match step.split_once(':') {
        Some((label, rest)) if !label.contains('[') => (Some(label.trim()), rest),
        _ => (None, step),
    };
    let mut html = String::from(r#"<span class="flow-step">"#);
    if let Some(label) = label {
        let _ = write!(html, r#"<span class="flow-label">{}</span>"#, esc(label));
    }
    for node in nodes.split(" · ").map(str::trim).filter(|n| !n.is_empty()) {
        let inline = markdown(node);
        let inline = inline
            .trim()
            .trim_start_matches("<p>")
            .trim_end_matches("</p>");
        let _ = write!(html, r#"<span class="flow-node">{inline}</span>"#);
    }
    html.push_str("</span>");
    html
}

/// The Flow section's fenced block drawn as rows of boxes joined by arrows.
fn flow_graph(block: &str) -> String {
    let mut html = String::from(r#"<div class="flow">"#);
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let steps: Vec<String> = line.split('→').map(|s| flow_step(s.trim())).collect();
        let _ = write!(
            html,
            r#"<div class="flow-row">{}</div>"#,
            steps.join(r#"<span class="flow-arrow">→</span>"#)
        );
    }
    html.push_str("</div>");
    html
}

/// A `## ` section's body with its fenced block (if any) drawn as the Flow graph.
fn flow_section(body: &str) -> String {
    let mut lines = body.lines();
    let before: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let block: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let after: Vec<&str> = lines.collect();
    if block.is_empty() {
        return markdown(body);
    }
    format!(
        "{}{}{}",
        markdown(&before.join("\n")),
        flow_graph(&block.join("\n")),
        markdown(&after.join("\n"))
    )
}

/// The Markdown body, section by section (`## ` headings): Flow drawn, orchestration folded.
fn body(text: &str) -> String {
    let mut sections: Vec<(Option<&str>, String)> = vec![(None, String::new())];
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        match line.strip_prefix("## ") {
            Some(heading) if !fenced => sections.push((Some(heading.trim()), String::new())),
            _ => sections
                .last_mut()
                .map(|(_, body)| body.push_str(line))
                .unwrap_or_default(),
        }
    }
    let mut html = String::new();
    for (heading, text) in sections {
        let Some(heading) = heading else {
            html.push_str(&markdown(&text));
            continue;
        };
        let title = markdown(&format!("## {heading}"));
        let inner = if heading.eq_ignore_ascii_case("flow") {
            flow_section(&text)
        } else {
            markdown(&text)
        };
        // The note format's heading is "Shepherd orchestration".
        if heading.to_ascii_lowercase().contains("orchestration") {
            let _ = write!(
                html,
                r#"<details class="orchestration"><summary>{}</summary>{inner}</details>"#,
                esc(heading)
            );
        } else {
            html.push_str(&title);
            html.push_str(&inner);
        }
    }
    html
}

/// A Markdown file as the HTML of its page.
pub(crate) fn render(text: &str) -> String {
    let (front, rest) = split_frontmatter(text);
    let mut html = front.map(frontmatter).unwrap_or_default();
    html.push_str(&body(rest));
    html
}

#[cfg(test)]
#[path = "notes/tests.rs"]
mod tests;
