//! Curating notes once they exist: deleting a final note and attaching feedback to any note.
//!
//! The concept dictionary lets a note's owner delete it and lets anyone share feedback on it.
//! A deleted note keeps its record, marked `deletedAt`, so its ordinal and file name are never
//! given out again and the index can still show that it existed (the store removes the file
//! once the record is committed); feedback is a list on the note's record. Both refuse bad
//! input without changing anything, like every other transition in [`super::ops`].

use super::error::{MAX_FEEDBACK, OpError};
use super::metadata::{Feedback, SessionMetadata};
use super::ops::check_label;

impl SessionMetadata {
    /// Deletes a final note: the record stays, marked deleted (its ordinal and file name are
    /// never used again), and the store removes its file. Returns whether it was deleted just
    /// now (`false`: it was already). A note still open is refused, as its sheep may be
    /// writing it.
    pub fn delete(&mut self, file_name: &str, now: &str) -> Result<bool, OpError> {
        let note = self
            .artifact_mut(file_name)
            .ok_or_else(|| OpError::UnknownNote {
                note: file_name.to_owned(),
            })?;
        if note.deleted_at.is_some() {
            return Ok(false);
        }
        if !note.status.is_terminal() {
            return Err(OpError::NotFinal {
                note: note.file_name.clone(),
                status: note.status,
            });
        }
        note.deleted_at = Some(now.to_owned());
        Ok(true)
    }

    /// Attaches feedback from `from` to a note (in any status, but not a deleted one).
    pub fn add_feedback(
        &mut self,
        file_name: &str,
        from: &str,
        text: &str,
        now: &str,
    ) -> Result<(), OpError> {
        check_label("feedback author", from)?;
        if text.trim().is_empty() || text.chars().count() > MAX_FEEDBACK {
            return Err(OpError::InvalidFeedback {
                length: text.chars().count(),
            });
        }
        let note = self.note_mut(file_name)?;
        note.feedback.push(Feedback {
            from: from.trim().to_owned(),
            at: now.to_owned(),
            text: text.trim_end().to_owned(),
        });
        Ok(())
    }
}
