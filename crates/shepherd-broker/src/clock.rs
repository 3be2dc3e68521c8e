//! The broker's clock, as a dependency: real time in production, a hand-advanced clock in tests,
//! so deadline, stale-wait and nudge rules are tested by moving time instead of waiting it out.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;

/// A future the clock resolves at an instant.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Time as the broker sees it, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now_ms(&self) -> i64;
    /// Resolves once the clock reads `at_ms` or later.
    fn sleep_until(&self, at_ms: i64) -> Sleep;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        shepherd_core::time::millis(shepherd_core::time::Timestamp::now())
    }

    fn sleep_until(&self, at_ms: i64) -> Sleep {
        let wait = at_ms.saturating_sub(self.now_ms()).max(0);
        let wait = u64::try_from(wait).unwrap_or(0);
        Box::pin(tokio::time::sleep(std::time::Duration::from_millis(wait)))
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<watch::Sender<i64>>,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: i64) -> Self {
        Self {
            now: Arc::new(watch::Sender::new(start_ms)),
        }
    }

    /// Moves the clock forward by `ms`, waking every sleeper whose instant has come.
    pub fn advance(&self, ms: i64) {
        self.now.send_modify(|now| *now += ms);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        *self.now.borrow()
    }

    fn sleep_until(&self, at_ms: i64) -> Sleep {
        let mut rx = self.now.subscribe();
        Box::pin(async move {
            // A dropped sender would mean the clock is gone; then nothing will ever wake us,
            // which is what a stopped clock means.
            let _stopped = rx.wait_for(|now| *now >= at_ms).await;
        })
    }
}
