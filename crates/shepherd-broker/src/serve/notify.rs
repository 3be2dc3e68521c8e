//! The broker's notifier: it reads what needs the person off the herd after every change (and
//! when a limit comes to have lasted, or a held notification's window opens) and tells them on
//! the channels their user settings name, each moment once (see `shepherd_notify::ledger`).
//!
//! It lives in the broker, not in a page: the herd calls the person whether or not a board or
//! a terminal is open. With no channel set it reads nothing and writes nothing. A channel that
//! fails is logged and the moment counts as told: a notification is worth trying, not worth
//! stalling the herd's other news for.

use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::needs::{self, Need};
use shepherd_core::settings::EffectiveSettings;
use shepherd_notify::desktop::Desktop;
use shepherd_notify::webhook::Webhook;
use shepherd_notify::{Ledger, Notice};

use crate::state::broker::Broker;

/// The shortest time between two looks at the herd: a burst of commits is one look.
const COALESCE: Duration = Duration::from_millis(100);
/// How long after a failed connection to the notification server the next try waits (ms).
const DESKTOP_RETRY_MS: i64 = 60_000;
/// The longest a notification server may take to connect or to show one notification: one
/// that hangs must not hold the herd's later news.
const DESKTOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The channels the user's settings name now.
struct Channels {
    desktop: bool,
    webhook: Option<Webhook>,
}

impl Channels {
    fn of(settings: &EffectiveSettings) -> Self {
        Self {
            desktop: settings.notify_desktop,
            webhook: settings.notify_webhook.as_deref().map(|url| {
                Webhook::new(url, settings.notify_webhook_format, settings.notify_words)
            }),
        }
    }

    fn any(&self) -> bool {
        self.desktop || self.webhook.is_some()
    }
}

/// The desktop connection, made when first needed and again after a failure.
#[derive(Default)]
struct DesktopLink {
    desktop: Option<Desktop>,
    next_try_ms: i64,
}

impl DesktopLink {
    async fn get(&mut self, now: i64) -> Option<&Desktop> {
        if self.desktop.is_none() && now >= self.next_try_ms {
            match tokio::time::timeout(DESKTOP_TIMEOUT, Desktop::connect()).await {
                Ok(Ok(desktop)) => self.desktop = Some(desktop),
                Err(_) => {
                    tracing::warn!(
                        "no desktop notifications: the notification server did not answer"
                    );
                    self.next_try_ms = now + DESKTOP_RETRY_MS;
                }
                Ok(Err(err)) => {
                    tracing::warn!(%err, "no desktop notifications");
                    self.next_try_ms = now + DESKTOP_RETRY_MS;
                }
            }
        }
        self.desktop.as_ref()
    }
}

/// Runs until the broker shuts down.
pub(super) async fn notify_loop(broker: Arc<Broker>) {
    let mut generation = broker.store.generation.subscribe();
    let state_dir = broker.config.paths.state_dir.clone();
    let mut ledger: Option<Ledger> = None;
    let mut desktop = DesktopLink::default();
    loop {
        generation.borrow_and_update();
        let now = broker.store.clock.now_ms();
        let channels = Channels::of(&broker.config.settings());
        let mut wake_at = None;
        if channels.any() {
            let found = broker.store.read(|herd| needs::needs(herd, now));
            let ledger = ledger.get_or_insert_with(|| Ledger::open(&state_dir));
            let plan = ledger.plan(&found, now);
            wake_at = plan.retry_at;
            if !plan.is_empty() {
                let board = shepherd_notify::board::url(&state_dir);
                let notices = notices(&plan.single, &plan.folded, board.as_deref());
                for notice in &notices {
                    tell(&channels, &mut desktop, notice, now).await;
                }
                if let Err(err) = ledger.save() {
                    tracing::warn!(%err, "the notification ledger could not be saved");
                }
            }
            let due = broker.store.read(|herd| needs::next_due(herd, now));
            wake_at = [wake_at, due].into_iter().flatten().min();
        }
        let wake = wake_at.map(|at| broker.store.clock.sleep_until(at));
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            changed = generation.changed() => if changed.is_err() { return },
            () = async { match wake { Some(wake) => wake.await, None => std::future::pending().await } } => {}
        }
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            () = tokio::time::sleep(COALESCE) => {}
        }
    }
}

fn notices(single: &[Need], folded: &[Need], board: Option<&str>) -> Vec<Notice> {
    let mut notices: Vec<Notice> = single.iter().map(|n| Notice::of(n, board)).collect();
    if !folded.is_empty() {
        notices.push(Notice::summary(folded, board));
    }
    notices
}

/// Sends `notice` on every channel the settings name.
async fn tell(channels: &Channels, desktop: &mut DesktopLink, notice: &Notice, now: i64) {
    tracing::info!(key = %notice.key, "telling the person: {}", notice.title);
    if channels.desktop
        && let Some(server) = desktop.get(now).await
    {
        match tokio::time::timeout(DESKTOP_TIMEOUT, server.send(notice)).await {
            Ok(Ok(_id)) => {}
            Ok(Err(err)) => {
                tracing::warn!(%err, "a desktop notification failed");
                desktop.desktop = None;
            }
            Err(_) => {
                tracing::warn!("a desktop notification timed out");
                desktop.desktop = None;
            }
        }
    }
    if let Some(webhook) = &channels.webhook
        && let Err(err) = webhook.send(notice).await
    {
        tracing::warn!(%err, "a webhook post failed");
    }
}
