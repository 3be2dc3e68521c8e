//! Drawing one frame of the dashboard from what [`super::board`] worked out and the state of
//! [`super::ui`]: the header (whose herd, its project and fieldnotes session, the totals, the
//! connection), the sheep table, the settled tasks, and the footer (keys, the last outcome, a
//! prompt); overlays for help, a sheep's transcript or screen, and the herd picker. A function
//! of its inputs only, so a frame can be drawn into a test buffer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use shepherd_core::protocol::HerdResult;
use shepherd_core::task::TaskState;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::board::{self, Row, SettledRow, State};
use super::columns::{self, Column, GAP};
use super::ui::{Mode, PromptKind, ReadKind, Reader, Ui};

/// How the dashboard is connected to its broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Link {
    Connecting,
    Live,
    /// Live again after the broker restarted.
    Reconnected,
    /// The connection dropped; reconnecting.
    Lost,
    /// The broker stopped on purpose; waiting for one to start.
    Stopped,
    /// The broker cannot be reached (why); still trying.
    Unreachable(String),
}

/// Everything one frame shows.
pub(crate) struct Scene<'a> {
    /// The last pushed view, once there is one.
    pub(crate) herd: Option<&'a HerdResult>,
    /// The broker's time now, as far as the dashboard can tell.
    pub(crate) now: i64,
    pub(crate) ui: &'a Ui,
    pub(crate) link: &'a Link,
    /// The herd's parent identity and project.
    pub(crate) identity: &'a str,
    pub(crate) project: &'a str,
    /// Whether to use colour (not under `NO_COLOR`).
    pub(crate) color: bool,
}

impl Scene<'_> {
    fn style(&self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    fn state_style(&self, state: State) -> Style {
        let color = match state {
            State::Waiting => Color::Yellow,
            State::Blocked | State::Limited => Color::Magenta,
            State::Failed | State::Exited | State::LinkDown => Color::Red,
            State::Working => Color::Green,
            State::Starting => Color::Cyan,
            State::Done => Color::Blue,
            State::Idle | State::Closing => Color::DarkGray,
        };
        self.style(color)
    }

    fn outcome_style(&self, status: TaskState) -> Style {
        match status {
            TaskState::Completed => self.style(Color::Blue),
            TaskState::Blocked => self.style(Color::Magenta),
            TaskState::Cancelled => self.style(Color::DarkGray),
            _ => self.style(Color::Red),
        }
    }
}

/// Draws `scene` on `frame`.
pub(crate) fn draw(frame: &mut Frame, scene: &Scene) {
    let area = frame.area();
    if area.height == 0 || area.width == 0 {
        return;
    }
    let empty = HerdResult::default();
    let herd = scene.herd.unwrap_or(&empty);
    let rows = board::rows(herd, scene.now, &scene.ui.filter, scene.ui.sort);
    let settled = board::settled(herd, scene.now, &scene.ui.filter);

    let header = Rect {
        height: area.height.min(2),
        ..area
    };
    draw_header(frame, header, scene, herd);
    let footer = Rect {
        y: area.bottom().saturating_sub(1),
        height: u16::from(area.height > 2),
        ..area
    };
    draw_footer(frame, footer, scene);
    let body = Rect {
        y: area.y + header.height,
        height: area.height.saturating_sub(header.height + footer.height),
        ..area
    };
    match &scene.ui.mode {
        Mode::Reader(reader) => draw_reader(frame, body, scene, reader),
        Mode::Picker { herds, selected } => draw_picker(frame, body, scene, herds, *selected),
        _ => draw_body(frame, body, scene, &rows, &settled),
    }
    if scene.ui.mode == Mode::Help {
        draw_help(frame, body);
    }
}

fn draw_header(frame: &mut Frame, area: Rect, scene: &Scene, herd: &HerdResult) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut title = vec![
        Span::styled("shepherd", bold),
        Span::raw(format!(" · herd {} · {}", scene.identity, scene.project)),
    ];
    if let Some(session) = &herd.session {
        title.push(Span::raw(format!(" · notes {}", session.relative)));
    }
    let (link, link_style) = match scene.link {
        Link::Connecting => ("connecting…".to_owned(), scene.style(Color::Yellow)),
        Link::Live => ("● live".to_owned(), scene.style(Color::Green)),
        Link::Reconnected => (
            "● live · reconnected after a broker restart".to_owned(),
            scene.style(Color::Green),
        ),
        Link::Lost => (
            "connection lost · reconnecting…".to_owned(),
            scene.style(Color::Yellow),
        ),
        Link::Stopped => (
            "broker stopped · waiting for it to start again".to_owned(),
            scene.style(Color::Yellow),
        ),
        Link::Unreachable(why) => (
            format!("cannot reach the broker ({why}) · retrying"),
            scene.style(Color::Red),
        ),
    };
    let line = right_aligned(title, Span::styled(link, link_style), area.width);
    frame.render_widget(Paragraph::new(line), Rect { height: 1, ..area });
    if area.height > 1 {
        let totals = if scene.herd.is_some() {
            board::totals(herd)
        } else {
            String::new()
        };
        let mut spans = vec![Span::raw(totals)];
        if !scene.ui.filter.is_empty() {
            spans.push(Span::styled(
                format!("  ·  filter “{}”", scene.ui.filter),
                scene.style(Color::Yellow),
            ));
        }
        if scene.ui.sort != board::Sort::Spawned {
            spans.push(Span::raw(format!("  ·  by {}", scene.ui.sort.label())));
        }
        frame.render_widget(
            Paragraph::new(Line::from(spans)),
            Rect {
                y: area.y + 1,
                height: 1,
                ..area
            },
        );
    }
}

/// `left`, then `right` flush with the right edge when both fit; `left` is cut first.
fn right_aligned<'a>(left: Vec<Span<'a>>, right: Span<'a>, width: u16) -> Line<'a> {
    let width = usize::from(width);
    let right_width = right.content.width();
    let left_width: usize = left.iter().map(|s| s.content.width()).sum();
    if right_width + 1 > width {
        return Line::from(left);
    }
    let room = width - right_width - 1;
    let mut spans: Vec<Span> = Vec::new();
    let mut used = 0;
    for span in left {
        let left_room = room.saturating_sub(used);
        if left_room == 0 {
            break;
        }
        let text = cut(&span.content, left_room);
        used += text.width();
        spans.push(Span::styled(text, span.style));
    }
    let _ = left_width;
    spans.push(Span::raw(" ".repeat(width - used - right_width)));
    spans.push(right);
    Line::from(spans)
}

fn draw_body(frame: &mut Frame, area: Rect, scene: &Scene, rows: &[Row], settled: &[SettledRow]) {
    if area.height == 0 {
        return;
    }
    // The sheep come first (with their header and a blank line after them); the settled tasks
    // follow in what is left, but keep at least a third of the height when the herd is large.
    let table_wanted = u16::try_from(rows.len().max(2) + 2).unwrap_or(u16::MAX);
    let settled_wanted = if settled.is_empty() || area.height < 6 {
        0
    } else {
        u16::try_from(settled.len() + 1).unwrap_or(u16::MAX)
    };
    let settled_height = settled_wanted.min(
        area.height
            .saturating_sub(table_wanted)
            .max(area.height / 3),
    );
    let table = Rect {
        height: (area.height - settled_height).min(table_wanted),
        ..area
    };
    draw_table(frame, table, scene, rows);
    if settled_height > 0 {
        let below = Rect {
            y: table.bottom(),
            height: settled_height,
            ..area
        };
        draw_settled(frame, below, scene, settled);
    }
}

fn draw_table(frame: &mut Frame, area: Rect, scene: &Scene, rows: &[Row]) {
    let header_style = Style::default().add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line> = Vec::new();
    if rows.is_empty() {
        let text = match (scene.herd, scene.ui.filter.is_empty()) {
            (None, _) => "waiting for the herd…",
            (Some(_), true) => "no sheep in this herd yet",
            (Some(_), false) => "no sheep match the filter (Esc clears it)",
        };
        lines.push(Line::raw(String::new()));
        lines.push(Line::styled(
            format!("  {text}"),
            scene.style(Color::DarkGray),
        ));
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    let layout = columns::fit(rows, area.width);
    lines.push(Line::from(
        layout
            .iter()
            .map(|(column, width)| {
                Span::styled(
                    pad(column.header(), *width, gap_after(&layout, *column)),
                    header_style,
                )
            })
            .collect::<Vec<_>>(),
    ));
    let visible = usize::from(area.height.saturating_sub(1));
    let selected = scene
        .ui
        .selected
        .as_ref()
        .and_then(|id| rows.iter().position(|r| &r.agent_id == id));
    let offset = selected.map_or(0, |at| (at + 1).saturating_sub(visible));
    for (index, row) in rows.iter().enumerate().skip(offset).take(visible) {
        let mut spans: Vec<Span> = layout
            .iter()
            .map(|(column, width)| {
                let text = pad(&column.text(row), *width, gap_after(&layout, *column));
                let style = match column {
                    Column::State => scene.state_style(row.state),
                    Column::Waits => scene.style(Color::Yellow),
                    Column::Last | Column::Where | Column::Model => scene.style(Color::DarkGray),
                    _ => Style::default(),
                };
                Span::styled(text, style)
            })
            .collect();
        if Some(index) == selected {
            for span in &mut spans {
                span.style = span.style.add_modifier(Modifier::REVERSED);
            }
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn gap_after(layout: &[(Column, u16)], column: Column) -> u16 {
    if layout.last().is_some_and(|(last, _)| *last == column) {
        0
    } else {
        GAP
    }
}

fn draw_settled(frame: &mut Frame, area: Rect, scene: &Scene, settled: &[SettledRow]) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let width = area.width;
    // SHEEP, OUTCOME, TOOK and ENDED keep their natural widths; the task and the detail share
    // what is left (the detail goes first when the terminal is narrow).
    let natural = |f: &dyn Fn(&SettledRow) -> &str, header: &str| -> u16 {
        settled
            .iter()
            .map(|t| f(t).width())
            .chain(std::iter::once(header.width()))
            .max()
            .map_or(0, |w| u16::try_from(w).unwrap_or(u16::MAX))
    };
    let name_w = natural(&|t| &t.name, "SETTLED").min(28);
    let outcome_w = natural(&|t| &t.outcome, "OUTCOME");
    let took_w = natural(&|t| &t.took, "TOOK");
    let ago_w = natural(&|t| &t.ago, "ENDED");
    let fixed = name_w + outcome_w + took_w + ago_w + GAP * 4;
    let rest = width.saturating_sub(fixed);
    let task_natural = natural(&|t| &t.task, "TASK");
    let (task_w, detail_w) = if rest < 20 {
        (rest, 0)
    } else {
        let task_w = task_natural.min(rest.saturating_sub(GAP + 10).max(rest / 2));
        (task_w, rest.saturating_sub(task_w + GAP))
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(pad("SETTLED", name_w, GAP), bold),
        Span::styled(pad("TASK", task_w, GAP), bold),
        Span::styled(pad("OUTCOME", outcome_w, GAP), bold),
        Span::styled(pad("TOOK", took_w, GAP), bold),
        Span::styled(
            pad("ENDED", ago_w, if detail_w > 0 { GAP } else { 0 }),
            bold,
        ),
        Span::styled(pad("", detail_w, 0), bold),
    ])];
    for task in settled
        .iter()
        .take(usize::from(area.height.saturating_sub(1)))
    {
        lines.push(Line::from(vec![
            Span::raw(pad(&task.name, name_w, GAP)),
            Span::raw(pad(&task.task, task_w, GAP)),
            Span::styled(
                pad(&task.outcome, outcome_w, GAP),
                scene.outcome_style(task.status),
            ),
            Span::raw(pad(&task.took, took_w, GAP)),
            Span::raw(pad(&task.ago, ago_w, if detail_w > 0 { GAP } else { 0 })),
            Span::styled(pad(&task.detail, detail_w, 0), scene.style(Color::DarkGray)),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_footer(frame: &mut Frame, area: Rect, scene: &Scene) {
    if area.height == 0 {
        return;
    }
    let dim = scene.style(Color::DarkGray);
    let line = match &scene.ui.mode {
        Mode::Prompt { kind, text } => {
            let label = match kind {
                PromptKind::Message {
                    name,
                    reply_to: Some(_),
                    ..
                } => format!("answer {name} › "),
                PromptKind::Message { name, .. } => format!("message {name} › "),
                PromptKind::Delegate { name, .. } => format!("task for {name} › "),
                PromptKind::Filter => "filter › ".to_owned(),
            };
            let room = usize::from(area.width).saturating_sub(label.width() + 1);
            let shown = tail(text, room);
            let cursor_x = area.x + u16::try_from(label.width() + shown.width()).unwrap_or(0);
            frame.set_cursor_position((cursor_x.min(area.right().saturating_sub(1)), area.y));
            Line::from(vec![
                Span::styled(label, Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(shown),
            ])
        }
        Mode::ConfirmClose { name, .. } => Line::from(vec![Span::styled(
            format!("close {name}? its open task is cancelled  [y/N]"),
            scene.style(Color::Yellow).add_modifier(Modifier::BOLD),
        )]),
        Mode::Reader(_) => Line::styled(
            "↑↓ PgUp PgDn scroll  g/G top/end  r read again  Esc back",
            dim,
        ),
        Mode::Picker { .. } => {
            Line::styled("↑↓ select  ⏎ follow  r look again  Esc back  q quit", dim)
        }
        Mode::Help => Line::styled("any key closes help", dim),
        Mode::Table => match &scene.ui.status {
            Some(status) if status.error => {
                Line::styled(status.text.clone(), scene.style(Color::Red))
            }
            Some(status) => Line::raw(status.text.clone()),
            None => Line::styled(hints(area.width), dim),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The key hints that fit `width`.
fn hints(width: u16) -> &'static str {
    const HINTS: [&str; 3] = [
        "⏎ open  r read  m message  d delegate  x close  n note  / filter  s sort  H herds  ? help  q quit",
        "⏎ open  m message  d delegate  x close  ? help  q quit",
        "? help  q quit",
    ];
    HINTS
        .iter()
        .find(|hint| hint.width() <= usize::from(width))
        .unwrap_or(&HINTS[2])
}

fn draw_reader(frame: &mut Frame, area: Rect, scene: &Scene, reader: &Reader) {
    if area.height == 0 {
        return;
    }
    let what = match reader.kind {
        ReadKind::Transcript => "transcript (live)",
        ReadKind::Screen => "screen",
    };
    let title = Line::styled(
        format!("{} · {what}", reader.name),
        Style::default().add_modifier(Modifier::BOLD),
    );
    let text = reader.text.as_deref().unwrap_or("reading…");
    let all: Vec<&str> = text.lines().collect();
    let height = usize::from(area.height - 1);
    let end = all.len().saturating_sub(reader.from_bottom);
    let start = end.saturating_sub(height);
    let mut lines = vec![title];
    for line in &all[start..end] {
        lines.push(Line::raw(cut(line, usize::from(area.width))));
    }
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines), area);
    let _ = scene;
}

fn draw_picker(
    frame: &mut Frame,
    area: Rect,
    scene: &Scene,
    herds: &[shepherd_client::herds::HerdEntry],
    selected: usize,
) {
    frame.render_widget(Clear, area);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled("herds on this machine", bold)];
    if herds.is_empty() {
        lines.push(Line::styled(
            "  no broker answers here: no herd is running",
            scene.style(Color::DarkGray),
        ));
    }
    for (index, herd) in herds.iter().enumerate() {
        let text = format!(
            "  {:<13} {}  {}  · {} sheep, {} working",
            herd.kind.words(),
            herd.identity,
            herd.project.display(),
            herd.sheep,
            herd.working
        );
        let mut style = Style::default();
        if index == selected {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(pad(&text, area.width, 0), style));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

const HELP: &[(&str, &str)] = &[
    ("↑ ↓  j k", "select a sheep"),
    (
        "⏎  o",
        "open it: its tmux window or Herdr pane, or a headless sheep's transcript",
    ),
    ("r", "read its screen"),
    (
        "m",
        "message it (answers its question when it waits on you)",
    ),
    ("d", "delegate a task to it"),
    ("x", "close it (asks first; its open task is cancelled)"),
    ("n  e", "open its task's note in $PAGER / $EDITOR"),
    (
        "/",
        "filter by name, state, task, harness or model (Esc clears)",
    ),
    ("s", "sort: spawn order, state, name, age"),
    ("H", "pick another herd running on this machine"),
    ("q  Ctrl-C", "quit"),
];

fn draw_help(frame: &mut Frame, body: Rect) {
    let widest = HELP.iter().map(|(_, what)| what.width()).max().unwrap_or(0);
    let width = body
        .width
        .min(u16::try_from(widest + 2 + 12).unwrap_or(u16::MAX));
    let height = (u16::try_from(HELP.len()).unwrap_or(0) + 2).min(body.height);
    let area = Rect {
        x: body.x + (body.width - width) / 2,
        y: body.y + (body.height - height) / 2,
        width,
        height,
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let inner = usize::from(width.saturating_sub(2 + 12));
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(pad(keys, 12, 0), bold),
                Span::raw(cut(what, inner)),
            ])
        })
        .collect();
    let block = Block::bordered().title(Span::styled(" keys ", bold));
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// `text` cut to `width` cells (with `…` when cut), padded to `width`, then `gap` spaces.
fn pad(text: &str, width: u16, gap: u16) -> String {
    let width = usize::from(width);
    let mut out = cut(text, width);
    let used = out.width();
    out.extend(std::iter::repeat_n(
        ' ',
        width - used.min(width) + usize::from(gap),
    ));
    out
}

/// `text` on one line, at most `width` cells, ending in `…` when cut.
pub(crate) fn cut(text: &str, width: usize) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.width() <= width {
        return text;
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// The end of `text` that fits in `width` cells (what a prompt shows while typing).
fn tail(text: &str, width: usize) -> String {
    let mut used = 0;
    let mut start = text.len();
    for (at, c) in text.char_indices().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        start = at;
    }
    text[start..].to_owned()
}

#[cfg(test)]
mod tests;
