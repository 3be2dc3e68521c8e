use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::board::{Row, State};
use super::*;

fn row(id: &str, backend: &str) -> Row {
    Row {
        agent_id: id.to_owned(),
        name: format!("worker: {id}"),
        harness: "command".to_owned(),
        model: String::new(),
        place: backend.to_owned(),
        backend: backend.parse().expect("a backend"),
        state: State::Working,
        age: "1s".to_owned(),
        task: "t".to_owned(),
        elapsed: "1s".to_owned(),
        waits: String::new(),
        usage: String::new(),
        last: String::new(),
        note: None,
        pending_request: None,
        age_ms: 1000,
    }
}

fn press(ui: &mut Ui, rows: &[Row], code: KeyCode) -> Option<Intent> {
    ui.key(KeyEvent::new(code, KeyModifiers::NONE), rows)
}

fn typed(ui: &mut Ui, rows: &[Row], text: &str) {
    for c in text.chars() {
        assert_eq!(press(ui, rows, KeyCode::Char(c)), None);
    }
}

fn ready(rows: &[Row]) -> Ui {
    let mut ui = Ui::default();
    ui.settle_selection(rows);
    ui
}

#[test]
fn the_selection_moves_stays_in_bounds_and_follows_its_sheep() {
    let rows = [row("a", "tmux"), row("b", "tmux"), row("c", "tmux")];
    let mut ui = ready(&rows);
    assert_eq!(ui.selected.as_deref(), Some("a"));
    press(&mut ui, &rows, KeyCode::Up);
    assert_eq!(ui.selected.as_deref(), Some("a"));
    press(&mut ui, &rows, KeyCode::Char('j'));
    press(&mut ui, &rows, KeyCode::Down);
    press(&mut ui, &rows, KeyCode::Down);
    assert_eq!(ui.selected.as_deref(), Some("c"));
    // Sheep c goes first in a new order: the selection stays on c.
    let reordered = [row("c", "tmux"), row("a", "tmux")];
    ui.settle_selection(&reordered);
    assert_eq!(ui.selected.as_deref(), Some("c"));
    // c is gone: the first row is selected.
    ui.settle_selection(&[row("a", "tmux")]);
    assert_eq!(ui.selected.as_deref(), Some("a"));
}

#[test]
fn enter_focuses_a_visible_sheep_and_reads_a_headless_one() {
    let rows = [row("a", "tmux"), row("b", "headless")];
    let mut ui = ready(&rows);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Enter),
        Some(Intent::Focus {
            agent_id: "a".into()
        })
    );
    press(&mut ui, &rows, KeyCode::Down);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Enter),
        Some(Intent::Read {
            agent_id: "b".into(),
            kind: ReadKind::Transcript
        })
    );
    assert!(matches!(&ui.mode, Mode::Reader(r) if r.agent_id == "b" && r.text.is_none()));
    assert_eq!(press(&mut ui, &rows, KeyCode::Esc), None);
    assert_eq!(ui.mode, Mode::Table);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('r')),
        Some(Intent::Read {
            agent_id: "b".into(),
            kind: ReadKind::Screen
        })
    );
}

#[test]
fn a_message_is_typed_then_sent_and_answers_a_pending_question() {
    let mut waiting = row("a", "headless");
    waiting.pending_request = Some("q1".into());
    let rows = [waiting];
    let mut ui = ready(&rows);
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('m')), None);
    typed(&mut ui, &rows, "mainx");
    press(&mut ui, &rows, KeyCode::Backspace);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Enter),
        Some(Intent::Message {
            agent_id: "a".into(),
            text: "main".into(),
            reply_to: Some("q1".into())
        })
    );
    assert_eq!(ui.mode, Mode::Table);
    // Typing keys that are commands elsewhere ('q', 'x') is text inside a prompt.
    press(&mut ui, &rows, KeyCode::Char('d'));
    typed(&mut ui, &rows, "qx");
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Enter),
        Some(Intent::Delegate {
            agent_id: "a".into(),
            text: "qx".into()
        })
    );
    // An empty prompt sends nothing; Esc abandons one.
    press(&mut ui, &rows, KeyCode::Char('m'));
    assert_eq!(press(&mut ui, &rows, KeyCode::Enter), None);
    press(&mut ui, &rows, KeyCode::Char('m'));
    typed(&mut ui, &rows, "never");
    assert_eq!(press(&mut ui, &rows, KeyCode::Esc), None);
    assert_eq!(ui.mode, Mode::Table);
}

#[test]
fn closing_asks_first() {
    let rows = [row("a", "tmux")];
    let mut ui = ready(&rows);
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('x')), None);
    assert!(matches!(ui.mode, Mode::ConfirmClose { .. }));
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('n')), None);
    assert_eq!(ui.mode, Mode::Table);
    press(&mut ui, &rows, KeyCode::Char('x'));
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('y')),
        Some(Intent::Close {
            agent_id: "a".into()
        })
    );
}

#[test]
fn the_filter_applies_as_it_is_typed_and_esc_clears_it() {
    let rows = [row("a", "tmux")];
    let mut ui = ready(&rows);
    press(&mut ui, &rows, KeyCode::Char('/'));
    typed(&mut ui, &rows, "wor");
    assert_eq!(ui.filter, "wor");
    press(&mut ui, &rows, KeyCode::Enter);
    assert_eq!(ui.filter, "wor");
    assert_eq!(ui.mode, Mode::Table);
    press(&mut ui, &rows, KeyCode::Esc);
    assert_eq!(ui.filter, "");
}

#[test]
fn notes_open_only_when_there_is_one() {
    let mut with_note = row("a", "tmux");
    with_note.note = Some("/p/n.md".into());
    let rows = [with_note, row("b", "tmux")];
    let mut ui = ready(&rows);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('n')),
        Some(Intent::OpenNote {
            path: "/p/n.md".into(),
            edit: false
        })
    );
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('e')),
        Some(Intent::OpenNote {
            path: "/p/n.md".into(),
            edit: true
        })
    );
    press(&mut ui, &rows, KeyCode::Down);
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('n')), None);
    assert!(ui.status.as_ref().is_some_and(|s| s.error));
}

#[test]
fn q_and_ctrl_c_quit_but_only_ctrl_c_inside_a_prompt() {
    let rows = [row("a", "tmux")];
    let mut ui = ready(&rows);
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('q')),
        Some(Intent::Quit)
    );
    press(&mut ui, &rows, KeyCode::Char('m'));
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('q')), None);
    assert_eq!(
        ui.key(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            &rows
        ),
        Some(Intent::Quit)
    );
}

#[test]
fn help_opens_on_question_mark_and_any_key_closes_it() {
    let rows = [row("a", "tmux")];
    let mut ui = ready(&rows);
    press(&mut ui, &rows, KeyCode::Char('?'));
    assert_eq!(ui.mode, Mode::Help);
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('q')), None);
    assert_eq!(ui.mode, Mode::Table);
}

#[test]
fn the_panic_key_only_works_when_asked_for() {
    let rows = [row("a", "tmux")];
    let mut ui = ready(&rows);
    assert_eq!(press(&mut ui, &rows, KeyCode::Char('!')), None);
    ui.panic_key = true;
    assert_eq!(
        press(&mut ui, &rows, KeyCode::Char('!')),
        Some(Intent::Panic)
    );
}

#[test]
fn the_reader_scrolls_within_its_text() {
    let rows = [row("a", "headless")];
    let mut ui = ready(&rows);
    press(&mut ui, &rows, KeyCode::Enter);
    if let Mode::Reader(reader) = &mut ui.mode {
        reader.text = Some("1\n2\n3".into());
    }
    for _ in 0..5 {
        press(&mut ui, &rows, KeyCode::Up);
    }
    assert!(matches!(&ui.mode, Mode::Reader(r) if r.from_bottom == 3));
    press(&mut ui, &rows, KeyCode::End);
    assert!(matches!(&ui.mode, Mode::Reader(r) if r.from_bottom == 0));
}
