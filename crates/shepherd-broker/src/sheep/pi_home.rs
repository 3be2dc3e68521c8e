//! A confined pi sheep's own agent directory.
//!
//! pi keeps everything in one agent directory (`~/.pi/agent`, or `PI_CODING_AGENT_DIR`): its
//! credential (`auth.json`), settings and models, the extensions and prompts it loads, its
//! sessions — and Shepherd's own settings, approvals and agent definitions
//! (`pi-shepherd/`, `agents/`), which decide how every later sheep is confined. A confined pi
//! sheep must not write any of that, nor read other sessions. So it gets a directory of its
//! own, `<state>/agents/<id>/agent`, made afresh at each launch:
//!
//! - `settings.json`, `models.json` and `models-store.json` are copies, which pi may change;
//! - everything else it loads (`auth.json`, `extensions/`, `prompts/`, `themes/`, `bin/`, …)
//!   is a symlink to the user's, whose target the sandbox binds read-only: pi reads the user's
//!   credential and customisations and can change none of them;
//! - `pi-shepherd/`, `agents/` and `sessions/` are not there at all.

use std::path::{Path, PathBuf};

/// What a sheep never sees of the user's agent directory.
const HIDDEN: [&str; 3] = ["pi-shepherd", "agents", "sessions"];
/// What a sheep gets a copy of (pi writes these; the copy is the sheep's own).
const COPIED: [&str; 3] = ["settings.json", "models.json", "models-store.json"];

/// The sheep's agent directory, inside its own directory.
pub(crate) fn dir(sheep_dir: &Path) -> PathBuf {
    sheep_dir.join("agent")
}

/// The entries of the user's agent directory a confined sheep reads through its symlinks: the
/// sandbox binds each read-only at its own path.
pub(crate) fn shared(user_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs_err::read_dir(user_dir) else {
        return Vec::new();
    };
    let mut shared: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            !HIDDEN.contains(&name.as_ref()) && !COPIED.contains(&name.as_ref())
        })
        .map(|entry| entry.path())
        .collect();
    shared.sort();
    shared
}

/// Makes the sheep's agent directory afresh from the user's (read, never changed): whatever a
/// sheep left in the last one is gone.
pub(crate) fn compose(user_dir: &Path, sheep_dir: &Path) -> std::io::Result<PathBuf> {
    let agent = dir(sheep_dir);
    match fs_err::symlink_metadata(&agent) {
        Ok(meta) if meta.is_dir() => fs_err::remove_dir_all(&agent)?,
        Ok(_) => fs_err::remove_file(&agent)?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    shepherd_client::paths::ensure_private_dir(&agent)?;
    for name in COPIED {
        match fs_err::read(user_dir.join(name)) {
            Ok(bytes) => shepherd_fs::write_atomic(&agent.join(name), &bytes, Some(0o600))?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
    }
    for path in shared(user_dir) {
        if let Some(name) = path.file_name() {
            fs_err::os::unix::fs::symlink(&path, agent.join(name))?;
        }
    }
    Ok(agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sheep_gets_copies_links_and_nothing_of_shepherds_own() {
        let root = tempfile::tempdir().unwrap();
        let user = root.path().join("user");
        for dir in ["pi-shepherd", "agents", "sessions", "extensions"] {
            std::fs::create_dir_all(user.join(dir)).unwrap();
        }
        std::fs::write(user.join("auth.json"), "{\"key\":1}").unwrap();
        std::fs::write(user.join("settings.json"), "{}").unwrap();
        std::fs::write(user.join("pi-shepherd/config.json"), "{}").unwrap();
        let sheep = root.path().join("sheep");
        std::fs::create_dir_all(dir(&sheep).join("stale")).unwrap();

        let agent = compose(&user, &sheep).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&agent)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["auth.json", "extensions", "settings.json"]);
        assert!(
            std::fs::symlink_metadata(agent.join("auth.json"))
                .unwrap()
                .is_symlink()
        );
        assert!(
            !std::fs::symlink_metadata(agent.join("settings.json"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(
            shared(&user),
            [user.join("auth.json"), user.join("extensions")]
        );
    }
}
