//! The routes, and what ties them to the herd feed: each page is rendered from the latest pushed
//! view or from a file under the project; each live page opens an event stream that sends its
//! new HTML whenever the view changes (and, for a file, whenever the file does); `POST /act`
//! is the only route that changes anything. Every route sits behind [`guard::guard`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use shepherd_client::connect::Target;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::access::Access;
use crate::actions::{self, ActForm, Action};
use crate::feed::{self, Herd};
use crate::files::{self, Kind};
use crate::guard::{self, Keys};
use crate::html::{esc, path_url};
use crate::landing::{self, Landings};
use crate::once::{Done, Once};
use crate::pages::{self, Section};
use crate::{board, branch, notes, patch};

/// How often a file's page looks at its file again (on the server: the browser never polls).
const FILE_LOOK: Duration = Duration::from_millis(500);

/// The least time between two looks of a branch's page, each a `merge.preview` (git).
const BRANCH_GAP: Duration = Duration::from_secs(1);

/// An image's own policy: opened by itself (an SVG is a document then) it runs and loads
/// nothing, in a sandbox of its own.
const IMAGE_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/// The stylesheet, script, service worker and icons, compiled in.
const STYLE: &str = include_str!("../assets/style.css");
const SCRIPT: &str = include_str!("../assets/app.js");
const SERVICE_WORKER: &str = include_str!("../assets/sw.js");
const ICON_192: &[u8] = include_bytes!("../assets/icon-192.png");
const ICON_512: &[u8] = include_bytes!("../assets/icon-512.png");

/// What makes the board an installable app: its name, where it starts, its icons.
const MANIFEST: &str = r##"{"name":"shepherd","short_name":"shepherd","description":"The herd's board","start_url":"/","scope":"/","display":"standalone","background_color":"#f7f7f5","theme_color":"#1d1d1b","icons":[{"src":"/assets/icon-192.png","sizes":"192x192","type":"image/png","purpose":"any"},{"src":"/assets/icon-512.png","sizes":"512x512","type":"image/png","purpose":"any"}]}"##;

/// What every handler shares.
struct Shared {
    target: Target,
    root: PathBuf,
    keys: Arc<Keys>,
    herd: watch::Receiver<Herd>,
    /// The changes done so far, so none is done twice.
    once: Once,
    /// The landings started from here, followed until they are over.
    landings: Arc<Landings>,
}

/// The web server of one herd.
pub(crate) struct Server {
    shared: Arc<Shared>,
    listen: SocketAddr,
    feed: watch::Sender<Herd>,
}

impl Server {
    /// A server for `target`'s herd that will listen on `listen`, letting in whom `access`
    /// lets in.
    pub(crate) fn new(
        target: Target,
        listen: SocketAddr,
        access: Arc<Access>,
        serve_name: Option<String>,
    ) -> Self {
        let keys = Arc::new(Keys::new(access, serve_name));
        let (feed, herd) = watch::channel(Herd::Connecting);
        let root = target.address.project_root.clone();
        Self {
            shared: Arc::new(Shared {
                target,
                root,
                keys,
                herd,
                once: Once::default(),
                landings: Arc::new(Landings::new()),
            }),
            listen,
            feed,
        }
    }

    /// The URL to open first: the board's own name, with this start's one-time token.
    pub(crate) fn entry_url(&self) -> String {
        let keys = &self.shared.keys;
        format!(
            "http://{}:{}/?token={}",
            keys.host_name,
            self.listen.port(),
            keys.access.entry_token().unwrap_or_default()
        )
    }

    /// The URL to open at the `--serve-name`, through its HTTPS proxy, with the same token.
    pub(crate) fn served_url(&self) -> Option<String> {
        let keys = &self.shared.keys;
        let name = keys.serve_name.as_deref()?;
        Some(format!(
            "https://{name}/?token={}",
            keys.access.entry_token().unwrap_or_default()
        ))
    }

    /// Follows the herd and answers requests until the listener fails.
    pub(crate) async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        tokio::spawn(feed::follow(self.shared.target.clone(), self.feed));
        let keys = self.shared.keys.clone();
        let app = Router::new()
            .route("/", get(board_page))
            .route(pages::BOARD_EVENTS, get(board_events))
            .route("/sheep/{id}", get(sheep_page))
            .route("/events/sheep/{id}", get(sheep_events))
            .route("/notes", get(notes_page))
            .route("/files/{*path}", get(file_page))
            .route("/events/files/{*path}", get(file_events))
            .route("/branch/{*name}", get(branch_page))
            .route("/events/branch/{*name}", get(branch_events))
            .route("/act", post(act))
            .route("/assets/style.css", get(style))
            .route("/assets/app.js", get(script))
            .route("/assets/icon-192.png", get(icon_192))
            .route("/assets/icon-512.png", get(icon_512))
            .route("/manifest.webmanifest", get(manifest))
            .route("/sw.js", get(service_worker))
            .fallback(not_found)
            .with_state(self.shared)
            .layer(axum::middleware::from_fn_with_state(keys, guard::guard));
        axum::serve(listener, app).await
    }
}

type Shares = State<Arc<Shared>>;

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "no such page\n").into_response()
}

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

async fn icon_192() -> Response {
    ([(header::CONTENT_TYPE, "image/png")], ICON_192).into_response()
}

async fn icon_512() -> Response {
    ([(header::CONTENT_TYPE, "image/png")], ICON_512).into_response()
}

async fn manifest() -> Response {
    (
        [(header::CONTENT_TYPE, "application/manifest+json")],
        MANIFEST,
    )
        .into_response()
}

async fn service_worker() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SERVICE_WORKER,
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// What a page says while there is no view.
fn no_view(herd: &Herd) -> String {
    match herd {
        Herd::Connecting => "<p class=\"waiting\">Reaching the herd…</p>".to_owned(),
        Herd::Unreachable(why) => format!(
            "<p class=\"error\" data-herd=\"unreachable\">The broker cannot be reached: {}. Still trying.</p>",
            esc(why)
        ),
        Herd::View(_) => String::new(),
    }
}

fn board_html(herd: &Herd, csrf: &str, root: &std::path::Path) -> String {
    match herd {
        Herd::View(view) => board::board(view, csrf, root),
        other => no_view(other),
    }
}

/// When a live page looks again, besides at every pushed herd view.
#[derive(Debug, Default)]
struct Wakes {
    /// That often, too.
    look: Option<Duration>,
    /// At every change this tells of.
    also: Option<watch::Receiver<u64>>,
    /// Never sooner than this after it last looked: for a page whose rendering runs git, which
    /// a busy herd's pushes would otherwise run many times a second.
    gap: Option<Duration>,
}

/// An event stream that sends `render`'s HTML at once and again whenever it changes; it looks
/// again when `wakes` says.
fn live<F, Fut>(shared: &Shared, mut render: F, wakes: Wakes) -> Response
where
    F: FnMut(Herd) -> Fut + Send + 'static,
    Fut: Future<Output = String> + Send,
{
    let (events, stream) = mpsc::channel::<Result<Event, Infallible>>(4);
    let mut herd = shared.herd.clone();
    let Wakes { look, also, gap } = wakes;
    // Without `also`, a sender nobody keeps: its receiver never reports a change.
    let mut also = also.unwrap_or_else(|| watch::channel(0).1);
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let current = herd.borrow_and_update().clone();
            let html = render(current).await;
            if last.as_ref() != Some(&html) {
                let event = Event::default().event("html").data(&html);
                if events.send(Ok(event)).await.is_err() {
                    return;
                }
                last = Some(html);
            }
            if let Some(gap) = gap {
                tokio::select! {
                    () = tokio::time::sleep(gap) => {}
                    () = events.closed() => return,
                }
            }
            tokio::select! {
                changed = herd.changed() => if changed.is_err() { return },
                Ok(()) = also.changed() => {}
                () = events.closed() => return,
                () = tokio::time::sleep(look.unwrap_or(Duration::from_secs(3600))), if look.is_some() => {}
            }
        }
    });
    Sse::new(ReceiverStream::new(stream))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn board_page(State(shared): Shares) -> Html<String> {
    let body = board_html(&shared.herd.borrow(), &shared.keys.csrf, &shared.root);
    Html(pages::shell(
        "Board",
        Section::Board,
        &shared.keys.csrf,
        Some(pages::BOARD_EVENTS),
        &body,
    ))
}

/// The board's stream: the whole board first (or what stands in for it while there is no
/// herd), then, while there is one, a `patch` event per change carrying only what changed
/// ([`patch::diff`]).
async fn board_events(State(shared): Shares) -> Response {
    let (events, stream) = mpsc::channel::<Result<Event, Infallible>>(4);
    let mut herd = shared.herd.clone();
    tokio::spawn(async move {
        // What the page holds: the board's pieces, or the HTML shown instead of a board.
        let mut shown_pieces: Option<board::Pieces> = None;
        let mut shown_html: Option<String> = None;
        loop {
            let current = herd.borrow_and_update().clone();
            let event = match &current {
                Herd::View(view) => {
                    let pieces = board::pieces(view, &shared.keys.csrf, &shared.root);
                    let now = view.now.unwrap_or_default();
                    let event = match &shown_pieces {
                        Some(old) => patch::diff(old, &pieces, now).map(|patch| {
                            Event::default()
                                .event("patch")
                                .data(serde_json::to_string(&patch).unwrap_or_default())
                        }),
                        None => Some(
                            Event::default()
                                .event("html")
                                .data(board::assemble(&pieces, now)),
                        ),
                    };
                    shown_pieces = Some(pieces);
                    shown_html = None;
                    event
                }
                other => {
                    let html = no_view(other);
                    shown_pieces = None;
                    (shown_html.as_ref() != Some(&html)).then(|| {
                        shown_html = Some(html.clone());
                        Event::default().event("html").data(html)
                    })
                }
            };
            if let Some(event) = event
                && events.send(Ok(event)).await.is_err()
            {
                return;
            }
            tokio::select! {
                changed = herd.changed() => if changed.is_err() { return },
                () = events.closed() => return,
            }
        }
    });
    Sse::new(ReceiverStream::new(stream))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A sheep's page body, reading its output from the broker.
async fn sheep_html(shared: Arc<Shared>, herd: Herd, id: String) -> Option<String> {
    let Herd::View(view) = &herd else {
        return Some(no_view(&herd));
    };
    view.sheep.iter().find(|s| s.agent_id.to_string() == id)?;
    let (receipts, output) = actions::inspect(&shared.target, &id).await;
    pages::sheep_body(
        &shared.root,
        view,
        &id,
        &receipts,
        &output,
        &shared.keys.csrf,
    )
}

async fn sheep_page(State(shared): Shares, Path(id): Path<String>) -> Response {
    let herd = shared.herd.borrow().clone();
    let Some(body) = sheep_html(shared.clone(), herd, id.clone()).await else {
        return (StatusCode::NOT_FOUND, "no such sheep in this herd\n").into_response();
    };
    let live = format!("/events/sheep/{}", path_url(&id));
    Html(pages::shell(
        &id,
        Section::Board,
        &shared.keys.csrf,
        Some(&live),
        &body,
    ))
    .into_response()
}

async fn sheep_events(State(shared): Shares, Path(id): Path<String>) -> Response {
    let again = shared.clone();
    live(
        &shared,
        move |herd| {
            let shared = again.clone();
            let id = id.clone();
            async move {
                sheep_html(shared, herd, id)
                    .await
                    .unwrap_or_else(|| "<p>This sheep has left the herd.</p>".to_owned())
            }
        },
        Wakes::default(),
    )
}

/// A branch's page body: the broker's preview of landing it, the landing started here if any.
async fn branch_html(shared: &Shared, name: &str) -> String {
    let preview = landing::preview(&shared.target, name).await;
    let merge = shared.landings.of(name);
    let check = shared.landings.last_check();
    branch::branch_body(
        name,
        preview.as_ref().map_err(|err| err.message.as_str()),
        merge.as_ref(),
        check.as_deref(),
        &shared.keys.csrf,
    )
}

async fn branch_page(State(shared): Shares, Path(name): Path<String>) -> Response {
    let body = branch_html(&shared, &name).await;
    let live = format!("/events/branch/{}", path_url(&name));
    Html(pages::shell(
        &name,
        Section::Board,
        &shared.keys.csrf,
        Some(&live),
        &body,
    ))
    .into_response()
}

async fn branch_events(State(shared): Shares, Path(name): Path<String>) -> Response {
    let again = shared.clone();
    let also = shared.landings.watch();
    live(
        &shared,
        move |_| {
            let shared = again.clone();
            let name = name.clone();
            async move { branch_html(&shared, &name).await }
        },
        Wakes {
            also: Some(also),
            gap: Some(BRANCH_GAP),
            ..Wakes::default()
        },
    )
}

async fn notes_page(State(shared): Shares) -> Html<String> {
    let body = pages::sessions_body(&pages::sessions(&shared.root));
    Html(pages::shell(
        "Fieldnotes",
        Section::Notes,
        &shared.keys.csrf,
        None,
        &body,
    ))
}

/// A Markdown file's page body, or `None` when it is not (or no longer) there.
fn markdown_html(shared: &Shared, path: &str) -> Option<String> {
    let file = files::resolve(&shared.root, path)?;
    let text = fs_err::read_to_string(&file).ok()?;
    Some(format!(
        r#"<p class="path">{}</p><article class="note">{}</article>"#,
        esc(path),
        notes::render(&text)
    ))
}

async fn file_page(State(shared): Shares, Path(path): Path<String>) -> Response {
    let Some(file) = files::resolve(&shared.root, &path) else {
        return not_found().await;
    };
    match Kind::of(&file) {
        Kind::Markdown => {
            let Some(body) = markdown_html(&shared, &path) else {
                return not_found().await;
            };
            let live = format!("/events/files/{}", path_url(&path));
            let title = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Html(pages::shell(
                &title,
                Section::Notes,
                &shared.keys.csrf,
                Some(&live),
                &body,
            ))
            .into_response()
        }
        Kind::Image(mime) => match fs_err::read(&file) {
            Ok(bytes) => (
                [
                    (header::CONTENT_TYPE, mime),
                    (header::CONTENT_SECURITY_POLICY, IMAGE_POLICY),
                ],
                bytes,
            )
                .into_response(),
            Err(_) => not_found().await,
        },
        Kind::Text => match fs_err::read(&file) {
            Ok(bytes) => {
                ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], bytes).into_response()
            }
            Err(_) => not_found().await,
        },
    }
}

async fn file_events(State(shared): Shares, Path(path): Path<String>) -> Response {
    let markdown =
        files::resolve(&shared.root, &path).is_some_and(|f| Kind::of(&f) == Kind::Markdown);
    if !markdown {
        return not_found().await;
    }
    let again = shared.clone();
    live(
        &shared,
        move |_| {
            let html = markdown_html(&again, &path)
                .unwrap_or_else(|| "<p>This file is gone.</p>".to_owned());
            async move { html }
        },
        Wakes {
            look: Some(FILE_LOOK),
            ..Wakes::default()
        },
    )
}

/// Whether the question `reply_to` of sheep `agent` is no longer open in the herd's view (when
/// there is one: without it the broker decides).
fn answered_already(herd: &Herd, agent: &str, reply_to: &str) -> bool {
    let Herd::View(view) = herd else {
        return false;
    };
    view.sheep
        .iter()
        .find(|s| s.agent_id.to_string() == agent)
        .is_some_and(|sheep| {
            sheep
                .task
                .as_ref()
                .and_then(|t| t.pending_request.as_ref())
                .is_none_or(|open| open.to_string() != reply_to)
        })
}

async fn act(State(shared): Shares, Form(form): Form<ActForm>) -> Response {
    let action = match Action::from_form(&form) {
        Ok(action) => action,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let key = match (&action, form.once.as_deref()) {
        (Action::Reply { reply_to, .. }, _) => format!("reply {reply_to}"),
        (_, Some(once)) if !once.is_empty() && once.len() <= 64 => format!("once {once}"),
        (_, _) => {
            return (
                StatusCode::BAD_REQUEST,
                "a change needs its `once` value (1 to 64 characters), which the page gives each form it sends",
            )
                .into_response();
        }
    };
    let reply = matches!(action, Action::Reply { .. });
    if let Action::Reply { reply_to, .. } = &action
        && answered_already(&shared.herd.borrow(), &form.agent, reply_to)
    {
        return format!("{}'s question was already answered", form.agent).into_response();
    }
    let target = shared.target.clone();
    let landings = shared.landings.clone();
    let agent = form.agent.clone();
    let done = shared
        .once
        .run(&key, || async move {
            actions::perform(&target, &landings, &agent, action).await
        })
        .await;
    match done {
        Ok(Done {
            said,
            repeat: false,
        }) => said.into_response(),
        Ok(Done { said, repeat: true }) if reply => {
            format!("{}'s question was already answered ({said})", form.agent).into_response()
        }
        Ok(Done { said, repeat: true }) => format!("already done: {said}").into_response(),
        Err(err) => (StatusCode::CONFLICT, err.message).into_response(),
    }
}
