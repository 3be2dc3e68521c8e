use super::super::board::State;
use super::*;

fn row(name: &str, task: &str, last: &str) -> Row {
    Row {
        agent_id: name.to_owned(),
        name: name.to_owned(),
        harness: "command".to_owned(),
        model: "anthropic/claude-sonnet-4".to_owned(),
        place: "tmux %3".to_owned(),
        backend: shepherd_core::backend::BackendKind::Tmux,
        state: State::Working,
        age: "2m05s".to_owned(),
        task: task.to_owned(),
        elapsed: "1m10s".to_owned(),
        waits: String::new(),
        usage: "12.3k tok $0.04".to_owned(),
        last: last.to_owned(),
        note: None,
        pending_request: None,
        age_ms: 125_000,
    }
}

fn shown(layout: &[(Column, u16)]) -> Vec<Column> {
    layout.iter().map(|(c, _)| *c).collect()
}

fn total(layout: &[(Column, u16)]) -> u16 {
    layout.iter().map(|(_, w)| *w).sum::<u16>() + GAP * u16::try_from(layout.len() - 1).unwrap()
}

#[test]
fn a_wide_terminal_shows_every_column_with_something_to_show() {
    let rows = [row("worker: a", "fix the login bug", "running tests")];
    let layout = fit(&rows, 200);
    assert_eq!(
        shown(&layout),
        [
            Column::Name,
            Column::Harness,
            Column::Model,
            Column::Where,
            Column::State,
            Column::Task,
            Column::Elapsed,
            Column::Usage,
            Column::Last,
        ],
        "nobody waits, so there is no WAITS ON column"
    );
    assert!(total(&layout) <= 200);
    let width_of = |c: Column| layout.iter().find(|(k, _)| *k == c).unwrap().1;
    assert_eq!(
        width_of(Column::Task),
        17,
        "a column is no wider than its longest value"
    );
}

#[test]
fn columns_drop_from_the_least_important_as_the_terminal_narrows() {
    let rows = [row("worker: a", "fix the login bug", "running tests")];
    let mut previous = shown(&fit(&rows, 200)).len();
    let mut dropped = Vec::new();
    let all = shown(&fit(&rows, 200));
    for width in (20..200).rev() {
        let layout = fit(&rows, width);
        assert!(total(&layout) <= width, "{width} cells: {layout:?}");
        let now = shown(&layout);
        assert!(
            now.len() <= previous,
            "a narrower terminal never shows more"
        );
        for column in &all {
            if !now.contains(column) && !dropped.contains(column) {
                dropped.push(*column);
            }
        }
        previous = now.len();
    }
    assert_eq!(
        dropped,
        [
            Column::Where,
            Column::Model,
            Column::Harness,
            Column::Usage,
            Column::Last,
            Column::Elapsed,
            Column::Task,
        ]
    );
    assert_eq!(shown(&fit(&rows, 20)), [Column::Name, Column::State]);
}

#[test]
fn spare_room_goes_to_the_task_and_the_last_line() {
    let long = "a task whose first line is long enough to need all the room there is";
    let rows = [row(
        "w",
        long,
        "a last line that is long too, longer than forty cells",
    )];
    let layout = fit(&rows, 120);
    assert_eq!(total(&layout), 120, "the whole width is used");
    let width_of = |c: Column| layout.iter().find(|(k, _)| *k == c).map(|(_, w)| *w);
    assert!(width_of(Column::Task).unwrap() > width_of(Column::Last).unwrap_or(0));
}

#[test]
fn a_tiny_terminal_still_gets_a_name_and_a_state() {
    let rows = [row("a very long display name for a sheep", "t", "")];
    let layout = fit(&rows, 12);
    assert_eq!(shown(&layout), [Column::Name, Column::State]);
    assert!(total(&layout) <= 12 || layout[0].1 == 1);
}
