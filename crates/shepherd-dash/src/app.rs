//! The dashboard's loop: wait for the next thing that happened — a pushed herd view, a key, the
//! answer to a request, the once-a-second tick of the clocks, a signal — turn it into a
//! [`LoopEvent`], handle it with a plain `match`, and draw a frame when anything changed.

use shepherd_core::error_code::ErrorCode;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use ratatui::crossterm::event::{Event, EventStream};
use shepherd_core::protocol::HerdResult;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::actions::{self, Outcome, Request};
use super::board::{self, Row};
use super::render::{self, Link, Scene};
use super::terminal::Screen;
use super::ui::{Intent, Mode, Ui};
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::Target;
use shepherd_client::herd_feed::{self as feed, FeedEvent};
use shepherd_client::herds;

/// How the dashboard was started.
pub(crate) struct Options {
    /// Colour (not under `NO_COLOR`).
    pub(crate) color: bool,
    /// Ages stand at the last view's broker time (tests).
    pub(crate) frozen_clock: bool,
    /// `!` panics (the terminal-recovery test).
    pub(crate) panic_key: bool,
}

/// One thing that happened.
enum LoopEvent {
    Feed(FeedEvent),
    Outcome(Outcome),
    Input(Option<std::io::Result<Event>>),
    Tick,
    Quit,
}

/// The herd being followed.
struct Followed {
    target: Target,
    feed: JoinHandle<()>,
    events: UnboundedReceiver<FeedEvent>,
    /// The last view, and when it arrived.
    view: Option<(HerdResult, Instant)>,
    link: Link,
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.feed.abort();
    }
}

struct App<'a> {
    ctx: &'a Context,
    options: &'a Options,
    ui: Ui,
    followed: Option<Followed>,
    outcomes: UnboundedSender<Outcome>,
}

/// Runs the dashboard on `first` (or, without it, starting from the herd picker).
pub(crate) async fn run(
    first: Option<Target>,
    ctx: &Context,
    options: &Options,
) -> Result<(), CliError> {
    let (outcomes, mut outcome_rx) = unbounded_channel();
    let mut app = App {
        ctx,
        options,
        ui: Ui {
            panic_key: options.panic_key,
            ..Ui::default()
        },
        followed: None,
        outcomes,
    };
    match first {
        Some(target) => app.follow(target),
        None => app.list_herds().await,
    }
    let mut screen = Screen::take().map_err(|err| terminal_error(&err))?;
    let mut input = EventStream::new();
    let mut terminate = signal(SignalKind::terminate()).map_err(|err| signal_error(&err))?;
    let mut hangup = signal(SignalKind::hangup()).map_err(|err| signal_error(&err))?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Every event may change what is shown (a resize, too): draw once per event.
        {
            let now = app.now();
            let followed = app.followed.as_ref();
            let identity = followed.map_or("", |f| f.target.address.identity.as_str());
            let project = followed
                .map(|f| f.target.address.project_root.display().to_string())
                .unwrap_or_default();
            let scene = Scene {
                herd: followed.and_then(|f| f.view.as_ref().map(|(v, _)| v)),
                now,
                ui: &app.ui,
                link: followed.map_or(&Link::Connecting, |f| &f.link),
                identity,
                project: &project,
                color: options.color,
            };
            screen
                .terminal
                .draw(|frame| render::draw(frame, &scene))
                .map_err(|err| terminal_error(&err))?;
        }
        let ticking = !options.frozen_clock && app.shows_clocks();
        let event = tokio::select! {
            Some(event) = next_feed(&mut app.followed) => LoopEvent::Feed(event),
            Some(outcome) = outcome_rx.recv() => LoopEvent::Outcome(outcome),
            event = next_input(&mut input) => LoopEvent::Input(event),
            _ = tick.tick(), if ticking => LoopEvent::Tick,
            _ = terminate.recv() => LoopEvent::Quit,
            _ = hangup.recv() => LoopEvent::Quit,
        };
        match event {
            LoopEvent::Quit => return Ok(()),
            LoopEvent::Tick => {}
            LoopEvent::Feed(event) => app.feed(event),
            LoopEvent::Outcome(outcome) => app.outcome(outcome),
            LoopEvent::Input(None) => return Ok(()),
            LoopEvent::Input(Some(Err(err))) => return Err(terminal_error(&err)),
            LoopEvent::Input(Some(Ok(Event::Key(key)))) => {
                let rows = app.rows();
                let Some(intent) = app.ui.key(key, &rows) else {
                    app.settle_selection();
                    continue;
                };
                match intent {
                    Intent::Quit => return Ok(()),
                    Intent::Panic => panic!("the dashboard was asked to panic (`!`)"),
                    Intent::OpenNote { path, edit } => {
                        // The pager or editor reads the keyboard: stop reading it meanwhile.
                        drop(input);
                        let shown = screen.lend(|| open_note(&path, edit));
                        input = EventStream::new();
                        match shown.map_err(|err| terminal_error(&err))? {
                            Ok(()) => app.ui.say(format!("closed {path}")),
                            Err(err) => app.ui.complain(err),
                        }
                    }
                    Intent::ListHerds => app.list_herds().await,
                    intent => app.act(intent, &rows),
                }
                app.settle_selection();
            }
            LoopEvent::Input(Some(Ok(Event::Resize(..)))) => {
                screen.renew().map_err(|err| terminal_error(&err))?;
            }
            LoopEvent::Input(Some(Ok(_))) => {}
        }
    }
}

impl App<'_> {
    /// The broker's time now: the last view's, plus what has passed here since it came
    /// (unless the clock is frozen for tests).
    fn now(&self) -> i64 {
        let Some((view, arrived)) = self.followed.as_ref().and_then(|f| f.view.as_ref()) else {
            return 0;
        };
        let passed = if self.options.frozen_clock {
            0
        } else {
            i64::try_from(arrived.elapsed().as_millis()).unwrap_or(i64::MAX)
        };
        view.now.map_or_else(wall_clock_ms, |now| now + passed)
    }

    /// Whether anything on screen is a clock (an age, an elapsed time).
    fn shows_clocks(&self) -> bool {
        self.followed
            .as_ref()
            .and_then(|f| f.view.as_ref())
            .is_some_and(|(view, _)| !view.sheep.is_empty() || !view.settled.is_empty())
    }

    fn rows(&self) -> Vec<Row> {
        match self.followed.as_ref().and_then(|f| f.view.as_ref()) {
            Some((view, _)) => board::rows(view, self.now(), &self.ui.filter, self.ui.sort),
            None => Vec::new(),
        }
    }

    fn settle_selection(&mut self) {
        let rows = self.rows();
        self.ui.settle_selection(&rows);
    }

    fn follow(&mut self, target: Target) {
        let (events_tx, events) = unbounded_channel();
        let feed = tokio::spawn(feed::follow(target.clone(), events_tx));
        self.followed = Some(Followed {
            target,
            feed,
            events,
            view: None,
            link: Link::Connecting,
        });
        self.ui.selected = None;
    }

    async fn list_herds(&mut self) {
        let herds = herds::list(&self.ctx.dirs.runtime_dir).await;
        let current = self.followed.as_ref().map(|f| &f.target.address);
        let selected = herds
            .iter()
            .position(|h| {
                current.is_some_and(|c| c.identity == h.identity && c.project_root == h.project)
            })
            .unwrap_or(0);
        self.ui.mode = Mode::Picker { herds, selected };
    }

    fn feed(&mut self, event: FeedEvent) {
        let Some(followed) = self.followed.as_mut() else {
            return;
        };
        match event {
            FeedEvent::Connected { again } => {
                followed.link = if again { Link::Reconnected } else { Link::Live };
            }
            FeedEvent::View(view) => {
                let before = followed.view.take().map(|(v, _)| v);
                followed.view = Some((*view, Instant::now()));
                self.refresh_reader(before.as_ref());
                self.settle_selection();
            }
            FeedEvent::Lost => followed.link = Link::Lost,
            FeedEvent::Stopped => followed.link = Link::Stopped,
            FeedEvent::Unreachable(why) => followed.link = Link::Unreachable(why),
        }
    }

    /// A reader follows its sheep: when the sheep's line in the view changed, read again.
    fn refresh_reader(&mut self, before: Option<&HerdResult>) {
        let Mode::Reader(reader) = &self.ui.mode else {
            return;
        };
        let status = |view: Option<&HerdResult>| {
            view.and_then(|v| {
                v.sheep
                    .iter()
                    .find(|s| s.agent_id.as_str() == reader.agent_id)
                    .cloned()
            })
            .map(|mut s| {
                // Only what the sheep did, not how long it has waited.
                if let Some(task) = s.task.as_mut() {
                    task.waiting_ms = None;
                }
                s
            })
        };
        let now = self
            .followed
            .as_ref()
            .and_then(|f| f.view.as_ref())
            .map(|(v, _)| v);
        if status(before) != status(now) {
            let intent = Intent::Read {
                agent_id: reader.agent_id.clone(),
                kind: reader.kind,
            };
            let rows = self.rows();
            self.act(intent, &rows);
        }
    }

    fn outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Done(text) => self.ui.say(text),
            Outcome::Failed(text) => self.ui.complain(text),
            Outcome::Text {
                agent_id,
                kind,
                text,
            } => {
                if let Mode::Reader(reader) = &mut self.ui.mode
                    && reader.agent_id == agent_id
                    && reader.kind == kind
                {
                    reader.text = Some(text);
                }
            }
        }
    }

    /// Sends the broker request `intent` stands for.
    fn act(&mut self, intent: Intent, rows: &[Row]) {
        if let Intent::Follow(herd) = intent {
            let target = herd.target(self.ctx);
            self.ui.say(format!(
                "following {} in {}",
                herd.identity,
                herd.project.display()
            ));
            self.follow(target);
            return;
        }
        let Some(followed) = self.followed.as_ref() else {
            self.ui.complain("no herd is followed: press H to pick one");
            return;
        };
        let (agent_id, request) = match intent {
            Intent::Focus { agent_id } => (agent_id, Request::Focus),
            Intent::Read { agent_id, kind } => {
                let headless = rows
                    .iter()
                    .find(|r| r.agent_id == agent_id)
                    .is_none_or(|r| r.backend == shepherd_core::backend::BackendKind::Headless);
                (agent_id, Request::Read { kind, headless })
            }
            Intent::Message {
                agent_id,
                text,
                reply_to,
            } => (agent_id, Request::Message { text, reply_to }),
            Intent::Delegate { agent_id, text } => (agent_id, Request::Delegate { text }),
            Intent::Close { agent_id } => (agent_id, Request::Close),
            Intent::Quit
            | Intent::Panic
            | Intent::OpenNote { .. }
            | Intent::ListHerds
            | Intent::Follow(_) => return,
        };
        let name = rows
            .iter()
            .find(|r| r.agent_id == agent_id)
            .map_or_else(|| agent_id.clone(), |r| r.name.clone());
        actions::perform(
            followed.target.clone(),
            agent_id,
            name,
            request,
            self.outcomes.clone(),
        );
    }
}

async fn next_feed(followed: &mut Option<Followed>) -> Option<FeedEvent> {
    match followed {
        Some(followed) => followed.events.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_input(input: &mut EventStream) -> Option<std::io::Result<Event>> {
    std::future::poll_fn(|cx| Pin::new(&mut *input).poll_next(cx)).await
}

/// Shows `path` in `$PAGER` (`less` without one), or edits it in `$VISUAL`/`$EDITOR` (`vi`).
// The dashboard hands its terminal to the user's pager or editor: that process is its own.
#[allow(clippy::disallowed_types)]
fn open_note(path: &str, edit: bool) -> Result<(), String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let program = if edit {
        var("VISUAL")
            .or_else(|| var("EDITOR"))
            .unwrap_or_else(|| "vi".to_owned())
    } else {
        var("PAGER").unwrap_or_else(|| "less".to_owned())
    };
    // Through the shell, so `PAGER="less -R"` works as it does everywhere else.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{program} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .map_err(|err| format!("cannot run `{program}`: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program}` ended with {status}"))
    }
}

fn wall_clock_ms() -> i64 {
    shepherd_core::time::millis(shepherd_core::time::Timestamp::now())
}

fn terminal_error(err: &std::io::Error) -> CliError {
    CliError::new(ErrorCode::Terminal, format!("the terminal failed: {err}"))
}

fn signal_error(err: &std::io::Error) -> CliError {
    CliError::new(
        ErrorCode::Internal,
        format!("cannot install a signal handler: {err}"),
    )
}
