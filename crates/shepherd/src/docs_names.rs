//! The documentation names only what exists. A page that names a file moved away, a tool
//! renamed (`shepherd_tasks`), a command or a flag that was never built sends its reader to
//! nothing, and no link checker notices: the name is in backticks, not a link. This reads the
//! README, CONTRIBUTING, ARCHITECTURE, the pi package's README and every page under `docs/`,
//! and checks each code span and each `shepherd …` line of a code block against the real
//! thing: a repository path against the files, a `shepherd_…` tool against the tool catalogue
//! (and the sheep's tools), a `shepherd …` command line against this binary's argument tree,
//! subcommand by subcommand and flag by flag.

// A test reading the repository's files directly; clippy.toml's rules are for the code it tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory as _;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

use crate::cli::Cli;

/// Where a path in the docs may start for it to be read as a repository path.
const REPOSITORY_DIRS: &[&str] = &[
    "crates/",
    "scripts/",
    "docs/",
    "integrations/",
    ".ci/",
    "schemas/",
];

/// Characters that make a span a pattern or a placeholder, not one name.
const PLACEHOLDER_MARKS: &[char] = &['*', '<', '>', '…', '{', '}', '$', '|', '[', ']'];

/// One name in the docs that does not exist.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Unknown {
    file: String,
    span: String,
    why: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
        "integrations/pi/README.md",
    ]
    .iter()
    .map(|doc| root.join(doc))
    .collect();
    let mut pending = vec![root.join("docs")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    docs
}

/// Every inline code span, and every line of a shell code block, in `text`.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut in_shell_block = false;
    for event in Parser::new(text) {
        match event {
            Event::Code(code) => spans.push(code.into_string()),
            Event::Start(Tag::CodeBlock(kind)) => {
                in_shell_block = match kind {
                    CodeBlockKind::Fenced(lang) => {
                        matches!(lang.as_ref(), "sh" | "bash" | "shell" | "console" | "")
                    }
                    CodeBlockKind::Indented => false,
                };
            }
            Event::End(TagEnd::CodeBlock) => in_shell_block = false,
            Event::Text(block) if in_shell_block => {
                spans.extend(block.lines().map(|line| line.trim().to_owned()));
            }
            _ => {}
        }
    }
    spans
}

/// The tools any front end offers a parent or a sheep.
fn tools() -> BTreeSet<&'static str> {
    use shepherd_mcp::catalogue::{PARENT, SHEEP};
    PARENT.iter().chain(SHEEP).map(|tool| tool.name).collect()
}

/// What is wrong with `span`, if it names something that does not exist.
fn check_span(
    span: &str,
    root: &Path,
    tools: &BTreeSet<&str>,
    cli: &clap::Command,
) -> Option<String> {
    let span = span.trim();
    if let Some(path) = repository_path(span) {
        return (!root.join(path).exists()).then(|| format!("no file or directory {path}"));
    }
    if span.starts_with("shepherd_") {
        return check_tool(span, root, tools);
    }
    let line = span.strip_prefix("$ ").unwrap_or(span);
    if let Some(rest) = line.strip_prefix("shepherd ") {
        return check_command(rest, cli);
    }
    None
}

/// What is wrong with `span`, a name that starts `shepherd_`: a Rust path (`shepherd_core::…`)
/// names one of the workspace's crates; anything else is a tool, as a front end offers it or
/// as a host shows it with its server's name before it (`shepherd_shepherd_spawn`), or a name
/// the pi extension's own text uses (its `shepherd_watcher` messages).
fn check_tool(span: &str, root: &Path, tools: &BTreeSet<&str>) -> Option<String> {
    let name: String = span
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
        .collect();
    if span[name.len()..].starts_with("::") {
        let dir = root.join("crates").join(name.replace('_', "-"));
        return (!dir.is_dir()).then(|| format!("no crate {name}"));
    }
    let tool = name.strip_prefix("shepherd_").unwrap_or(&name);
    if name.ends_with('_') || tools.contains(name.as_str()) || tools.contains(tool) {
        return None;
    }
    (!pi_extension_text(root).contains(name.as_str())).then(|| format!("no tool {name}"))
}

/// Every TypeScript source of the pi extension, concatenated.
fn pi_extension_text(root: &Path) -> String {
    let mut text = String::new();
    let mut pending = vec![root.join("integrations/pi/extensions")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "ts") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    text
}

/// `span` as a repository path, when it is one: under one of the repository's directories, a
/// single name with no placeholder in it (a trailing `:line` or `#anchor` dropped).
fn repository_path(span: &str) -> Option<&str> {
    if span.contains(char::is_whitespace) || span.contains(PLACEHOLDER_MARKS) {
        return None;
    }
    let path = span.split([':', '#']).next()?;
    let path = path.strip_prefix("./").unwrap_or(path);
    REPOSITORY_DIRS
        .iter()
        .any(|dir| path.starts_with(dir))
        .then_some(path)
}

/// Walks `line` (a command line after `shepherd `) down the argument tree: each word names a
/// subcommand while the command has them, and each `--flag` is one of the command's (or a
/// global one). Stops at what it cannot read as either: a value, a placeholder, shell syntax.
fn check_command(line: &str, cli: &clap::Command) -> Option<String> {
    let mut command = cli;
    let mut path = vec!["shepherd".to_owned()];
    // Split as a shell would, so a quoted value with spaces is one word; a line a shell
    // could not split (an unclosed quote, a line continued) is checked up to where it can be.
    let line = line.trim_end_matches('\\').trim_end();
    let words =
        shlex::split(line).unwrap_or_else(|| line.split_whitespace().map(str::to_owned).collect());
    for word in &words {
        let word = word.as_str();
        if word.starts_with('#') || [">", "|", "&&", ";", "2>&1", "\\"].contains(&word) {
            break;
        }
        if let Some(flag) = word.strip_prefix("--") {
            let flag = flag.split('=').next().unwrap_or(flag);
            if flag.is_empty() || flag.contains(PLACEHOLDER_MARKS) {
                continue;
            }
            let known = command
                .get_arguments()
                .chain(cli.get_arguments().filter(|arg| arg.is_global_set()))
                .any(|arg| {
                    arg.get_long() == Some(flag)
                        || arg
                            .get_all_aliases()
                            .is_some_and(|aliases| aliases.contains(&flag))
                })
                || ["help", "version"].contains(&flag);
            if !known {
                return Some(format!("`{}` has no flag --{flag}", path.join(" ")));
            }
            continue;
        }
        if word.starts_with('-') || !command.has_subcommands() {
            continue;
        }
        if word.contains(PLACEHOLDER_MARKS)
            || !word.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        {
            return None;
        }
        match command.find_subcommand(word) {
            Some(sub) => {
                path.push(word.to_owned());
                command = sub;
            }
            None if word == "help" => return None,
            None => return Some(format!("`{}` has no command {word}", path.join(" "))),
        }
    }
    None
}

/// How many spans of `docs` are read as commands, paths and tools: the check reads what it
/// should only if these are many.
fn kinds_read(docs: &[PathBuf]) -> [usize; 3] {
    let mut read = [0; 3];
    for doc in docs {
        for span in code_spans(&std::fs::read_to_string(doc).unwrap()) {
            let line = span.strip_prefix("$ ").unwrap_or(&span);
            if line.starts_with("shepherd ") {
                read[0] += 1;
            } else if repository_path(&span).is_some() {
                read[1] += 1;
            } else if span.starts_with("shepherd_") {
                read[2] += 1;
            }
        }
    }
    read
}

fn unknown_names(root: &Path, docs: &[PathBuf]) -> Vec<Unknown> {
    let tools = tools();
    let mut cli = Cli::command();
    cli.build();
    let mut unknown = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(doc).unwrap();
        let file = doc.strip_prefix(root).unwrap_or(doc).display().to_string();
        for span in code_spans(&text) {
            if let Some(why) = check_span(&span, root, &tools, &cli) {
                unknown.push(Unknown {
                    file: file.clone(),
                    span,
                    why,
                });
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    unknown
}

#[test]
fn the_docs_name_only_paths_tools_commands_and_flags_that_exist() {
    let root = repo_root();
    let docs = documents(&root);
    let [commands, paths, tools] = kinds_read(&docs);
    assert!(
        commands > 200 && paths > 80 && tools > 80,
        "read {commands} command lines, {paths} paths and {tools} tool names: too few to trust"
    );
    let unknown = unknown_names(&root, &docs);
    let listed: Vec<String> = unknown
        .iter()
        .map(|u| format!("{}: `{}`: {}", u.file, u.span, u.why))
        .collect();
    assert!(
        listed.is_empty(),
        "the docs name what does not exist:\n{}",
        listed.join("\n")
    );
}

#[test]
fn a_missing_path_tool_command_and_flag_are_each_caught() {
    let root = repo_root();
    let temp = tempfile::tempdir().unwrap();
    let page = temp.path().join("page.md");
    std::fs::write(
        &page,
        "Read `crates/shepherd/src/main.rs` and `crates/no-such/file.rs`; call `shepherd_spawn` \
         and `shepherd_tasks` (a host shows `shepherd_shepherd_spawn`; `shepherd_core::limit` is code); run `shepherd agents show worker`, `shepherd herd-of-goats` and \
         `shepherd spawn worker --no-such-flag`.\n\n```sh\nshepherd notes lst\n```\n",
    )
    .unwrap();
    let why: Vec<String> = unknown_names(&root, &[page])
        .into_iter()
        .map(|u| u.why)
        .collect();
    assert_eq!(
        why,
        [
            "no file or directory crates/no-such/file.rs",
            "`shepherd` has no command herd-of-goats",
            "`shepherd notes` has no command lst",
            "`shepherd spawn` has no flag --no-such-flag",
            "no tool shepherd_tasks",
        ]
    );
}

#[test]
fn the_mcp_pages_tool_table_names_every_tool_and_argument_the_server_offers() {
    use shepherd_mcp::catalogue::{Front, PARENT, offered};
    let page = std::fs::read_to_string(repo_root().join("docs/mcp.md")).unwrap();
    let mut missing = Vec::new();
    for tool in offered(PARENT, Front::Mcp) {
        let row_start = format!("| `{}` |", tool.name);
        let Some(row) = page.lines().find(|line| line.starts_with(&row_start)) else {
            missing.push(format!("{}: no row", tool.name));
            continue;
        };
        let row = row.replace("\\|", "/");
        let arguments = row.split('|').nth(2).unwrap_or_default();
        for arg in tool.args.iter().filter(|arg| arg.fronts.offers(Front::Mcp)) {
            if !arguments.contains(&format!("`{}`", arg.name)) {
                missing.push(format!("{}: {}", tool.name, arg.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/mcp.md's tool table leaves out: {missing:?}"
    );
}
