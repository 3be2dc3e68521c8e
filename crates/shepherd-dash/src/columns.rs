//! Which columns of the sheep table fit a terminal of a given width, and how wide each is.
//!
//! Columns have an order of importance: the sheep's name and state are always shown; then its
//! task, what it waits on, how long its task has run, the last line it printed, tokens and
//! cost, its harness, model and where it runs. A narrow terminal drops columns from the least
//! important end until the rest fit at their minimum widths; what room is left goes first to
//! each column's natural width (its longest value), then to the task and the last line. A
//! column with nothing to show in any row (nobody waits, no tokens known) is left out.

use unicode_width::UnicodeWidthStr;

use super::board::Row;

/// A column of the sheep table, most important first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Column {
    Name,
    State,
    Task,
    Waits,
    Elapsed,
    Last,
    Usage,
    Harness,
    Model,
    Where,
}

/// Every column, most important first (the order columns are kept in).
const BY_IMPORTANCE: [Column; 10] = [
    Column::Name,
    Column::State,
    Column::Task,
    Column::Waits,
    Column::Elapsed,
    Column::Last,
    Column::Usage,
    Column::Harness,
    Column::Model,
    Column::Where,
];

/// Left to right on screen.
const ON_SCREEN: [Column; 10] = [
    Column::Name,
    Column::Harness,
    Column::Model,
    Column::Where,
    Column::State,
    Column::Task,
    Column::Elapsed,
    Column::Waits,
    Column::Usage,
    Column::Last,
];

/// Space between two columns.
pub(crate) const GAP: u16 = 2;

impl Column {
    pub(crate) fn header(self) -> &'static str {
        match self {
            Self::Name => "SHEEP",
            Self::State => "STATE",
            Self::Task => "TASK",
            Self::Waits => "WAITS ON",
            Self::Elapsed => "ELAPSED",
            Self::Last => "LAST LINE",
            Self::Usage => "TOKENS",
            Self::Harness => "HARNESS",
            Self::Model => "MODEL",
            Self::Where => "WHERE",
        }
    }

    /// The narrowest it may get before it is dropped instead.
    fn min_width(self) -> u16 {
        match self {
            Self::Name | Self::Task | Self::Last | Self::Waits => 10,
            Self::State => 14,
            Self::Elapsed | Self::Harness => 7,
            Self::Usage | Self::Where | Self::Model => 8,
        }
    }

    /// The widest it gets from its natural width alone (the task and last line take what is
    /// left over after that).
    fn max_width(self) -> u16 {
        match self {
            Self::Name | Self::Waits => 28,
            Self::Model => 32,
            Self::Task => 48,
            Self::Last => 40,
            _ => u16::MAX,
        }
    }

    /// Whether it takes whatever room is left at the end.
    fn flexible(self) -> bool {
        matches!(self, Self::Task | Self::Last)
    }

    /// Whether it is shown even when no row has a value for it.
    fn always(self) -> bool {
        matches!(self, Self::Name | Self::State | Self::Task)
    }

    /// Its text in `row`.
    pub(crate) fn text(self, row: &Row) -> String {
        match self {
            Self::Name => row.name.clone(),
            Self::State => format!("{} {}", row.state.label(), row.age),
            Self::Task => row.task.clone(),
            Self::Waits => row.waits.clone(),
            Self::Elapsed => row.elapsed.clone(),
            Self::Last => row.last.clone(),
            Self::Usage => row.usage.clone(),
            Self::Harness => row.harness.clone(),
            Self::Model => row.model.clone(),
            Self::Where => row.place.clone(),
        }
    }
}

/// The columns to draw, left to right, with their widths, for `rows` in `width` cells.
pub(crate) fn fit(rows: &[Row], width: u16) -> Vec<(Column, u16)> {
    let natural = |column: Column| -> u16 {
        let longest = rows
            .iter()
            .map(|row| column.text(row).width())
            .chain(std::iter::once(column.header().width()))
            .max()
            .unwrap_or(0);
        u16::try_from(longest).unwrap_or(u16::MAX)
    };
    let mut kept: Vec<Column> = BY_IMPORTANCE
        .iter()
        .copied()
        .filter(|c| c.always() || rows.iter().any(|row| !c.text(row).is_empty()))
        .collect();
    let needed = |kept: &[Column]| -> u32 {
        kept.iter()
            .map(|c| u32::from(c.min_width().min(natural(*c))))
            .sum::<u32>()
            + u32::from(GAP) * u32::try_from(kept.len().saturating_sub(1)).unwrap_or(0)
    };
    while kept.len() > 2 && needed(&kept) > u32::from(width) {
        kept.pop();
    }
    // Everyone starts at its minimum (or less, when its values are shorter); then, most
    // important first, each grows to its natural width while there is room; the rest goes to
    // the flexible columns.
    let mut widths: Vec<(Column, u16)> = kept
        .iter()
        .map(|c| (*c, c.min_width().min(natural(*c))))
        .collect();
    let used = |widths: &[(Column, u16)]| -> u16 {
        widths.iter().map(|(_, w)| *w).sum::<u16>()
            + GAP * u16::try_from(widths.len().saturating_sub(1)).unwrap_or(0)
    };
    for index in 0..widths.len() {
        let (column, current) = widths[index];
        let room = width.saturating_sub(used(&widths));
        let wanted = natural(column)
            .min(column.max_width())
            .saturating_sub(current);
        widths[index].1 += wanted.min(room);
    }
    let flexible: Vec<usize> = (0..widths.len())
        .filter(|i| widths[*i].0.flexible())
        .collect();
    let mut room = width.saturating_sub(used(&widths));
    for (n, index) in flexible.iter().enumerate() {
        let share = room / u16::try_from(flexible.len() - n).unwrap_or(1);
        let column = widths[*index].0;
        let wanted = natural(column).saturating_sub(widths[*index].1);
        let given = share.min(wanted);
        widths[*index].1 += given;
        room -= given;
    }
    // The last name or state may still not fit a very narrow terminal: cut them to it.
    if used(&widths) > width {
        let over = used(&widths) - width;
        let (_, first) = &mut widths[0];
        *first = first.saturating_sub(over).max(1);
    }
    ON_SCREEN
        .iter()
        .filter_map(|c| widths.iter().find(|(k, _)| k == c).copied())
        .collect()
}

#[cfg(test)]
mod tests;
