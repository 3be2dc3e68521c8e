//! Every commit's `shepherd.md` and the shepherd's note beside it.
//!
//! The index is regenerated from the record on every commit; the shepherd's note
//! (`shepherds-note.md`, see `shepherd_core::fieldnotes::shepherds_note`) is the shepherd's and
//! is written by a commit only to create it (a session that lists none gets one, a deleted one
//! comes back empty) or to take in what the shepherd wrote into `shepherd.md` itself, which
//! would otherwise be lost to the regenerated index. Both files are read before staging and
//! again just before the rename: when the shepherd wrote either meanwhile, both are staged
//! again from what is there now, so a write racing a commit is kept too.

use shepherd_core::fieldnotes::index::render_index;
use shepherd_core::fieldnotes::shepherds_note::{
    LEGACY_MARKER, index_leftovers, render_new, with_moved,
};
use shepherd_core::fieldnotes::{INDEX_FILE, SHEPHERDS_NOTE_FILE, SessionMetadata, ShepherdsNote};

use crate::StoreError;
use crate::atomic::Batch;
use crate::read::read_regular_file;

/// How many times the two files are staged again when the shepherd keeps writing them.
const REWRITE_ATTEMPTS: usize = 3;

/// What a commit read of the two files before staging them.
#[derive(Debug)]
pub(crate) struct Seen {
    index: Option<String>,
    note: Option<String>,
}

/// Lists the shepherd's note in a record that has none yet (a session the original or an
/// earlier Shepherd made); the commit that writes the record creates the file.
pub(crate) fn adopt(metadata: &mut SessionMetadata, now: &str) {
    if metadata.shepherds_note.is_none() {
        metadata.shepherds_note = Some(ShepherdsNote::new(now));
    }
}

/// Stages `shepherd.md` for `metadata` and, when it needs writing, the shepherd's note.
pub(crate) fn stage(batch: &mut Batch, metadata: &SessionMetadata) -> Result<Seen, StoreError> {
    let index = read_regular_file(&batch.dir().join(INDEX_FILE))?;
    let note = read_regular_file(&batch.dir().join(SHEPHERDS_NOTE_FILE))?;
    let (index_text, note_text) = render(batch, metadata, index.as_deref(), note.as_deref());
    if let Some(text) = note_text {
        // Not `must_be_new`: a note the shepherd creates meanwhile is read again below, and
        // must not fail the commit.
        batch.stage(SHEPHERDS_NOTE_FILE, text.as_bytes(), false)?;
    }
    batch.stage(INDEX_FILE, index_text.as_bytes(), false)?;
    Ok(Seen { index, note })
}

/// Like [`stage`], but stages nothing and returns `None` when both files already hold what the
/// record makes of them.
pub(crate) fn stage_if_changed(
    batch: &mut Batch,
    metadata: &SessionMetadata,
) -> Result<Option<Seen>, StoreError> {
    let index = read_regular_file(&batch.dir().join(INDEX_FILE))?;
    let note = read_regular_file(&batch.dir().join(SHEPHERDS_NOTE_FILE))?;
    let (index_text, note_text) = render(batch, metadata, index.as_deref(), note.as_deref());
    if note_text.is_none() && index.as_deref() == Some(index_text.as_str()) {
        return Ok(None);
    }
    if let Some(text) = note_text {
        batch.stage(SHEPHERDS_NOTE_FILE, text.as_bytes(), false)?;
    }
    batch.stage(INDEX_FILE, index_text.as_bytes(), false)?;
    Ok(Some(Seen { index, note }))
}

/// Just before the rename: if the shepherd wrote `shepherd.md` or its note since [`stage`] read
/// them, stages both again from what is there now.
pub(crate) fn keep_late_writes(
    batch: &mut Batch,
    metadata: &SessionMetadata,
    mut seen: Seen,
) -> Result<(), StoreError> {
    for _ in 0..REWRITE_ATTEMPTS {
        let index = read_regular_file(&batch.dir().join(INDEX_FILE))?;
        let note = read_regular_file(&batch.dir().join(SHEPHERDS_NOTE_FILE))?;
        if index == seen.index && note == seen.note {
            return Ok(());
        }
        tracing::debug!("shepherd.md or the shepherd's note changed during commit; staging again");
        let (index_text, note_text) = render(batch, metadata, index.as_deref(), note.as_deref());
        if let Some(text) = note_text {
            batch.restage(SHEPHERDS_NOTE_FILE, text.as_bytes())?;
        }
        batch.restage(INDEX_FILE, index_text.as_bytes())?;
        seen = Seen { index, note };
    }
    Ok(())
}

/// The index to write, and the shepherd's note when it must be written: created when there is
/// none, or with what the shepherd wrote in the index moved to its end. When the note cannot be
/// written (its path holds something that is not a readable regular file), what the shepherd
/// wrote in the index stays at the index's end instead, below the line that marks it as the
/// shepherd's, so nothing of it is lost.
fn render(
    batch: &Batch,
    metadata: &SessionMetadata,
    index: Option<&str>,
    note: Option<&str>,
) -> (String, Option<String>) {
    let mut index_text = render_index(metadata);
    let moved = index.map(index_leftovers).unwrap_or_default();
    let occupied = note.is_none()
        && batch
            .dir()
            .join(SHEPHERDS_NOTE_FILE)
            .symlink_metadata()
            .is_ok();
    if metadata.shepherds_note.is_none() || occupied {
        if !moved.is_empty() {
            index_text.push_str(&format!("\n{LEGACY_MARKER}\n{moved}"));
        }
        return (index_text, None);
    }
    let note_text = match (note, moved.is_empty()) {
        (None, true) => Some(render_new(metadata)),
        (Some(_), true) => None,
        (note, false) => Some(with_moved(metadata, note, &moved, &metadata.updated_at)),
    };
    (index_text, note_text)
}
