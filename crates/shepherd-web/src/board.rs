//! The board: one card per sheep in the column its facts put it in, and the herd's totals,
//! worked out from one pushed herd view. Pure: the view and its clock come in, HTML comes out,
//! so every rule here is tested on plain values.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use shepherd_core::herd::{SettledTask, SheepStatus};
use shepherd_core::protocol::HerdResult;
use shepherd_core::task::TaskState;

use std::path::Path;

use crate::html::{esc, note_url, path_url};

/// A board column, left to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Column {
    /// Something waits on the person: a question to the parent, a blocked or failed task or
    /// sheep, a stall reminder, a rate limit.
    NeedsYou,
    /// In a turn, starting, or waiting on a herd-mate.
    Working,
    /// Between tasks.
    Idle,
    /// Its task settled, or it is being closed.
    Settled,
}

impl Column {
    pub(crate) const ALL: [Self; 4] = [Self::NeedsYou, Self::Working, Self::Idle, Self::Settled];

    /// The column's heading.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::NeedsYou => "needs you",
            Self::Working => "working",
            Self::Idle => "idle",
            Self::Settled => "settled",
        }
    }

    /// The column's id in the page (tests and styles find it by this).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::NeedsYou => "needs-you",
            Self::Working => "working",
            Self::Idle => "idle",
            Self::Settled => "settled",
        }
    }

    /// The column `sheep` belongs in.
    pub(crate) fn of(sheep: &SheepStatus) -> Self {
        if let Some(task) = &sheep.task {
            let asks_parent =
                task.state == TaskState::Waiting && task.waiting_on.as_deref() == Some("shepherd");
            let stuck = matches!(task.state, TaskState::Blocked | TaskState::Failed);
            let nudged = task.stall.as_ref().is_some_and(|stall| stall.nudged);
            if asks_parent || stuck || nudged || task.rate_limit.is_some() {
                return Self::NeedsYou;
            }
        }
        match sheep.state.as_str() {
            "blocked" | "failed" | "exited" => Self::NeedsYou,
            "working" | "starting" => Self::Working,
            "done" | "closing" | "closed" => Self::Settled,
            _ if sheep
                .task
                .as_ref()
                .is_some_and(|task| !task.state.is_terminal()) =>
            {
                Self::Working
            }
            _ => Self::Idle,
        }
    }
}

/// How long since `since` (the broker's clock, ms), which the page keeps ticking from the
/// broker's `now` it was sent (`data-now`). A card holds its ages unwritten, so it is sent
/// again only when something about its sheep changed, not each time it ages; [`fill_ages`]
/// writes them into what is sent, so the page shows them from its first paint.
pub(crate) fn age(since: i64) -> String {
    format!(r#"<time data-since="{since}"></time>"#)
}

/// `html` with each unwritten age ([`age`]) written as it stands at `now`.
pub(crate) fn fill_ages(html: &str, now: i64) -> String {
    const OPEN: &str = r#"<time data-since=""#;
    const CLOSE: &str = r#""></time>"#;
    let mut out = String::with_capacity(html.len() + html.len() / 16);
    let mut rest = html;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find('"') else { break };
        let since = &after[..end];
        match (since.parse::<i64>(), after[end..].starts_with(CLOSE)) {
            (Ok(since), true) => {
                out.push_str(&rest[..start + OPEN.len() + end]);
                let _ = write!(out, r#"">{}</time>"#, elapsed(now - since));
                rest = &after[end + CLOSE.len()..];
            }
            _ => {
                out.push_str(&rest[..start + OPEN.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// "4 s", "3 min", "2 h 5 min": how long, in the words the page's script also uses.
pub(crate) fn elapsed(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

/// The state word a card shows: a sheep whose task waits on an answer is still `working` as a
/// process, so it says `waiting`, what it does.
fn shown_state(sheep: &SheepStatus) -> &str {
    match &sheep.task {
        Some(task) if task.state == TaskState::Waiting => "waiting",
        _ => sheep.state.as_str(),
    }
}

/// Tokens and cost, when the sheep reported any.
fn usage(sheep: &SheepStatus) -> Option<String> {
    let usage = sheep.usage.as_ref()?;
    let tokens = usage.tokens_in + usage.tokens_out;
    Some(format!("{tokens} tokens · ${:.2}", usage.cost))
}

/// One sheep's card.
pub(crate) fn card(
    sheep: &SheepStatus,
    last: Option<&SettledTask>,
    csrf: &str,
    root: &Path,
) -> String {
    let mut html = String::new();
    let id = sheep.agent_id.to_string();
    let column = Column::of(sheep);
    let state = shown_state(sheep);
    let _ = write!(
        html,
        r#"<article class="card" data-agent="{id}" data-column="{col}"><header><a class="name" href="/sheep/{url}">{name}</a> <span class="state state-{state}">{state}</span></header>"#,
        id = esc(&id),
        col = column.id(),
        url = path_url(&id),
        name = esc(&sheep.display_name),
        state = esc(state),
    );
    let place = match &sheep.host {
        Some(host) => format!("{} on {host}", sheep.backend),
        None => sheep.backend.to_string(),
    };
    let _ = write!(
        html,
        r#"<p class="meta">{agent} ({runtime}) · {place} · {elapsed}</p>"#,
        agent = esc(&sheep.agent),
        runtime = esc(sheep.runtime.as_str()),
        place = esc(&place),
        elapsed = age(sheep.since),
    );
    if let Some(task) = &sheep.task {
        let _ = write!(
            html,
            r#"<p class="task">{}</p>"#,
            esc(if task.title.is_empty() {
                "(a task)"
            } else {
                &task.title
            })
        );
        if let Some(url) = task.note.as_deref().and_then(|note| note_url(root, note)) {
            let _ = write!(html, r#"<p class="note-link"><a href="{url}">note</a></p>"#);
        }
        if let (Some(question), Some(request)) = (&task.question, &task.pending_request)
            && task.waiting_on.as_deref() == Some("shepherd")
        {
            let _ = write!(
                html,
                r#"<blockquote class="question">{q}</blockquote><form class="act" method="post" action="/act"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="kind" value="reply"><input type="hidden" name="agent" value="{id}"><input type="hidden" name="reply_to" value="{request}"><input name="text" class="reply" aria-label="Reply to {name}" placeholder="Reply" required autocomplete="off"><button>Reply</button></form>"#,
                q = esc(question),
                csrf = esc(csrf),
                id = esc(&id),
                request = esc(&request.to_string()),
                name = esc(&sheep.display_name),
            );
        }
    }
    if let Some(worktree) = &sheep.worktree {
        let _ = write!(
            html,
            r#"<p class="branch">on <code>{}</code>: reviewed and landed once closed</p>"#,
            esc(&worktree.branch)
        );
    }
    if sheep.task.is_none()
        && let Some(last) = last
    {
        html.push_str(&settled_line(last, root));
    }
    if let Some(error) = &sheep.error {
        let _ = write!(html, r#"<p class="error">{}</p>"#, esc(error));
    }
    if let Some(usage) = usage(sheep) {
        let _ = write!(html, r#"<p class="usage">{usage}</p>"#);
    }
    html.push_str("</article>");
    html
}

/// How a settled task ended, in one line: its outcome word and summary, its note, and the
/// branch it left to land (or where that landed).
pub(crate) fn settled_line(task: &SettledTask, root: &Path) -> String {
    let status = task.status.as_str();
    let mut html = format!(
        r#"<p class="outcome outcome-{status}"><span class="state state-{status}">{status}</span>"#
    );
    if let Some(outcome) = task.outcome.as_deref().filter(|o| !o.is_empty()) {
        let _ = write!(html, " {}", esc(outcome));
    }
    if let Some(url) = task.note.as_deref().and_then(|note| note_url(root, note)) {
        let _ = write!(html, r#" · <a href="{url}">note</a>"#);
    }
    if let Some(branch) = &task.branch {
        let said = match &task.landed {
            Some(landed) => format!("landed into {}", esc(landed)),
            None => "diff and land".to_owned(),
        };
        let _ = write!(
            html,
            r#" · <a class="branch" href="/branch/{url}">{said}</a>"#,
            url = path_url(branch)
        );
    }
    html.push_str("</p>");
    html
}

/// The most recent settled task of `sheep`, if the view lists one.
pub(crate) fn last_settled<'a>(
    view: &'a HerdResult,
    sheep: &SheepStatus,
) -> Option<&'a SettledTask> {
    view.settled.iter().find(|t| t.agent_id == sheep.agent_id)
}

/// The settled tasks of sheep no longer in the herd (closed), so their outcome and note stay
/// one click away.
fn closed(view: &HerdResult, root: &Path) -> String {
    let gone: Vec<&SettledTask> = view
        .settled
        .iter()
        .filter(|t| !view.sheep.iter().any(|s| s.agent_id == t.agent_id))
        .collect();
    if gone.is_empty() {
        return String::new();
    }
    let mut html = format!(
        r#"<section id="closed"><h2>closed sheep <span class="count">{}</span></h2><ul>"#,
        gone.len()
    );
    for task in gone {
        let _ = write!(
            html,
            r#"<li data-agent="{id}"><strong>{name}</strong> · {title}{line}</li>"#,
            id = esc(&task.agent_id.to_string()),
            name = esc(&task.display_name),
            title = esc(&task.title),
            line = settled_line(task, root),
        );
    }
    html.push_str("</ul></section>");
    html
}

/// The runs under way and the latest that ended, each a card with its steps: each step's
/// agent, where it is (queued, running, …) or how it ended, and its sheep's page while the
/// sheep is in the herd.
fn runs(view: &HerdResult) -> String {
    if view.runs.is_empty() {
        return String::new();
    }
    let mut html = format!(
        r#"<section id="runs"><h2>runs <span class="count">{}</span></h2>"#,
        view.runs.len()
    );
    for run in &view.runs {
        let done = run
            .steps
            .iter()
            .filter(|s| s.phase == shepherd_core::run::StepPhase::Done)
            .count();
        let state = match (&run.cancelled, run.finished) {
            (Some(_), _) => "cancelled",
            (None, true) => "over",
            (None, false) => "running",
        };
        let _ = write!(
            html,
            r#"<article class="run" data-run="{id}" data-state="{state}"><header><strong>{id}</strong> · {mode} · {done} of {total} done</header><ol class="steps">"#,
            id = esc(&run.run_id),
            mode = run.mode.as_str(),
            total = run.steps.len(),
        );
        for step in &run.steps {
            let word = step
                .status
                .map_or_else(|| step.phase.as_str(), |status| status.as_str());
            let in_herd = step
                .agent_id
                .as_deref()
                .filter(|id| view.sheep.iter().any(|s| s.agent_id.to_string() == *id));
            let agent = match in_herd {
                Some(id) => format!(
                    r#"<a href="/sheep/{}">{}</a>"#,
                    path_url(id),
                    esc(&step.agent)
                ),
                None => esc(&step.agent),
            };
            let _ = write!(
                html,
                r#"<li>{agent} <span class="state state-{word}">{word}</span></li>"#
            );
        }
        html.push_str("</ol></article>");
    }
    html.push_str("</section>");
    html
}

/// The totals line: sheep per state, settled tasks per outcome, tokens and cost.
fn totals(view: &HerdResult) -> String {
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for sheep in &view.sheep {
        *states.entry(shown_state(sheep)).or_default() += 1;
    }
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for task in &view.settled {
        *outcomes.entry(task.status.as_str().to_owned()).or_default() += 1;
    }
    let (tokens, cost) = view
        .sheep
        .iter()
        .filter_map(|sheep| sheep.usage.as_ref())
        .fold((0, 0.0), |(tokens, cost), usage| {
            (
                tokens + usage.tokens_in + usage.tokens_out,
                cost + usage.cost,
            )
        });
    let states: Vec<String> = states
        .iter()
        .map(|(state, count)| format!("{count} {state}"))
        .collect();
    let mut parts = vec![if states.is_empty() {
        "no sheep".to_owned()
    } else {
        format!("{} sheep: {}", view.sheep.len(), states.join(", "))
    }];
    let tasks: Vec<String> = outcomes
        .iter()
        .map(|(outcome, count)| format!("{count} {outcome}"))
        .collect();
    if !tasks.is_empty() {
        parts.push(format!("tasks: {}", tasks.join(", ")));
    }
    parts.push(format!("{tokens} tokens · ${cost:.2}"));
    format!(r#"<p id="totals">{}</p>"#, esc(&parts.join(" · ")))
}

/// The board cut into the pieces a change is sent by: the head (totals and the session's link),
/// each sheep's card in its column, in the herd's order, and the closed sheep's list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pieces {
    pub(crate) head: String,
    /// `(agent id, column, card)`.
    pub(crate) cards: Vec<(String, Column, String)>,
    pub(crate) runs: String,
    pub(crate) closed: String,
}

/// The board's pieces for `view`.
pub(crate) fn pieces(view: &HerdResult, csrf: &str, root: &Path) -> Pieces {
    let mut head = totals(view);
    if let Some(session) = &view.session {
        let _ = write!(
            head,
            r#"<p class="session">Fieldnotes: <a href="/files/{}/shepherd.md">{}</a></p>"#,
            path_url(&session.relative),
            esc(&session.name)
        );
    }
    let cards = view
        .sheep
        .iter()
        .map(|sheep| {
            (
                sheep.agent_id.to_string(),
                Column::of(sheep),
                card(sheep, last_settled(view, sheep), csrf, root),
            )
        })
        .collect();
    Pieces {
        head,
        cards,
        runs: runs(view),
        closed: closed(view, root),
    }
}

/// The board's live part, whole: the head, the four columns (each folds), the closed sheep;
/// `now` is the broker's clock the page's ages tick from.
pub(crate) fn assemble(pieces: &Pieces, now: i64) -> String {
    let mut html = format!(
        r#"<div class="board" data-now="{now}"><div id="head">{}</div><div class="columns">"#,
        pieces.head
    );
    for column in Column::ALL {
        let cards: Vec<&str> = pieces
            .cards
            .iter()
            .filter(|(_, c, _)| *c == column)
            .map(|(_, _, card)| card.as_str())
            .collect();
        let _ = write!(
            html,
            r#"<section class="column" id="{id}"><h2><button type="button" class="fold" aria-expanded="true">{title} <span class="count">{n}</span></button></h2><div class="cards">{cards}</div></section>"#,
            id = column.id(),
            title = column.title(),
            n = cards.len(),
            cards = cards.concat(),
        );
    }
    let _ = write!(
        html,
        r#"</div><div id="runs-list">{}</div><div id="closed-sheep">{}</div></div>"#,
        pieces.runs, pieces.closed
    );
    fill_ages(&html, now)
}

/// The board's live part for `view`, whole.
pub(crate) fn board(view: &HerdResult, csrf: &str, root: &Path) -> String {
    assemble(&pieces(view, csrf, root), view.now.unwrap_or_default())
}

#[cfg(test)]
#[path = "board/tests.rs"]
mod tests;
