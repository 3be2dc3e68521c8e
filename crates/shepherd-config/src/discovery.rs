//! Finding agent definitions on disk, in precedence order.
//!
//! Definitions are searched, first to last: `<pi agent dir>/agents` and `~/.agents/agents`
//! (the user's), the nearest ancestor project `.pi/agents` and `.agents/agents` (the
//! repository's), then the bundled ones. The first definition of a name wins; later ones are
//! kept as *shadowed* so a person can see why their file is not the one that runs. Within one
//! directory files are read in sorted order, so the winner does not depend on the filesystem.
//! Definitions are read fresh on every call: editing a file takes effect on the next spawn.
//! A file that cannot be read or parsed is skipped alone, with a warning naming it.

use shepherd_core::error_code::ErrorCode;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use shepherd_core::agent_def::{AgentDef, AgentScope, AgentSource, parse_agent_def};
use shepherd_core::dirs::UserDirs;

use crate::bundled::BUNDLED_AGENTS;

/// The outcome of one discovery: the definitions that win, the ones they shadow, and the files
/// that were skipped or partly ignored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// The scope searched.
    pub scope: AgentScope,
    /// The winning definition of each name, in precedence order.
    pub agents: Vec<AgentDef>,
    /// Valid definitions that lost to an earlier one of the same name.
    pub shadowed: Vec<ShadowedAgent>,
    /// Files skipped, or read with some values ignored.
    pub warnings: Vec<DiscoveryWarning>,
    /// The project definition directories that were found (empty for the `user` scope).
    pub project_dirs: Vec<PathBuf>,
}

/// A definition that lost to an earlier one of the same name.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowedAgent {
    /// The definition that does not run.
    #[serde(flatten)]
    pub def: AgentDef,
    /// The file of the definition that runs instead.
    #[serde(serialize_with = "path_text")]
    pub shadowed_by: PathBuf,
}

/// A problem with one definition file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscoveryWarning {
    /// The file.
    #[serde(serialize_with = "path_text")]
    pub file: PathBuf,
    /// Whether the whole file was skipped (`false`: read, with one value ignored).
    pub skipped: bool,
    /// What is wrong, in one line.
    pub reason: String,
    /// The agent a skipped file meant to define: its frontmatter's `name:` when that much
    /// could be read, else the file's name without `.md` (or `.agent.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl fmt::Display for DiscoveryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.skipped { "skipped" } else { "in" };
        write!(f, "{verb} {}: {}", self.file.display(), self.reason)
    }
}

/// A name that no definition in the searched scope has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownAgent {
    /// The name asked for.
    pub name: String,
    /// The scope searched.
    pub scope: AgentScope,
    /// A definition whose name differs only in case.
    pub suggestion: Option<String>,
    /// Every name that is available.
    pub available: Vec<String>,
    /// A definition file of that name that was skipped, and why (`<file>: <reason>`).
    pub skipped: Option<String>,
}

impl UnknownAgent {
    /// The stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::UnknownAgent
    }
}

impl fmt::Display for UnknownAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(skipped) = &self.skipped {
            return write!(
                f,
                "Agent {:?} cannot be used: its definition was skipped: {skipped}",
                self.name
            );
        }
        write!(f, "Unknown agent {:?} in {} scope.", self.name, self.scope)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " Did you mean {suggestion:?}?")?;
        }
        if self.available.is_empty() {
            f.write_str(" No agents are available.")
        } else {
            write!(f, " Available agents: {}.", self.available.join(", "))
        }
    }
}

impl Discovery {
    /// The winning definition called exactly `name` (names are case-sensitive).
    pub fn find(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|def| def.name == name)
    }

    /// Like [`Discovery::find`], with an error that suggests a near miss and lists the names.
    pub fn get(&self, name: &str) -> Result<&AgentDef, UnknownAgent> {
        self.find(name).ok_or_else(|| {
            let lowered = name.to_lowercase();
            UnknownAgent {
                name: name.to_owned(),
                scope: self.scope,
                suggestion: self
                    .agents
                    .iter()
                    .find(|def| def.name.to_lowercase() == lowered)
                    .map(|def| def.name.clone()),
                available: self.agents.iter().map(|def| def.name.clone()).collect(),
                skipped: self
                    .warnings
                    .iter()
                    .find(|w| w.skipped && w.name.as_deref() == Some(name))
                    .map(|w| format!("{}: {}", w.file.display(), w.reason)),
            }
        })
    }
}

/// Searches the definition directories of `scope`.
///
/// `project_root` is where the search for project directories starts (walking up to the
/// filesystem root); bundled definitions are included when `include_bundled` is set (the
/// `includeBundledAgents` setting).
pub fn discover_agents(
    dirs: &UserDirs,
    project_root: &Path,
    scope: AgentScope,
    include_bundled: bool,
) -> Discovery {
    let mut search = Search::default();
    if scope.includes_user() {
        search.directory(&dirs.pi_user_agents_dir(), AgentSource::User);
        search.directory(&dirs.shared_user_agents_dir(), AgentSource::User);
    }
    let mut project_dirs = Vec::new();
    if scope.includes_project() {
        let user_dirs = [dirs.pi_user_agents_dir(), dirs.shared_user_agents_dir()];
        for config_dir in [".pi", ".agents"] {
            if let Some(dir) = nearest_project_dir(project_root, config_dir, &user_dirs) {
                search.directory(&dir, AgentSource::Project);
                project_dirs.push(dir);
            }
        }
    }
    if include_bundled {
        for agent in BUNDLED_AGENTS {
            search.file(
                agent.pseudo_path(),
                agent.contents.as_bytes(),
                AgentSource::Bundled,
            );
        }
    }
    Discovery {
        scope,
        agents: search.agents,
        shadowed: search.shadowed,
        warnings: search.warnings,
        project_dirs,
    }
}

/// The nearest `<ancestor>/<config_dir>/agents` directory of `start`, skipping the user's own
/// definition directories: `~/.agents/agents` is an ancestor's `.agents/agents` for every project
/// under the home directory, and must not turn the user's definitions into repository ones.
fn nearest_project_dir(start: &Path, config_dir: &str, user_dirs: &[PathBuf]) -> Option<PathBuf> {
    let start = fs_err::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    let user_dirs: Vec<PathBuf> = user_dirs.iter().map(|dir| canonical(dir)).collect();
    start
        .ancestors()
        .map(|ancestor| ancestor.join(config_dir).join("agents"))
        .find(|candidate| candidate.is_dir() && !user_dirs.contains(&canonical(candidate)))
}

fn canonical(path: &Path) -> PathBuf {
    fs_err::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Accumulates definitions in precedence order.
#[derive(Default)]
struct Search {
    agents: Vec<AgentDef>,
    shadowed: Vec<ShadowedAgent>,
    warnings: Vec<DiscoveryWarning>,
    winners: HashMap<String, usize>,
}

impl Search {
    /// Reads every `.md` (and so `.agent.md`) file of `dir`, symlinks followed, in sorted order.
    /// A directory that does not exist is simply not there; one that cannot be listed is warned.
    fn directory(&mut self, dir: &Path, source: AgentSource) {
        let entries = match fs_err::read_dir(dir) {
            Ok(entries) => entries,
            Err(_) if !dir.is_dir() => return,
            Err(err) => {
                self.warn(dir.to_path_buf(), true, io_reason(&err));
                return;
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        files.sort();
        for path in files {
            match fs_err::metadata(&path) {
                Ok(meta) if meta.is_file() => {}
                Ok(_) => continue,
                Err(_) if fs_err::symlink_metadata(&path).is_ok() => {
                    let reason = "it is a symlink to a file that does not exist".to_owned();
                    self.warn(path, true, reason);
                    continue;
                }
                Err(err) => {
                    self.warn(path, true, io_reason(&err));
                    continue;
                }
            }
            match fs_err::read(&path) {
                Ok(bytes) => self.file(path, &bytes, source),
                Err(err) => self.warn(path, true, io_reason(&err)),
            }
        }
    }

    fn file(&mut self, path: PathBuf, bytes: &[u8], source: AgentSource) {
        let parsed = match parse_agent_def(bytes, source, path.clone()) {
            Ok(parsed) => parsed,
            Err(err) => {
                let name = meant_name(&path, bytes);
                self.warnings.push(DiscoveryWarning {
                    file: path,
                    skipped: true,
                    reason: err.to_string(),
                    name: Some(name),
                });
                return;
            }
        };
        for ignored in &parsed.ignored {
            self.warn(path.clone(), false, ignored.to_string());
        }
        let def = parsed.def;
        match self.winners.get(&def.name) {
            Some(&index) => self.shadowed.push(ShadowedAgent {
                shadowed_by: self.agents[index].file_path.clone(),
                def,
            }),
            None => {
                self.winners.insert(def.name.clone(), self.agents.len());
                self.agents.push(def);
            }
        }
    }

    fn warn(&mut self, file: PathBuf, skipped: bool, reason: String) {
        self.warnings.push(DiscoveryWarning {
            file,
            skipped,
            reason,
            name: None,
        });
    }
}

/// The name a definition file meant to give its agent, read as leniently as possible from a
/// file that did not parse: a `name:` line inside its frontmatter, else the file's name.
fn meant_name(path: &Path, bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines();
    if lines.next().is_some_and(|first| first.trim() == "---") {
        for line in lines.take_while(|line| line.trim() != "---") {
            if let Some(value) = line.strip_prefix("name:") {
                let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
                if !value.is_empty() {
                    return value.to_owned();
                }
            }
        }
    }
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.strip_suffix(".agent.md")
        .or_else(|| file.strip_suffix(".md"))
        .unwrap_or(&file)
        .to_owned()
}

/// The operating system's reason without the path: the warning names the file already.
fn io_reason(err: &std::io::Error) -> String {
    let inner = err
        .get_ref()
        .and_then(std::error::Error::source)
        .map_or_else(|| err.to_string(), ToString::to_string);
    format!("cannot read it ({inner})")
}

fn path_text<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}
