//! What goes down the board's event stream after its first whole page: only what changed. The
//! board is cut into pieces ([`Pieces`]): its head, each sheep's card, the runs, the closed
//! sheep's list.
//! A change sends the pieces that differ (a card with its column and its place there, a card
//! that left by its key), the column counts and the broker's clock; a card whose sheep did
//! nothing is not sent again (its age is the page's to keep ticking). The page applies a patch
//! in place (`app.js`); a stream that opens again starts from a whole page.
//!
//! Pure: two boards in, the patch out.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::board::{Column, Pieces, fill_ages};

/// A card to put in place: replaced when its key is on the page, else added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SetCard {
    /// The sheep's agent id (the card's `data-agent`).
    pub(crate) key: String,
    /// The column's id.
    pub(crate) column: &'static str,
    /// Its place among the column's cards once the patch is applied.
    pub(crate) index: usize,
    pub(crate) html: String,
}

/// What changed between two boards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Patch {
    /// The broker's clock at the newer board (ms).
    pub(crate) now: i64,
    /// The new head, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<String>,
    /// The new runs' list, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runs: Option<String>,
    /// The new closed sheep's list, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) closed: Option<String>,
    /// Each column's card count.
    pub(crate) counts: BTreeMap<&'static str, usize>,
    /// The cards whose sheep left the board.
    pub(crate) drop: Vec<String>,
    /// The cards that are new or changed (or changed column), in order of their place.
    pub(crate) set: Vec<SetCard>,
}

/// The patch from `old` to `new`, or `None` when nothing on the board changed.
pub(crate) fn diff(old: &Pieces, new: &Pieces, now: i64) -> Option<Patch> {
    let before: HashMap<&str, &str> = old
        .cards
        .iter()
        .map(|(key, _, html)| (key.as_str(), html.as_str()))
        .collect();
    let mut counts: BTreeMap<&'static str, usize> =
        Column::ALL.iter().map(|c| (c.id(), 0)).collect();
    let mut set = Vec::new();
    for (key, column, html) in &new.cards {
        let count = counts.entry(column.id()).or_default();
        // The card's HTML names its column, so one that moved differs too.
        if before.get(key.as_str()) != Some(&html.as_str()) {
            set.push(SetCard {
                key: key.clone(),
                column: column.id(),
                index: *count,
                html: fill_ages(html, now),
            });
        }
        *count += 1;
    }
    let kept: std::collections::HashSet<&str> =
        new.cards.iter().map(|(key, _, _)| key.as_str()).collect();
    let drop: Vec<String> = old
        .cards
        .iter()
        .filter(|(key, _, _)| !kept.contains(key.as_str()))
        .map(|(key, _, _)| key.clone())
        .collect();
    let head = (old.head != new.head).then(|| new.head.clone());
    let runs = (old.runs != new.runs).then(|| new.runs.clone());
    let closed = (old.closed != new.closed).then(|| new.closed.clone());
    if set.is_empty() && drop.is_empty() && head.is_none() && runs.is_none() && closed.is_none() {
        return None;
    }
    Some(Patch {
        now,
        head,
        runs,
        closed,
        counts,
        drop,
        set,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(cards: &[(&str, Column, &str)]) -> Pieces {
        Pieces {
            head: "h".into(),
            cards: cards
                .iter()
                .map(|(k, c, h)| ((*k).to_owned(), *c, (*h).to_owned()))
                .collect(),
            runs: String::new(),
            closed: String::new(),
        }
    }

    #[test]
    fn an_unchanged_board_sends_nothing() {
        let a = board(&[("a", Column::Idle, "A")]);
        assert_eq!(diff(&a, &a.clone(), 5), None);
    }

    #[test]
    fn only_the_changed_card_goes_with_its_place_in_its_new_column() {
        let old = board(&[
            ("a", Column::Working, "A"),
            ("b", Column::Working, "B"),
            ("c", Column::Working, "C"),
        ]);
        let new = board(&[
            ("a", Column::Working, "A"),
            ("b", Column::Settled, "B settled"),
            ("c", Column::Working, "C"),
        ]);
        let patch = diff(&old, &new, 9).unwrap();
        assert_eq!(
            patch.set,
            [SetCard {
                key: "b".into(),
                column: "settled",
                index: 0,
                html: "B settled".into()
            }]
        );
        assert!(patch.drop.is_empty() && patch.head.is_none() && patch.closed.is_none());
        assert_eq!(patch.counts["working"], 2);
        assert_eq!(patch.counts["settled"], 1);
        assert_eq!(patch.counts["needs-you"], 0);
        assert_eq!(patch.now, 9);
    }

    #[test]
    fn a_sheep_that_left_is_dropped_and_a_new_one_placed() {
        let old = board(&[("a", Column::Idle, "A"), ("b", Column::Idle, "B")]);
        let new = board(&[("b", Column::Idle, "B"), ("c", Column::Idle, "C")]);
        let patch = diff(&old, &new, 1).unwrap();
        assert_eq!(patch.drop, ["a"]);
        assert_eq!(patch.set.len(), 1);
        assert_eq!((patch.set[0].key.as_str(), patch.set[0].index), ("c", 1));
    }

    #[test]
    fn the_head_and_the_closed_list_go_only_when_they_changed() {
        let old = board(&[]);
        let mut new = old.clone();
        new.closed = "gone".into();
        let patch = diff(&old, &new, 1).unwrap();
        assert_eq!((patch.head, patch.closed.as_deref()), (None, Some("gone")));
    }
}
