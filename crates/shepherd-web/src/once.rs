//! Each change the page asks for is done at most once, however often it is sent: a double
//! click, a retry after a lost answer, two tabs replying to the same question.
//!
//! A change has a key: a reply's is the question it answers (so any second reply to it, from
//! any tab, is "already answered"); a message's or a close's is the `once` value the page
//! gives the form when it is first sent and keeps until it succeeds. The first request with a
//! key does the change; one arriving while it runs waits for it; one arriving after it gets
//! what it said, marked as a repeat. A change that failed is forgotten, so it can be tried
//! again. The keys live as long as the server, the most recent [`KEPT`] of them.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

/// How many done changes are remembered.
pub(crate) const KEPT: usize = 4096;

/// What a done change said, and whether this request is the one that did it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) said: String,
    pub(crate) repeat: bool,
}

#[derive(Debug, Default)]
struct Kept {
    cells: HashMap<String, Arc<OnceCell<String>>>,
    order: VecDeque<String>,
}

/// The changes done so far.
#[derive(Debug, Default)]
pub(crate) struct Once {
    kept: Mutex<Kept>,
}

impl Once {
    fn cell(&self, key: &str) -> Arc<OnceCell<String>> {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cell) = kept.cells.get(key) {
            return cell.clone();
        }
        let cell = Arc::new(OnceCell::new());
        kept.cells.insert(key.to_owned(), cell.clone());
        kept.order.push_back(key.to_owned());
        while kept.order.len() > KEPT {
            if let Some(oldest) = kept.order.pop_front() {
                kept.cells.remove(&oldest);
            }
        }
        cell
    }

    /// Does `change` unless a change with `key` was done already (or is being done: then
    /// waits for it).
    pub(crate) async fn run<E, F, Fut>(&self, key: &str, change: F) -> Result<Done, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, E>>,
    {
        let cell = self.cell(key);
        let mut did = false;
        let said = cell
            .get_or_try_init(|| {
                did = true;
                change()
            })
            .await?;
        Ok(Done {
            said: said.clone(),
            repeat: !did,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_key_is_done_once_and_a_repeat_gets_what_it_said() {
        runtime().block_on(async {
            let once = Once::default();
            let done = AtomicUsize::new(0);
            let change = || async {
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("sent".to_owned())
            };
            let first = once.run("k", change).await.unwrap();
            let again = once.run("k", change).await.unwrap();
            let other = once.run("j", change).await.unwrap();
            assert_eq!(
                first,
                Done {
                    said: "sent".into(),
                    repeat: false
                }
            );
            assert_eq!(
                again,
                Done {
                    said: "sent".into(),
                    repeat: true
                }
            );
            assert!(!other.repeat);
            assert_eq!(done.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn requests_at_the_same_moment_do_it_once() {
        runtime().block_on(async {
            let once = Once::default();
            let done = AtomicUsize::new(0);
            let (go, wait) = tokio::sync::oneshot::channel::<()>();
            let slow = async {
                once.run("k", || async {
                    done.fetch_add(1, Ordering::SeqCst);
                    let _ = wait.await;
                    Ok::<_, String>("sent".to_owned())
                })
                .await
            };
            let second = async {
                tokio::task::yield_now().await;
                let result = once.run("k", || async {
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>("twice".to_owned())
                });
                let _ = go.send(());
                result.await
            };
            let (a, b) = tokio::join!(slow, second);
            assert_eq!(a.unwrap().said, "sent");
            assert_eq!(
                b.unwrap(),
                Done {
                    said: "sent".into(),
                    repeat: true
                }
            );
            assert_eq!(done.load(Ordering::SeqCst), 1);
        });
    }

    #[test]
    fn a_failed_change_can_be_tried_again() {
        runtime().block_on(async {
            let once = Once::default();
            let failed = once
                .run("k", || async { Err::<String, _>("broker down") })
                .await;
            assert_eq!(failed, Err("broker down"));
            let retried = once
                .run("k", || async { Ok::<_, &str>("sent".to_owned()) })
                .await
                .unwrap();
            assert!(!retried.repeat);
        });
    }

    #[test]
    fn only_the_most_recent_keys_are_kept() {
        runtime().block_on(async {
            let once = Once::default();
            for n in 0..=KEPT {
                once.run(&n.to_string(), || async { Ok::<_, ()>(String::new()) })
                    .await
                    .unwrap();
            }
            let oldest = once
                .run("0", || async { Ok::<_, ()>(String::new()) })
                .await
                .unwrap();
            assert!(!oldest.repeat, "the oldest key was let go");
        });
    }
}
