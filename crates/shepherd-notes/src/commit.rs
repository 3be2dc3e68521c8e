//! Writing one combined commit's files: every touched note, `session.json` and (unless the
//! commit put it off) `shepherd.md` with the shepherd's note, staged and synced together, then
//! renamed into place, notes first and the index last; or the index alone, when a commit put
//! it off and it is caught up.
//!
//! A note's body belongs to its sheep, which may be writing it while we rewrite the
//! frontmatter. Just before the rename the note is read again; if it changed, it is rendered
//! again from the new text, so the sheep's words are kept.

use std::path::Path;

use indexmap::IndexMap;
use shepherd_core::fieldnotes::note::{Section, render_note, render_section};
use shepherd_core::fieldnotes::{SESSION_METADATA_FILE, SessionMetadata};

use crate::apply::NoteChange;
use crate::atomic::Batch;
use crate::read::read_regular_file;
use crate::{CommitStage, Store, StoreError};

/// How many times a note rewrite is redone when its sheep keeps changing it.
const NOTE_REWRITE_ATTEMPTS: usize = 3;

impl Store {
    /// Writes `shepherd.md` and the shepherd's note alone, when they differ from what the
    /// record makes of them.
    pub(crate) fn commit_index(
        &self,
        dir: &Path,
        metadata: &SessionMetadata,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::new(dir);
        let Some(seen) = crate::shepherds_note::stage_if_changed(&mut batch, metadata)? else {
            return Ok(());
        };
        batch.sync()?;
        crate::shepherds_note::keep_late_writes(&mut batch, metadata, seen)?;
        batch.persist()
    }

    /// Renders and commits the touched notes, `session.json` and, with `index`, `shepherd.md`.
    pub(crate) fn commit(
        &self,
        dir: &Path,
        metadata: &SessionMetadata,
        changes: &IndexMap<String, NoteChange>,
        index: bool,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::new(dir);
        let mut rechecks = Vec::new();
        for (file, change) in changes {
            if change.deleted {
                continue;
            }
            let record = metadata.artifact(file).expect("changed notes are listed");
            let path = dir.join(file);
            let before = if change.created {
                None
            } else {
                match read_regular_file(&path)? {
                    Some(text) => Some(text),
                    // A note that is not a readable regular file is left as it is: never
                    // overwrite what cannot be preserved.
                    None if path_exists(&path) => continue,
                    None => None,
                }
            };
            let section = change
                .section_output
                .as_ref()
                .map(|output| render_section(record, output.as_deref()));
            let text = render_note(metadata, record, before.as_deref(), as_section(&section));
            batch.stage(file, text.as_bytes(), change.created)?;
            if !change.created {
                rechecks.push((file.as_str(), before, section));
            }
        }
        batch.stage(SESSION_METADATA_FILE, metadata.to_json().as_bytes(), false)?;
        let seen = index
            .then(|| crate::shepherds_note::stage(&mut batch, metadata))
            .transpose()?;
        batch.sync()?;
        self.hook(CommitStage::Staged(dir));
        for (file, before, section) in rechecks {
            merge_late_writes(&mut batch, metadata, file, before, as_section(&section))?;
        }
        if let Some(seen) = seen {
            crate::shepherds_note::keep_late_writes(&mut batch, metadata, seen)?;
        }
        batch.persist()?;
        // Only once the record says a note is deleted does its file go (a crash in between
        // leaves a file the record disowns; deleting again removes it).
        for (file, change) in changes {
            if change.deleted {
                match fs_err::remove_file(dir.join(file)) {
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                        return Err(err.into());
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// If the sheep changed its note after we read it, renders the note again from its new
/// text and stages that instead, so the rename that follows keeps the sheep's words.
fn merge_late_writes(
    batch: &mut Batch,
    metadata: &SessionMetadata,
    file: &str,
    before: Option<String>,
    section: Section<'_>,
) -> Result<(), StoreError> {
    let record = metadata.artifact(file).expect("changed notes are listed");
    let path = batch.dir().join(file);
    let mut seen = before;
    for _ in 0..NOTE_REWRITE_ATTEMPTS {
        let current = read_regular_file(&path)?;
        if current == seen {
            return Ok(());
        }
        tracing::debug!(note = %path.display(), "note changed during commit; merging again");
        let text = render_note(metadata, record, current.as_deref(), section);
        batch.restage(file, text.as_bytes())?;
        seen = current;
    }
    Ok(())
}

/// The section change for a rendered section text.
fn as_section(section: &Option<String>) -> Section<'_> {
    section.as_deref().map_or(Section::Keep, Section::Set)
}

fn path_exists(path: &Path) -> bool {
    fs_err::symlink_metadata(path).is_ok()
}
