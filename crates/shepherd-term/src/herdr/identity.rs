//! Which Herdr pane is a sheep's: the identity recorded at launch and finding that pane again.
//!
//! A pane id alone proves nothing. After a Herdr restart with a fresh session the ids start
//! again at `w1:p1`, so an old sheep's `w1:p4` can name a user's new pane; and `pane.move` to
//! another workspace gives a pane a new id. Herdr's terminal id (`term_661905df528db37`) is
//! unique per terminal and survives moves, so the launch record and the pane registry name a
//! sheep's pane as `<pane id>@<terminal id>` ([`PaneRef`]), and every action first finds the
//! pane whose terminal id matches ([`locate`]). A record without a terminal id (written before
//! Shepherd recorded one) can never be proven ours, so it is treated as gone: never closed,
//! and forgotten by `prune`. A server that is gone (nothing listens on its socket) took its
//! panes with it, so those are gone too.

use std::fmt;
use std::time::Instant;

use super::client::HerdrClient;
use super::error::HerdrError;
use super::wire::PaneInfo;

/// Separates the pane id from the terminal id in a recorded reference.
const SEPARATOR: char = '@';

/// A sheep's pane as recorded: where it was created and which terminal it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaneRef {
    /// The pane id at launch (a hint: moves change it).
    pub pane_id: String,
    /// The terminal id, the pane's identity.
    pub terminal_id: Option<String>,
}

impl PaneRef {
    /// A reference to `pane_id` running terminal `terminal_id`.
    pub fn new(pane_id: impl Into<String>, terminal_id: impl Into<String>) -> Self {
        Self {
            pane_id: pane_id.into(),
            terminal_id: Some(terminal_id.into()).filter(|t: &String| !t.is_empty()),
        }
    }

    /// Reads `w1:p3@term_…`, or a bare pane id (no identity).
    pub fn parse(text: &str) -> Self {
        match text.split_once(SEPARATOR) {
            Some((pane, terminal)) => Self::new(pane, terminal),
            None => Self {
                pane_id: text.to_owned(),
                terminal_id: None,
            },
        }
    }
}

impl fmt::Display for PaneRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.terminal_id {
            Some(terminal) => write!(f, "{}{SEPARATOR}{terminal}", self.pane_id),
            None => f.write_str(&self.pane_id),
        }
    }
}

/// Why a pane counts as gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoneBecause {
    /// Herdr lists no pane with its terminal.
    NotListed,
    /// No server listens on the socket any more.
    NoServer,
    /// The record names no terminal, so no pane can be proven to be it.
    Unprovable,
}

/// Where a recorded pane is now.
#[derive(Debug)]
pub enum Whereabouts {
    /// The pane, under its current id.
    Here(PaneInfo),
    /// Gone for good.
    Gone(GoneBecause),
    /// Herdr could not be asked (a timeout, an unreadable reply): never treated as gone.
    Unknown(HerdrError),
}

/// Finds the pane `reference` names on `client`'s server.
pub fn locate(client: &HerdrClient, reference: &PaneRef, deadline: Instant) -> Whereabouts {
    let Some(terminal) = reference.terminal_id.as_deref() else {
        return Whereabouts::Gone(GoneBecause::Unprovable);
    };
    match client.pane_list(None, Some(deadline)) {
        Ok(panes) => panes
            .into_iter()
            .find(|pane| pane.terminal_id == terminal)
            .map_or(Whereabouts::Gone(GoneBecause::NotListed), Whereabouts::Here),
        Err(err) if err.is_server_gone() => Whereabouts::Gone(GoneBecause::NoServer),
        Err(err) => Whereabouts::Unknown(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_round_trips_and_a_bare_id_has_no_identity() {
        let full = PaneRef::new("w1:p1N", "term_661905df528db37");
        assert_eq!(full.to_string(), "w1:p1N@term_661905df528db37");
        assert_eq!(PaneRef::parse(&full.to_string()), full);
        let bare = PaneRef::parse("w1:p4");
        assert_eq!(bare.terminal_id, None);
        assert_eq!(bare.to_string(), "w1:p4");
        assert_eq!(PaneRef::parse("w1:p4@").terminal_id, None);
    }
}
