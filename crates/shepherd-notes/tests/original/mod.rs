//! The original extension's fieldnotes rules (pi-shepherd's `artifact-sessions.ts`), encoded
//! for the interop tests, since the original itself cannot be installed here.
//!
//! Only what decides whether the two programs can share a folder is reproduced, as the
//! original does it: locks are lock files created exclusively (`wx`) holding the pid, retried
//! every 10 ms for up to 30 s and released by unlinking, with no stale-lock recovery; a
//! `session.json` is believed only if its `directoryName` matches, its directory is the
//! canonical child of its project's sessions directory, and — for `artifactSessionVersion: 2` —
//! it names a parent identity (and, with `parentPiSession`, the same project root); a parent
//! resumes only a version 2 record of its own identity; a name resumes any believed record of
//! that name; ordinals come from an exclusive `mkdir` of `.alloc/NNNN`; records are rewritten
//! whole (unknown keys kept) by temp file and rename. Every lock taken counts its retries, so a
//! test can tell that the original would have had to wait.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The original's retry interval.
pub const RETRY: Duration = Duration::from_millis(10);
/// The original's lock timeout.
pub const TIMEOUT: Duration = Duration::from_secs(30);
const TERMINAL: [&str; 4] = ["completed", "failed", "timed-out", "cancelled"];

/// Why an operation under the original's rules failed.
#[derive(Debug)]
pub enum Failure {
    /// `Timed out acquiring filesystem lock: <path>`.
    LockTimeout(PathBuf),
    /// `Invalid session metadata` and friends.
    Invalid(String),
    /// A filesystem error.
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// The original's fieldnotes of one project.
pub struct Original {
    pub project_root: PathBuf,
    /// How long a lock is waited for (the original: 30 s).
    pub patience: Duration,
    /// How many times a lock was found taken and retried, over this value's life.
    pub retries: AtomicUsize,
}

/// A session as the original holds it: its directory and its record.
#[derive(Debug, Clone)]
pub struct Session {
    pub path: PathBuf,
    pub record: Value,
    pub resumed: bool,
}

struct Held(PathBuf);

impl Drop for Held {
    fn drop(&mut self) {
        match fs::remove_file(&self.0) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => panic!("release {}: {err}", self.0.display()),
        }
    }
}

pub fn hash8(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))[..8].to_owned()
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn slugify(name: &str, max: usize) -> String {
    let mut slug = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(max).collect();
    slug.trim_end_matches('-').to_owned()
}

fn display_name(name: &str) -> String {
    name.split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_uppercase().collect::<String>() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_session_directory(name: &str) -> bool {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    digits >= 4 && name.len() > digits + 1 && name.as_bytes()[digits] == b'-'
}

fn has_control(text: &str) -> bool {
    text.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f)
}

impl Original {
    pub fn new(project_root: &Path) -> Self {
        Self {
            project_root: project_root.canonicalize().unwrap(),
            patience: TIMEOUT,
            retries: AtomicUsize::new(0),
        }
    }

    pub fn retries(&self) -> usize {
        self.retries.load(Ordering::SeqCst)
    }

    pub fn root(&self) -> PathBuf {
        self.project_root.join(".shepherd/sessions")
    }

    /// `lock()`: exclusive create, the pid inside, 10 ms retries up to the patience.
    fn lock(&self, path: &Path) -> Result<Held> {
        let started = Instant::now();
        fs::create_dir_all(path.parent().unwrap())?;
        loop {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(mut file) => {
                    writeln!(file, "{}", std::process::id())?;
                    return Ok(Held(path.to_owned()));
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    if started.elapsed() > self.patience {
                        return Err(Failure::LockTimeout(path.to_owned()));
                    }
                    self.retries.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(RETRY);
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// `atomicWrite()`: a `wx` temp file beside the target, fsync, rename.
    fn atomic_write(path: &Path, content: &str) -> Result<()> {
        let temp = PathBuf::from(format!(
            "{}.tmp-{}-{:012x}",
            path.display(),
            std::process::id(),
            rand_u64() & 0xffff_ffff_ffff
        ));
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(content.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        Ok(())
    }

    /// `readRecord()`: the record of `dir` if the original believes it, paths re-derived.
    pub fn read_record(&self, dir: &Path) -> Option<Value> {
        let text = fs::read_to_string(dir.join("session.json")).ok()?;
        let mut value: Value = serde_json::from_str(&text).ok()?;
        let record = value.as_object_mut()?;
        record.get("sessionName")?.as_str()?;
        let project_root = PathBuf::from(record.get("projectRoot")?.as_str()?);
        record.get("ordinal")?.as_u64()?;
        let artifacts = record.get("artifacts")?.as_array()?.clone();
        if record.get("directoryName")?.as_str()? != dir.file_name()?.to_str()? {
            return None;
        }
        if dir.parent()? != project_root.join(".shepherd/sessions") {
            return None;
        }
        if record.get("artifactSessionVersion") == Some(&json!(2)) {
            let identity = record
                .get("parentPiSession")
                .and_then(|p| p.get("identity"))
                .or_else(|| record.get("parentPiSessionId"))
                .and_then(Value::as_str)?;
            if identity.is_empty() || has_control(identity) {
                return None;
            }
            if let Some(binding) = record.get("parentPiSession")
                && binding.get("projectRoot").and_then(Value::as_str)
                    != Some(project_root.to_str()?)
            {
                return None;
            }
        }
        let mut fixed = Vec::new();
        for mut artifact in artifacts {
            let object = artifact.as_object_mut()?;
            object.get("agent")?.as_str()?;
            object.get("ordinal")?.as_u64()?;
            let file_name = object.get("fileName")?.as_str()?.to_owned();
            if file_name == "shepherd.md" || file_name.contains(['/', '\0']) || file_name.is_empty()
            {
                return None;
            }
            let file_path = dir.join(&file_name);
            object.insert("filePath".into(), json!(file_path));
            let relative = file_path.strip_prefix(&project_root).ok()?;
            object.insert("relativePath".into(), json!(relative));
            fixed.push(artifact);
        }
        record.insert("artifacts".into(), Value::Array(fixed));
        record.insert("sessionPath".into(), json!(dir));
        record.insert("mocPath".into(), json!(dir.join("shepherd.md")));
        record.insert(
            "sessionMetadataPath".into(),
            json!(dir.join("session.json")),
        );
        Some(value)
    }

    fn write_record_and_moc(dir: &Path, record: &mut Value) -> Result<()> {
        record["updatedAt"] = json!(now());
        let text = format!("{}\n", serde_json::to_string_pretty(record).unwrap());
        Self::atomic_write(&dir.join("session.json"), &text)?;
        Self::atomic_write(&dir.join("shepherd.md"), &render_moc(record))
    }

    fn session_dirs(&self) -> Result<Vec<PathBuf>> {
        let mut dirs: Vec<PathBuf> = fs::read_dir(self.root())?
            .filter_map(std::result::Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|entry| is_session_directory(&entry.file_name().to_string_lossy()))
            .map(|entry| entry.path())
            .collect();
        // readdir order is the original's; sorted here so tests are deterministic.
        dirs.sort();
        Ok(dirs)
    }

    fn allocation_ordinal(&self) -> Result<u64> {
        let root = self.root();
        fs::create_dir_all(root.join(".alloc"))?;
        let mut candidate = 1;
        for entry in fs::read_dir(&root)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() >= 4 && name[digits.len()..].starts_with('-') {
                candidate = candidate.max(digits.parse::<u64>().unwrap() + 1);
            }
        }
        loop {
            match fs::create_dir(root.join(format!(".alloc/{candidate:04}"))) {
                Ok(()) => return Ok(candidate),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => candidate += 1,
                Err(err) => return Err(err.into()),
            }
        }
    }

    fn create(&self, name: &str, binding: Option<&str>) -> Result<Session> {
        let root = self.root();
        let ordinal = self.allocation_ordinal()?;
        let mut slug = slugify(name, 64);
        let taken = self
            .session_dirs()?
            .iter()
            .any(|d| d.file_name().unwrap().to_string_lossy()[5..] == slug);
        if taken {
            slug = format!("{}-{}", &slug[..slug.len().min(55)], hash8(name));
        }
        let directory_name = format!("{ordinal:04}-{slug}");
        let dir = root.join(&directory_name);
        fs::create_dir(&dir)?;
        let root_text = self.project_root.to_str().unwrap();
        let started = now();
        let mut record = Map::new();
        if let Some(identity) = binding {
            record.insert("artifactSessionVersion".into(), json!(2));
            record.insert(
                "parentPiSession".into(),
                json!({"identity": identity, "projectRoot": root_text, "boundAt": started}),
            );
            record.insert("parentPiSessionId".into(), json!(identity));
        }
        for (key, value) in [
            ("sessionName", json!(name)),
            ("slug", json!(slug)),
            ("ordinal", json!(ordinal)),
            ("directoryName", json!(directory_name)),
            ("projectRoot", json!(root_text)),
            ("sessionPath", json!(dir)),
            (
                "sessionRelativePath",
                json!(format!(".shepherd/sessions/{directory_name}")),
            ),
            ("mocPath", json!(dir.join("shepherd.md"))),
            ("sessionMetadataPath", json!(dir.join("session.json"))),
            ("resumed", json!(false)),
            ("startedAt", json!(started)),
            ("updatedAt", json!(started)),
            ("status", json!("running")),
            ("modes", json!([])),
            ("artifacts", json!([])),
        ] {
            record.insert(key.into(), value);
        }
        let mut record = Value::Object(record);
        Self::write_record_and_moc(&dir, &mut record)?;
        Ok(Session {
            path: dir,
            record,
            resumed: false,
        })
    }

    fn resume(&self, dir: &Path, mut record: Value) -> Result<Session> {
        let _session = self.lock(&dir.join(".session.lock"))?;
        record["resumed"] = json!(true);
        if TERMINAL.contains(&record["status"].as_str().unwrap_or_default()) {
            record["status"] = json!("running");
        }
        Self::write_record_and_moc(dir, &mut record)?;
        Ok(Session {
            path: dir.to_owned(),
            record,
            resumed: true,
        })
    }

    /// `resolveOrCreateParentArtifactSession()`.
    pub fn resolve_parent(&self, identity: &str) -> Result<Session> {
        fs::create_dir_all(self.root())?;
        let _root = self.lock(&self.root().join(".sessions.lock"))?;
        for dir in self.session_dirs()? {
            let Some(record) = self.read_record(&dir) else {
                continue;
            };
            if record["artifactSessionVersion"] != json!(2) {
                continue;
            }
            let stored = record["parentPiSession"]["identity"]
                .as_str()
                .or(record["parentPiSessionId"].as_str());
            if record["projectRoot"].as_str() != self.project_root.to_str()
                || stored != Some(identity)
            {
                continue;
            }
            return self.resume(&dir, record);
        }
        self.create(&format!("orchestrator-{}", hash8(identity)), Some(identity))
    }

    /// `createOrResumeSession()` with an explicit name.
    pub fn create_or_resume_named(&self, name: &str) -> Result<Session> {
        fs::create_dir_all(self.root())?;
        let _root = self.lock(&self.root().join(".sessions.lock"))?;
        for dir in self.session_dirs()? {
            let Some(record) = self.read_record(&dir) else {
                continue;
            };
            if record["projectRoot"].as_str() != self.project_root.to_str()
                || record["sessionName"].as_str() != Some(name)
            {
                continue;
            }
            return self.resume(&dir, record);
        }
        self.create(name, None)
    }

    fn load(&self, session: &Session) -> Result<Value> {
        self.read_record(&session.path)
            .ok_or_else(|| Failure::Invalid(format!("{}", session.path.display())))
    }

    /// `reserveArtifacts()` for one note; returns its file name.
    pub fn reserve(&self, session: &Session, agent: &str, task: &str) -> Result<String> {
        let _lock = self.lock(&session.path.join(".session.lock"))?;
        let mut record = self.load(session)?;
        let artifacts = record["artifacts"].as_array().cloned().unwrap_or_default();
        let ordinal = artifacts.iter().filter(|a| a["agent"] == agent).count() + 1;
        let base = artifacts
            .iter()
            .find(|a| a["agent"] == agent)
            .and_then(|a| a["agentSlug"].as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                let base = slugify(agent, 48);
                if artifacts.iter().any(|a| a["agentSlug"] == base.as_str()) {
                    format!("{base}-{}", hash8(agent))
                } else {
                    base
                }
            });
        let mut file_name = format!("{base}-{ordinal:02}.md");
        let mut suffix = 2;
        while artifacts
            .iter()
            .any(|a| a["fileName"] == file_name.as_str())
            || session.path.join(&file_name).exists()
        {
            file_name = format!("{base}-{suffix}-{ordinal:02}.md");
            suffix += 1;
        }
        let directory = record["directoryName"].as_str().unwrap().to_owned();
        let artifact = json!({
            "id": format!("{directory}/{file_name}"),
            "agent": agent, "agentSlug": base, "ordinal": ordinal, "fileName": file_name,
            "filePath": session.path.join(&file_name),
            "relativePath": format!(".shepherd/sessions/{directory}/{file_name}"),
            "mode": "single", "task": task, "status": "pending", "reservedAt": now(),
        });
        Self::atomic_write(
            &session.path.join(&file_name),
            &format!("{}\n", frontmatter(&artifact, &record)),
        )?;
        record["artifacts"].as_array_mut().unwrap().push(artifact);
        let modes = record["modes"].as_array_mut().unwrap();
        if !modes.contains(&json!("single")) {
            modes.push(json!("single"));
        }
        Self::write_record_and_moc(&session.path, &mut record)?;
        Ok(file_name)
    }

    /// `finalizeArtifact()`.
    pub fn finalize(
        &self,
        session: &Session,
        file_name: &str,
        status: &str,
        output: &str,
    ) -> Result<()> {
        let _lock = self.lock(&session.path.join(".session.lock"))?;
        let mut record = self.load(session)?;
        let completed = now();
        let snapshot = record.clone();
        let stored = record["artifacts"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|a| a["fileName"] == file_name)
            .ok_or_else(|| Failure::Invalid(format!("not part of session: {file_name}")))?;
        stored["status"] = json!(status);
        stored["completedAt"] = json!(completed);
        let path = session.path.join(file_name);
        let existing = fs::read_to_string(&path).unwrap_or_default();
        let body = strip_frontmatter(&existing);
        let body = body
            .split("\n<!-- Shepherd orchestration -->")
            .next()
            .unwrap_or_default()
            .trim_end();
        let section = format!(
            "\n\n<!-- Shepherd orchestration -->\n## Shepherd orchestration\n\n- **Final status:** {status}\n- **Completed:** {completed}\n\n\n### Final output\n\n{output}\n"
        );
        let text = format!("{}{body}{section}", frontmatter(stored, &snapshot));
        Self::atomic_write(&path, &text)?;
        Self::write_record_and_moc(&session.path, &mut record)
    }
}

fn strip_frontmatter(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("---")
        && let Some(end) = rest.find("---")
    {
        return rest[end + 3..].trim_start();
    }
    text
}

/// `artifactFrontmatter()` and the note's heading.
fn frontmatter(artifact: &Value, record: &Value) -> String {
    let identity = record["parentPiSession"]["identity"]
        .as_str()
        .or(record["parentPiSessionId"].as_str());
    let mut fields = vec![
        (
            "artifactSessionVersion",
            record
                .get("artifactSessionVersion")
                .cloned()
                .unwrap_or(json!(1)),
        ),
        ("session", record["directoryName"].clone()),
        ("sessionName", record["sessionName"].clone()),
    ];
    if let Some(identity) = identity {
        fields.push(("parentPiSession", json!(hash8(identity))));
    }
    for key in ["agent", "ordinal", "mode", "status", "reservedAt"] {
        fields.push((key, artifact[key].clone()));
    }
    let lines: Vec<String> = fields
        .into_iter()
        .map(|(key, value)| match value.as_str() {
            Some(text)
                if text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                    && !text.is_empty() =>
            {
                format!("{key}: {text}")
            }
            _ => format!("{key}: {value}"),
        })
        .collect();
    format!(
        "---\n{}\n---\n\n# {} {:02}\n\n<!-- Agent's note or agent-maintained report follows. -->\n",
        lines.join("\n"),
        display_name(artifact["agent"].as_str().unwrap_or_default()),
        artifact["ordinal"].as_u64().unwrap_or_default()
    )
}

/// `renderMoc()`.
fn render_moc(record: &Value) -> String {
    let identity = record["parentPiSession"]["identity"]
        .as_str()
        .or(record["parentPiSessionId"].as_str());
    let binding = match (record.get("artifactSessionVersion"), identity) {
        (Some(v), Some(identity)) if *v == json!(2) => {
            format!("parent-bound (identity {})", hash8(identity))
        }
        _ => "legacy/unbound".to_owned(),
    };
    let artifacts = record["artifacts"].as_array().cloned().unwrap_or_default();
    let notes = if artifacts.is_empty() {
        "_No notes reserved yet._".to_owned()
    } else {
        artifacts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "{}. [{} {:02}](./{}) — {}",
                    i + 1,
                    display_name(a["agent"].as_str().unwrap_or_default()),
                    a["ordinal"].as_u64().unwrap_or_default(),
                    a["fileName"].as_str().unwrap_or_default(),
                    a["status"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "# Session {:04} — {}\n\n- **Status:** {}\n- **Session name:** `{}`\n- **Fieldnotes session version:** {}\n- **Parent binding:** {binding}\n- **Started:** {}\n- **Updated:** {}\n- **Project:** .\n\n## Notes\n\n{notes}\n",
        record["ordinal"].as_u64().unwrap_or_default(),
        display_name(record["sessionName"].as_str().unwrap_or_default()),
        record["status"].as_str().unwrap_or_default(),
        record["sessionName"].as_str().unwrap_or_default(),
        record
            .get("artifactSessionVersion")
            .map_or_else(|| "legacy".to_owned(), Value::to_string),
        record["startedAt"].as_str().unwrap_or_default(),
        record["updatedAt"].as_str().unwrap_or_default(),
    )
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    hasher.finish()
}
