//! The desktop's notifications: the freedesktop notification server on the user's session bus
//! (what GNOME, KDE, dunst, mako and the others serve). A notification's default action opens
//! its board page with `xdg-open`.
//!
//! The session bus is the one the broker's environment names (`DBUS_SESSION_BUS_ADDRESS`, as
//! the first `shepherd` of the herd had it). The sheep's words stay on the machine, so the
//! desktop shows them; a server that reads markup gets them escaped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use zbus::zvariant::Value;

use shepherd_core::herd::needs::NeedKind;

use crate::notice::Notice;

/// The name the notifications are sent under.
const APP_NAME: &str = "Shepherd";
/// The default action's key, as the specification names it.
const DEFAULT_ACTION: &str = "default";

#[zbus::proxy(
    interface = "org.freedesktop.Notifications",
    default_service = "org.freedesktop.Notifications",
    default_path = "/org/freedesktop/Notifications"
)]
trait Notifications {
    /// Shows a notification; returns its id.
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: &str,
        replaces_id: u32,
        app_icon: &str,
        summary: &str,
        body: &str,
        actions: &[&str],
        hints: HashMap<&str, Value<'_>>,
        expire_timeout: i32,
    ) -> zbus::Result<u32>;

    /// What the server can do (`actions`, `body-markup`, …).
    fn get_capabilities(&self) -> zbus::Result<Vec<String>>;

    /// A person chose an action of a notification.
    #[zbus(signal)]
    fn action_invoked(&self, id: u32, action_key: String) -> zbus::Result<()>;
}

/// A desktop notification that could not be shown.
#[derive(Debug, thiserror::Error)]
#[error("the desktop's notification server could not be reached: {0}")]
pub struct DesktopError(#[from] zbus::Error);

/// The user's notification server.
pub struct Desktop {
    proxy: NotificationsProxy<'static>,
    markup: bool,
    /// Each shown notification's board page, by its id, for its action.
    links: Arc<Mutex<HashMap<u32, String>>>,
}

impl Desktop {
    /// Connects to the notification server on the session bus and starts opening the board
    /// page of each notification it shows whose default action is chosen. (A server tells the
    /// action to the connection that showed the notification, so the notifications of a broker
    /// that was killed open nothing; their bodies carry the link.)
    ///
    /// # Errors
    /// When there is no session bus or no notification server on it.
    pub async fn connect() -> Result<Self, DesktopError> {
        let connection = zbus::Connection::session().await?;
        let proxy = NotificationsProxy::new(&connection).await?;
        let capabilities = proxy.get_capabilities().await?;
        let desktop = Self {
            markup: capabilities.iter().any(|c| c == "body-markup"),
            proxy,
            links: Arc::default(),
        };
        desktop.open_chosen_links().await?;
        Ok(desktop)
    }

    /// Shows `notice`; returns the server's id for it.
    ///
    /// # Errors
    /// When the server does not answer.
    pub async fn send(&self, notice: &Notice) -> Result<u32, DesktopError> {
        let body = notice.body(true);
        let body = if self.markup {
            escape_markup(&body)
        } else {
            body
        };
        let actions: Vec<&str> = match notice.link {
            Some(_) => vec![DEFAULT_ACTION, "Open the board"],
            None => Vec::new(),
        };
        // A question waits on the person: it stays until it is seen (critical), the rest come and go.
        let urgency = if notice.kind == Some(NeedKind::Question) {
            2
        } else {
            1
        };
        let hints = HashMap::from([("urgency", Value::U8(urgency))]);
        let id = self
            .proxy
            .notify(APP_NAME, 0, "", &notice.title, &body, &actions, hints, -1)
            .await?;
        if let Some(link) = &notice.link {
            self.links
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id, link.clone());
        }
        Ok(id)
    }

    async fn open_chosen_links(&self) -> Result<(), DesktopError> {
        use futures_util::StreamExt as _;
        let mut chosen = self.proxy.receive_action_invoked().await?;
        let links = self.links.clone();
        tokio::spawn(async move {
            while let Some(signal) = chosen.next().await {
                let Ok(args) = signal.args() else { continue };
                if args.action_key != DEFAULT_ACTION {
                    continue;
                }
                let link = links
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(&args.id)
                    .cloned();
                if let Some(link) = link {
                    crate::open::in_browser(&link).await;
                }
            }
        });
        Ok(())
    }
}

/// The specification's markup reads `&`, `<` and `>`.
fn escape_markup(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
