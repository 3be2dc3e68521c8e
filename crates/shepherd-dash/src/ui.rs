//! What the person at the dashboard is doing: which sheep is selected, the filter and sort,
//! and which overlay is open (help, a prompt, a confirmation, a sheep's transcript or screen,
//! the herd picker). Keys change this and, when they ask for something of the herd, yield an
//! [`Intent`] that the loop turns into a broker request. Nothing here touches the terminal or
//! the broker, and nothing here is herd state: the herd is whatever the broker last pushed.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::board::{Row, Sort};
use shepherd_client::herds::HerdEntry;

/// What a prompt's text is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PromptKind {
    /// A message to a sheep (an answer when it waits on the shepherd).
    Message {
        agent_id: String,
        name: String,
        reply_to: Option<String>,
    },
    /// A new task for a sheep.
    Delegate { agent_id: String, name: String },
    /// The row filter, applied as it is typed.
    Filter,
}

/// What a reader overlay shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadKind {
    /// A headless sheep's output as a transcript, kept up to date.
    Transcript,
    /// What the sheep's screen shows now.
    Screen,
}

/// A scrolling text overlay about one sheep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reader {
    pub(crate) agent_id: String,
    pub(crate) name: String,
    pub(crate) kind: ReadKind,
    /// The text, once read.
    pub(crate) text: Option<String>,
    /// Lines scrolled up from the bottom (0: following the end).
    pub(crate) from_bottom: usize,
}

/// What is on top of the table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// The table alone.
    #[default]
    Table,
    Help,
    Prompt {
        kind: PromptKind,
        text: String,
    },
    /// Close this sheep? (y/n)
    ConfirmClose {
        agent_id: String,
        name: String,
    },
    Reader(Reader),
    /// Choose a herd among those running on this machine.
    Picker {
        herds: Vec<HerdEntry>,
        selected: usize,
    },
}

/// Something the person asked of the herd (or of the dashboard itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Intent {
    Quit,
    /// Bring a visible sheep's pane to the front.
    Focus {
        agent_id: String,
    },
    /// Read a sheep's output for the reader.
    Read {
        agent_id: String,
        kind: ReadKind,
    },
    Message {
        agent_id: String,
        text: String,
        reply_to: Option<String>,
    },
    Delegate {
        agent_id: String,
        text: String,
    },
    Close {
        agent_id: String,
    },
    /// Open a note in the pager (or the editor).
    OpenNote {
        path: String,
        edit: bool,
    },
    /// List the herds on this machine to pick from.
    ListHerds,
    /// Follow this herd instead.
    Follow(HerdEntry),
    /// Panic on purpose (only when the dashboard was started for tests of its recovery).
    Panic,
}

/// A line for the footer: what happened last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Status {
    pub(crate) text: String,
    pub(crate) error: bool,
}

/// The dashboard's own state.
#[derive(Debug, Default)]
pub(crate) struct Ui {
    pub(crate) mode: Mode,
    /// The selected sheep's agent id.
    pub(crate) selected: Option<String>,
    pub(crate) filter: String,
    pub(crate) sort: Sort,
    pub(crate) status: Option<Status>,
    /// Whether `!` may panic (for the terminal-recovery test).
    pub(crate) panic_key: bool,
}

impl Ui {
    /// Keeps the selection on a sheep that is still listed (else the first row).
    pub(crate) fn settle_selection(&mut self, rows: &[Row]) {
        let listed = self
            .selected
            .as_ref()
            .is_some_and(|id| rows.iter().any(|r| &r.agent_id == id));
        if !listed {
            self.selected = rows.first().map(|r| r.agent_id.clone());
        }
    }

    /// The selected row.
    pub(crate) fn selected_row<'r>(&self, rows: &'r [Row]) -> Option<&'r Row> {
        let id = self.selected.as_ref()?;
        rows.iter().find(|r| &r.agent_id == id)
    }

    pub(crate) fn say(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: false,
        });
    }

    pub(crate) fn complain(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: true,
        });
    }

    /// Handles one key with `rows` on screen.
    pub(crate) fn key(&mut self, key: KeyEvent, rows: &[Row]) -> Option<Intent> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Intent::Quit);
        }
        match std::mem::take(&mut self.mode) {
            Mode::Table => self.table_key(key, rows),
            Mode::Help => None,
            Mode::Prompt { kind, text } => self.prompt_key(key, kind, text),
            Mode::ConfirmClose { agent_id, name } => match key.code {
                KeyCode::Char('y' | 'Y') => {
                    self.say(format!("closing {name}…"));
                    Some(Intent::Close { agent_id })
                }
                _ => {
                    self.say(format!("{name} left open"));
                    None
                }
            },
            Mode::Reader(reader) => self.reader_key(key, reader),
            Mode::Picker { herds, selected } => Self::picker_key(self, key, herds, selected),
        }
    }

    fn table_key(&mut self, key: KeyEvent, rows: &[Row]) -> Option<Intent> {
        let selected = self.selected_row(rows).cloned();
        let position = selected
            .as_ref()
            .and_then(|s| rows.iter().position(|r| r.agent_id == s.agent_id));
        match key.code {
            KeyCode::Char('q') => return Some(Intent::Quit),
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                self.say("filter cleared");
            }
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Down | KeyCode::Char('j') => self.step(rows, position, 1),
            KeyCode::Up | KeyCode::Char('k') => self.step(rows, position, -1),
            KeyCode::Home | KeyCode::Char('g') => {
                self.selected = rows.first().map(|r| r.agent_id.clone());
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.selected = rows.last().map(|r| r.agent_id.clone());
            }
            KeyCode::Char('/') => {
                self.mode = Mode::Prompt {
                    kind: PromptKind::Filter,
                    text: self.filter.clone(),
                };
            }
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.say(format!("sorted by {}", self.sort.label()));
            }
            KeyCode::Char('H') => return Some(Intent::ListHerds),
            KeyCode::Char('!') if self.panic_key => return Some(Intent::Panic),
            _ => return self.sheep_key(key, selected?),
        }
        None
    }

    /// Keys that act on the selected sheep.
    fn sheep_key(&mut self, key: KeyEvent, row: Row) -> Option<Intent> {
        let agent_id = row.agent_id.clone();
        match key.code {
            KeyCode::Enter | KeyCode::Char('o')
                if row.backend == shepherd_core::backend::BackendKind::Headless =>
            {
                self.mode = Mode::Reader(Reader {
                    agent_id: agent_id.clone(),
                    name: row.name,
                    kind: ReadKind::Transcript,
                    text: None,
                    from_bottom: 0,
                });
                Some(Intent::Read {
                    agent_id,
                    kind: ReadKind::Transcript,
                })
            }
            KeyCode::Enter | KeyCode::Char('o') => Some(Intent::Focus { agent_id }),
            KeyCode::Char('r') => {
                self.mode = Mode::Reader(Reader {
                    agent_id: agent_id.clone(),
                    name: row.name,
                    kind: ReadKind::Screen,
                    text: None,
                    from_bottom: 0,
                });
                Some(Intent::Read {
                    agent_id,
                    kind: ReadKind::Screen,
                })
            }
            KeyCode::Char('m') => {
                self.mode = Mode::Prompt {
                    kind: PromptKind::Message {
                        agent_id,
                        name: row.name,
                        reply_to: row.pending_request,
                    },
                    text: String::new(),
                };
                None
            }
            KeyCode::Char('d') => {
                self.mode = Mode::Prompt {
                    kind: PromptKind::Delegate {
                        agent_id,
                        name: row.name,
                    },
                    text: String::new(),
                };
                None
            }
            KeyCode::Char('x') => {
                self.mode = Mode::ConfirmClose {
                    agent_id,
                    name: row.name,
                };
                None
            }
            KeyCode::Char(c @ ('n' | 'e')) => match row.note {
                Some(path) => Some(Intent::OpenNote {
                    path,
                    edit: c == 'e',
                }),
                None => {
                    self.complain(format!(
                        "{} has no note (no task yet, or fieldnotes are off)",
                        row.name
                    ));
                    None
                }
            },
            _ => None,
        }
    }

    fn step(&mut self, rows: &[Row], position: Option<usize>, by: isize) {
        if rows.is_empty() {
            return;
        }
        let next = match position {
            None => 0,
            Some(at) => at.saturating_add_signed(by).min(rows.len() - 1),
        };
        self.selected = Some(rows[next].agent_id.clone());
    }

    fn prompt_key(&mut self, key: KeyEvent, kind: PromptKind, mut text: String) -> Option<Intent> {
        match key.code {
            KeyCode::Esc => {
                if kind == PromptKind::Filter {
                    self.filter.clear();
                }
                return None;
            }
            KeyCode::Enter => return self.submit(kind, text),
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => text.clear(),
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        if kind == PromptKind::Filter {
            self.filter.clone_from(&text);
        }
        self.mode = Mode::Prompt { kind, text };
        None
    }

    fn submit(&mut self, kind: PromptKind, text: String) -> Option<Intent> {
        match kind {
            PromptKind::Filter => {
                self.filter = text;
                None
            }
            _ if text.trim().is_empty() => {
                self.say("nothing sent");
                None
            }
            PromptKind::Message {
                agent_id,
                name,
                reply_to,
            } => {
                self.say(format!("sending to {name}…"));
                Some(Intent::Message {
                    agent_id,
                    text,
                    reply_to,
                })
            }
            PromptKind::Delegate { agent_id, name } => {
                self.say(format!("delegating to {name}…"));
                Some(Intent::Delegate { agent_id, text })
            }
        }
    }

    fn reader_key(&mut self, key: KeyEvent, mut reader: Reader) -> Option<Intent> {
        let lines = reader.text.as_deref().map_or(0, |t| t.lines().count());
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return None,
            KeyCode::Up | KeyCode::Char('k') => {
                reader.from_bottom = (reader.from_bottom + 1).min(lines);
            }
            KeyCode::Down | KeyCode::Char('j') => {
                reader.from_bottom = reader.from_bottom.saturating_sub(1);
            }
            KeyCode::PageUp => reader.from_bottom = (reader.from_bottom + 10).min(lines),
            KeyCode::PageDown => reader.from_bottom = reader.from_bottom.saturating_sub(10),
            KeyCode::Home | KeyCode::Char('g') => reader.from_bottom = lines,
            KeyCode::End | KeyCode::Char('G') => reader.from_bottom = 0,
            KeyCode::Char('r') => {
                let intent = Intent::Read {
                    agent_id: reader.agent_id.clone(),
                    kind: reader.kind,
                };
                self.mode = Mode::Reader(reader);
                return Some(intent);
            }
            _ => {}
        }
        self.mode = Mode::Reader(reader);
        None
    }

    fn picker_key(
        &mut self,
        key: KeyEvent,
        herds: Vec<HerdEntry>,
        selected: usize,
    ) -> Option<Intent> {
        match key.code {
            KeyCode::Char('q') => return Some(Intent::Quit),
            KeyCode::Esc => return None,
            KeyCode::Enter => return herds.get(selected).cloned().map(Intent::Follow),
            KeyCode::Char('r') => return Some(Intent::ListHerds),
            KeyCode::Down | KeyCode::Char('j') => {
                let selected = (selected + 1).min(herds.len().saturating_sub(1));
                self.mode = Mode::Picker { herds, selected };
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.mode = Mode::Picker {
                    herds,
                    selected: selected.saturating_sub(1),
                };
            }
            _ => self.mode = Mode::Picker { herds, selected },
        }
        None
    }
}

#[cfg(test)]
mod tests;
