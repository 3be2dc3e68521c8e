//! A remote sheep's fieldnotes: they stay on this machine, and the host gets a working copy.
//!
//! When a task reaches a remote sheep, its session's Markdown files (`shepherd.md`, earlier
//! notes, the sheep's own new note) are copied to the same place under the host's project, and
//! the context block names those paths, so the sheep reads and writes as a local one would.
//! What it writes comes back: a loop reads every open remote note that changed (one `files`
//! step per host a second), and a settling task's note is read once more before it is
//! finalised. Only the body comes back — the part between the frontmatter and Shepherd's own
//! section — so the broker's frontmatter and orchestration section are never lost to an old
//! copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::fieldnotes::note::split_note;
use shepherd_core::herd::NoteLink;
use shepherd_core::ids::TaskId;

use crate::remote::RemoteNote;
use crate::remote::ops::{FileContent, FileProbe, FilesRequest, op};
use crate::state::broker::Broker;

/// How often open remote notes are read back.
const SYNC_EVERY: Duration = Duration::from_secs(1);
/// How long one `files` step may take.
const STEP_DEADLINE: Duration = Duration::from_secs(20);
/// How long a settling task waits for its host's link before its note is finalised as it is.
const FINAL_WAIT: Duration = Duration::from_secs(5);

/// The context block as the host's sheep needs it: this project's paths become the host's.
pub(crate) fn context_for_host(context: &str, local_root: &Path, host_root: &Path) -> String {
    let local = format!("{}/", local_root.display());
    let host = format!("{}/", host_root.display());
    context.replace(&local, &host)
}

/// Registers again the open notes of remote sheep's tasks after a broker restart: their hosts
/// already have their copies (and what the sheep wrote since), so nothing is copied over them.
pub(crate) fn reopen(broker: &Arc<Broker>) {
    let open: Vec<(TaskId, String, NoteLink)> = broker.store.read(|herd| {
        herd.tasks
            .values()
            .filter(|task| !task.state.is_terminal() || (task.result.is_some() && !task.finalized))
            .filter_map(|task| {
                let host = herd.sheep.get(&task.agent_id)?.host()?.to_owned();
                Some((task.id.clone(), host, task.note.clone()?))
            })
            .collect()
    });
    for (task_id, host, note) in open {
        register(broker, &task_id, &host, &note, false);
    }
}

/// Registers a task's note as a remote one: its session goes to the host with the next sync
/// (and at once, when the link is up).
pub(crate) async fn open(broker: &Arc<Broker>, task_id: &TaskId, host: &str, note: &NoteLink) {
    register(broker, task_id, host, note, true);
    sync_host(broker, host).await;
}

fn register(broker: &Arc<Broker>, task_id: &TaskId, host: &str, note: &NoteLink, copy: bool) {
    let Ok(link) = super::link(broker, host) else {
        return;
    };
    let local_root = broker.config.address.project_root.clone();
    let host_root = link.def.project_path.clone();
    let local = PathBuf::from(&note.note);
    let to_host = |path: &Path| {
        path.strip_prefix(&local_root)
            .map(|rest| host_root.join(rest))
            .ok()
    };
    let Some(remote) = to_host(&local) else {
        return;
    };
    let session = PathBuf::from(&note.session_path);
    let mut open = broker.remotes.notes.lock().expect("notes lock");
    let pending = if copy {
        // Another remote sheep's open note on this host is that sheep's to write: its copy
        // there is newer than this machine's, and is never written over.
        let busy: Vec<PathBuf> = open
            .values()
            .filter(|other| other.host == host)
            .map(|other| other.remote.clone())
            .collect();
        session_files(&session)
            .into_iter()
            .filter_map(|(path, content)| to_host(&path).map(|path| (path, content)))
            .filter(|(path, _)| !busy.contains(path))
            .map(|(path, content)| FileContent {
                keep_existing: path == remote,
                path,
                content,
            })
            .collect()
    } else {
        Vec::new()
    };
    open.insert(
        task_id.clone(),
        RemoteNote {
            host: host.to_owned(),
            local,
            remote,
            pending,
            since: None,
        },
    );
    drop(open);
    broker.remotes.notes_opened.notify_one();
}

/// The session's Markdown files, for the host's copy.
fn session_files(session: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = fs_err::read_dir(session) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .filter_map(|path| {
            fs_err::read_to_string(&path)
                .ok()
                .map(|content| (path, content))
        })
        .collect()
}

/// Reads a settling task's remote note one last time, then forgets it.
pub(crate) async fn close(broker: &Arc<Broker>, task_id: &TaskId) {
    let Some(host) = broker
        .remotes
        .notes
        .lock()
        .expect("notes lock")
        .get(task_id)
        .map(|note| note.host.clone())
    else {
        return;
    };
    if let Ok(link) = super::link(broker, &host) {
        let _up = link.up(FINAL_WAIT).await;
    }
    sync_host(broker, &host).await;
    broker
        .remotes
        .notes
        .lock()
        .expect("notes lock")
        .remove(task_id);
}

/// Reads back every open remote note that changed, host by host, once a second while any is
/// open; with none open it waits for one to be opened, and never wakes by itself.
pub(crate) async fn sync_loop(broker: Arc<Broker>) {
    loop {
        let any_open = !broker.remotes.notes.lock().expect("notes lock").is_empty();
        if !any_open {
            tokio::select! {
                () = broker.shutdown.cancelled() => return,
                () = broker.remotes.notes_opened.notified() => {}
            }
        }
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            () = tokio::time::sleep(SYNC_EVERY) => {}
        }
        let hosts: std::collections::BTreeSet<String> = broker
            .remotes
            .notes
            .lock()
            .expect("notes lock")
            .values()
            .map(|note| note.host.clone())
            .collect();
        for host in hosts {
            sync_host(&broker, &host).await;
        }
    }
}

/// One `files` step for `host`: copies what is pending, reads what changed, and brings the
/// sheep's writing into the local notes.
async fn sync_host(broker: &Arc<Broker>, host: &str) {
    let Ok(link) = super::link(broker, host) else {
        return;
    };
    if link.hello().is_none() {
        return;
    }
    let notes: HashMap<TaskId, RemoteNote> = broker
        .remotes
        .notes
        .lock()
        .expect("notes lock")
        .iter()
        .filter(|(_, note)| note.host == host)
        .map(|(id, note)| (id.clone(), note.clone()))
        .collect();
    if notes.is_empty() {
        return;
    }
    let mut request = FilesRequest {
        within: link.def.project_path.clone(),
        ..FilesRequest::default()
    };
    for (id, note) in &notes {
        // A note opened since this one was registered is its own sheep's to write.
        let busy = |file: &FileContent| {
            notes
                .iter()
                .any(|(other, open)| other != id && open.remote == file.path)
        };
        request
            .write
            .extend(note.pending.iter().filter(|file| !busy(file)).cloned());
        request.read.push(FileProbe {
            path: note.remote.clone(),
            since: note.since,
        });
    }
    let step = tokio::task::spawn_blocking(move || {
        link.call::<op::Files>(&request, Instant::now() + STEP_DEADLINE)
    })
    .await;
    let reply = match step {
        Ok(Ok(reply)) => reply,
        Ok(Err(err)) => {
            tracing::warn!("syncing notes with host {host}: {err}");
            return;
        }
        Err(err) => {
            tracing::warn!("syncing notes with host {host}: {err}");
            return;
        }
    };
    let mut open = broker.remotes.notes.lock().expect("notes lock");
    for (id, sent) in &notes {
        let Some(note) = open.get_mut(id) else {
            continue;
        };
        // What was sent is on the host now.
        note.pending.retain(|file| !sent.pending.contains(file));
        let Some(read) = reply.read.iter().find(|read| read.path == note.remote) else {
            continue;
        };
        note.since = Some(read.modified);
        if let Some(content) = &read.content
            && let Err(err) = take_body(&note.local, content)
        {
            tracing::warn!("bringing back {}: {err}", note.local.display());
        }
    }
}

/// Puts the body of the host's copy into the local note, keeping the local frontmatter and
/// Shepherd's section.
fn take_body(local: &Path, remote: &str) -> std::io::Result<()> {
    let current = fs_err::read_to_string(local)?;
    let Some(merged) = merged_note(&current, remote) else {
        return Ok(());
    };
    shepherd_fs::write_atomic(local, merged.as_bytes(), None)
}

/// The local note with the remote copy's body, or `None` when the bodies are the same.
fn merged_note(local: &str, remote: &str) -> Option<String> {
    let mine = split_note(local);
    let theirs = split_note(remote);
    if mine.body == theirs.body {
        return None;
    }
    // `body` borrows from `local`: everything before it is the frontmatter, fences included.
    let start = mine.body.as_ptr() as usize - local.as_ptr() as usize;
    let mut out = String::with_capacity(local.len() + theirs.body.len());
    out.push_str(&local[..start]);
    out.push_str(theirs.body);
    out.push_str(mine.section.unwrap_or_default());
    out.push_str(mine.after);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: &str = "---\nstatus: completed\n---\n# Worker 01\n\n<!-- placeholder -->\n\n\
                         <!-- Shepherd orchestration -->\nfinal\n<!-- /Shepherd orchestration -->\n";

    #[test]
    fn the_hosts_body_replaces_the_local_one_and_nothing_else() {
        let remote = "---\nstatus: running\n---\n# Worker 01\n\nFound it: the cache.\n";
        let merged = merged_note(LOCAL, remote).expect("bodies differ");
        assert!(
            merged.starts_with("---\nstatus: completed\n---\n"),
            "{merged}"
        );
        assert!(merged.contains("Found it: the cache."), "{merged}");
        assert!(!merged.contains("placeholder"), "{merged}");
        assert!(
            merged.ends_with(
                "<!-- Shepherd orchestration -->\nfinal\n<!-- /Shepherd orchestration -->\n"
            ),
            "{merged}"
        );
        assert_eq!(merged_note(&merged, remote), None, "idempotent");
    }

    #[test]
    fn context_paths_become_the_hosts() {
        let block = "- Your note: /home/me/app/.shepherd/sessions/0001-x/w-01.md (project-relative: .shepherd/sessions/0001-x/w-01.md)";
        let host = context_for_host(block, Path::new("/home/me/app"), Path::new("/srv/app"));
        assert!(
            host.contains("/srv/app/.shepherd/sessions/0001-x/w-01.md"),
            "{host}"
        );
        assert!(!host.contains("/home/me/app"), "{host}");
    }
}
