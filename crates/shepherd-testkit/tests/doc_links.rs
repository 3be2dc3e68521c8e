//! Every relative link in Shepherd's documentation leads somewhere. The README is a front page
//! that sends its readers on to `docs/`, `CONTRIBUTING.md` and `ARCHITECTURE.md`, and those
//! pages link to each other and to headings inside each other. A page renamed or a heading
//! reworded leaves a link that goes nowhere, and nothing else notices: this test does. It reads
//! `README.md`, `CONTRIBUTING.md`, `ARCHITECTURE.md`, the pi package's `README.md` and every
//! Markdown file under `docs/`, and checks each relative link: the file it names exists inside
//! the repository, and its `#fragment`, when it has one and the target is Markdown, names a
//! heading there by the anchor GitHub gives it. Web and mail links are not followed.

// Tests read files directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

/// The documents checked, relative to the repository root, besides every `docs/**/*.md`.
const FRONT_DOCUMENTS: &[&str] = &[
    "README.md",
    "CONTRIBUTING.md",
    "ARCHITECTURE.md",
    "integrations/pi/README.md",
];

/// A link that leads nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Broken {
    /// The document holding the link, relative to the root.
    file: String,
    /// Its line, from 1.
    line: usize,
    /// The link's destination as written.
    target: String,
    /// What is wrong with it.
    why: String,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}`: {}",
            self.file, self.line, self.target, self.why
        )
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn markdown_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
}

/// The anchor GitHub gives a heading: its text in lower case, every character that is not a
/// letter, a digit, `-`, `_` or a space dropped, and each space turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown text offers: each heading's slug (a repeated one gets `-1`, `-2`, …
/// as on GitHub), and the `id` or `name` of any HTML anchor written into it.
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, markdown_options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let count = seen.entry(base.clone()).or_insert(0);
                found.push(if *count == 0 {
                    base
                } else {
                    format!("{base}-{count}")
                });
                *count += 1;
            }
            Event::Text(piece) | Event::Code(piece) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&piece);
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                found.extend(html_anchors(&html));
            }
            _ => {}
        }
    }
    found
}

/// The values of `id="…"` and `name="…"` attributes in a piece of HTML.
fn html_anchors(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in [" id=\"", " name=\""] {
        let mut rest = html;
        while let Some(start) = rest.find(attribute) {
            rest = &rest[start + attribute.len()..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    found
}

/// Every link and image in a Markdown text, with the line it starts on. Links inside code are
/// not links, and the parser knows it.
fn links(text: &str) -> Vec<(usize, String)> {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    Parser::new_ext(text, markdown_options())
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) if link_type != LinkType::Email => {
                Some((line_of(range.start), dest_url.into_string()))
            }
            _ => None,
        })
        .collect()
}

/// Whether a destination names a scheme (`https:`, `mailto:`, …): then it is not a path here.
fn is_external(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// `%20` and the like, decoded; anything malformed is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` with `.` and `..` worked out, without touching the file system; `None` when it
/// climbs above its start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(part) => parts.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// Checks every link of `documents` (paths relative to `root`), and returns the broken ones in
/// document order.
fn check(root: &Path, documents: &[PathBuf]) -> Vec<Broken> {
    let mut broken = Vec::new();
    let mut anchors_of: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut anchors_in = |file: &Path| -> Vec<String> {
        anchors_of
            .entry(file.to_owned())
            .or_insert_with(|| {
                std::fs::read_to_string(root.join(file))
                    .map(|text| anchors(&text))
                    .unwrap_or_default()
            })
            .clone()
    };
    for document in documents {
        let text = match std::fs::read_to_string(root.join(document)) {
            Ok(text) => text,
            Err(err) => {
                broken.push(Broken {
                    file: document.display().to_string(),
                    line: 0,
                    target: String::new(),
                    why: format!("cannot read the document: {err}"),
                });
                continue;
            }
        };
        let dir = document.parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if is_external(&target) {
                continue;
            }
            let report = |why: String| Broken {
                file: document.display().to_string(),
                line,
                target: target.clone(),
                why,
            };
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(percent_decode(fragment))),
                None => (target.as_str(), None),
            };
            let path = path.split_once('?').map_or(path, |(path, _)| path);
            let path = percent_decode(path);
            let file = if path.is_empty() {
                document.clone()
            } else if let Some(from_root) = path.strip_prefix('/') {
                PathBuf::from(from_root)
            } else {
                dir.join(&path)
            };
            let Some(file) = normalize(&file) else {
                broken.push(report("leads outside the repository".to_owned()));
                continue;
            };
            if !root.join(&file).exists() {
                broken.push(report(format!("{} does not exist", file.display())));
                continue;
            }
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
                continue;
            };
            let is_markdown = file.extension().is_some_and(|ext| ext == "md");
            if is_markdown && !anchors_in(&file).contains(&fragment) {
                broken.push(report(format!(
                    "{} has no heading with the anchor #{fragment}",
                    file.display()
                )));
            }
        }
    }
    broken
}

/// Every `*.md` under `dir` (relative to `root`), sorted.
fn markdown_under(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(root.join(dir))
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let path = dir.join(entry.file_name());
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            found.extend(markdown_under(root, &path));
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut documents: Vec<PathBuf> = FRONT_DOCUMENTS.iter().map(PathBuf::from).collect();
    documents.extend(markdown_under(root, Path::new("docs")));
    documents
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = repo_root();
    let documents = documents(&root);
    assert!(
        documents.contains(&PathBuf::from("docs/README.md")),
        "the docs index is missing: {documents:?}"
    );
    let broken = check(&root, &documents);
    assert!(
        broken.is_empty(),
        "{} broken link(s) in the documentation:\n{}",
        broken.len(),
        broken
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_missing_file_and_a_missing_heading_are_reported() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("docs")).unwrap();
    std::fs::write(
        root.path().join("README.md"),
        "# Front page\n\
         [fine](docs/guide.md#the-first-step) and [here](#front-page)\n\
         [gone](docs/missing.md)\n\
         [wrong heading](docs/guide.md#no-such-step)\n\
         `[not a link](nowhere.md)` and [the web](https://example.invalid/x)\n\
         [escapes](../outside.md)\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("docs/guide.md"),
        "# Guide\n\n## The first step\n\nBack to the [front page](../README.md#front-page).\n",
    )
    .unwrap();

    let documents = [PathBuf::from("README.md"), PathBuf::from("docs/guide.md")];
    let broken = check(root.path(), &documents);
    let shown: Vec<String> = broken.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "README.md:3: `docs/missing.md`: docs/missing.md does not exist",
            "README.md:4: `docs/guide.md#no-such-step`: docs/guide.md has no heading with the anchor #no-such-step",
            "README.md:6: `../outside.md`: leads outside the repository",
        ],
        "{broken:#?}"
    );
}

#[test]
fn anchors_are_the_ones_github_makes() {
    let text = "# The dashboard: `shepherd herd --tui`\n\
                ## Visible sheep: the agent's own TUI in a pane\n\
                ## Shepherd's note\n\
                ## `--json`\n\
                ## Tests\n\
                ## Tests\n\
                <a id=\"kept\"></a>\n";
    assert_eq!(
        anchors(text),
        [
            "the-dashboard-shepherd-herd---tui",
            "visible-sheep-the-agents-own-tui-in-a-pane",
            "shepherds-note",
            "--json",
            "tests",
            "tests-1",
            "kept",
        ]
    );
}
