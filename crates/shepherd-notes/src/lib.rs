//! The fieldnotes store: the only code that writes under `.shepherd/sessions/`.
