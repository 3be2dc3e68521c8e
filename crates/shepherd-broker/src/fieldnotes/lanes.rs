//! One lane per session, a bounded pool of committers: sessions commit in parallel, each
//! session's writes stay in order and are committed in groups.
//!
//! A job for a session joins that session's lane. A lane with jobs is *ready*; a committer
//! thread takes the oldest ready lane, takes every job waiting in it, and hands them to the
//! batch function as one group (one store commit); jobs that arrive meanwhile wait in the lane
//! for its next group, which goes to the back of the ready queue so every session gets its
//! turn. A lane is never in two committers' hands at once, so one session's commits happen one
//! after another and in arrival order, while different sessions' commits (and their disk
//! flushes) overlap, at most [`MAX_COMMITTERS`] at a time. Committer threads are started as
//! work needs them, up to that bound, and end when the last handle of the pool is dropped
//! (after the work already queued).
//!
//! A group's commit may put off something it owes its session (the broker's committer puts off
//! `shepherd.md` for a group that makes no note final): the batch function then answers with
//! how long it may wait, and unless another group of that session comes first (and pays the
//! debt with its own commit), the lane is given the pool's catch-up job once that time is up.
//! A debt's time is set by the first group that ran it up, so a busy session is caught up at
//! least that often. Nothing waits on a timer while no debt is owed, so an idle pool sleeps.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How many sessions may commit at once. Commits wait mostly on the disk, so this can exceed
/// the number of cores; it bounds the threads and the flushes in flight.
pub(crate) const MAX_COMMITTERS: usize = 8;

/// What a committer does with one group of jobs of one session: commits them and says how
/// long the session may wait to be caught up, if the commit put something off.
type Batch<J> = dyn Fn(&str, Vec<J>) -> Option<Duration> + Send + Sync;

/// The lanes and their committers. Dropping the last clone lets the committers finish and end.
pub(crate) struct Lanes<J: Send + 'static> {
    shared: Arc<Shared<J>>,
    _stop: Arc<StopOnDrop<J>>,
}

impl<J: Send + 'static> Clone for Lanes<J> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            _stop: Arc::clone(&self._stop),
        }
    }
}

struct Shared<J> {
    state: Mutex<State<J>>,
    wake: Condvar,
    batch: Box<Batch<J>>,
    /// The job that catches a session up on what an earlier group put off.
    catch_up: Box<dyn Fn() -> J + Send + Sync>,
    max: usize,
}

struct State<J> {
    /// Jobs waiting, per session.
    waiting: HashMap<String, Vec<J>>,
    /// Sessions that are ready or in a committer's hands.
    scheduled: HashSet<String>,
    /// Ready sessions, oldest first.
    ready: VecDeque<String>,
    /// Sessions owed a catch-up, and when it is due.
    owed: HashMap<String, Instant>,
    threads: usize,
    idle: usize,
    stopping: bool,
}

struct StopOnDrop<J>(Arc<Shared<J>>);

impl<J> Drop for StopOnDrop<J> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().expect("lanes lock");
        state.stopping = true;
        drop(state);
        self.0.wake.notify_all();
    }
}

impl<J: Send + 'static> Lanes<J> {
    /// Lanes whose groups are committed by `batch`, at most `max` at a time; a session a group
    /// left owing is given `catch_up()` when its time is up.
    pub(crate) fn new(
        max: usize,
        batch: impl Fn(&str, Vec<J>) -> Option<Duration> + Send + Sync + 'static,
        catch_up: impl Fn() -> J + Send + Sync + 'static,
    ) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                waiting: HashMap::new(),
                scheduled: HashSet::new(),
                ready: VecDeque::new(),
                owed: HashMap::new(),
                threads: 0,
                idle: 0,
                stopping: false,
            }),
            wake: Condvar::new(),
            batch: Box::new(batch),
            catch_up: Box::new(catch_up),
            max: max.max(1),
        });
        Self {
            _stop: Arc::new(StopOnDrop(Arc::clone(&shared))),
            shared,
        }
    }

    /// Takes every session owed a catch-up off the timer, to be caught up by the caller now
    /// (on an orderly stop).
    pub(crate) fn take_owed(&self) -> Vec<String> {
        let mut state = self.shared.state.lock().expect("lanes lock");
        state.owed.drain().map(|(session, _)| session).collect()
    }

    /// Adds `job` to the lane of `session`.
    pub(crate) fn submit(&self, session: &str, job: J) {
        let mut state = self.shared.state.lock().expect("lanes lock");
        state
            .waiting
            .entry(session.to_owned())
            .or_default()
            .push(job);
        if !state.scheduled.insert(session.to_owned()) {
            // Ready already, or being committed: its committer takes the job next.
            return;
        }
        state.ready.push_back(session.to_owned());
        if state.idle > 0 {
            drop(state);
            self.shared.wake.notify_one();
        } else if state.threads < self.shared.max {
            state.threads += 1;
            let number = state.threads;
            drop(state);
            let shared = Arc::clone(&self.shared);
            let started = std::thread::Builder::new()
                .name(format!("fieldnotes-{number}"))
                .spawn(move || commit_lanes(&shared));
            if let Err(err) = started {
                // The lane stays ready for the committers there are.
                tracing::error!("could not start a fieldnotes committer: {err}");
                self.shared.state.lock().expect("lanes lock").threads -= 1;
            }
        }
    }
}

/// A committer: takes ready lanes until the pool stops and nothing is left.
fn commit_lanes<J>(shared: &Shared<J>) {
    let mut state = shared.state.lock().expect("lanes lock");
    loop {
        if let Some(session) = state.ready.pop_front() {
            let jobs = state.waiting.remove(&session).unwrap_or_default();
            drop(state);
            let owes = (shared.batch)(&session, jobs);
            state = shared.state.lock().expect("lanes lock");
            match owes {
                // The first debt sets the time: a busy session is still caught up that often.
                Some(wait) => {
                    state
                        .owed
                        .entry(session.clone())
                        .or_insert_with(|| Instant::now() + wait);
                }
                None => {
                    state.owed.remove(&session);
                }
            }
            if state.waiting.contains_key(&session) {
                state.ready.push_back(session);
            } else {
                state.scheduled.remove(&session);
            }
            continue;
        }
        let now = Instant::now();
        let due: Vec<String> = state
            .owed
            .iter()
            .filter(|(_, at)| state.stopping || **at <= now)
            .map(|(session, _)| session.clone())
            .collect();
        if !due.is_empty() {
            for session in due {
                state.owed.remove(&session);
                state
                    .waiting
                    .entry(session.clone())
                    .or_default()
                    .push((shared.catch_up)());
                if state.scheduled.insert(session.clone()) {
                    state.ready.push_back(session);
                }
            }
            continue;
        }
        if state.stopping {
            state.threads -= 1;
            return;
        }
        state.idle += 1;
        // Sleep until woken, or until the next debt is due: no timer while none is owed.
        let next = state.owed.values().min().copied();
        state = match next {
            Some(at) => {
                let wait = at.saturating_duration_since(Instant::now());
                shared.wake.wait_timeout(state, wait).expect("lanes lock").0
            }
            None => shared.wake.wait(state).expect("lanes lock"),
        };
        state.idle -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    const WAIT: Duration = Duration::from_secs(30);

    #[test]
    fn one_sessions_jobs_are_grouped_in_order_while_sessions_overlap() {
        // A committer blocks in session `a` until told; meanwhile `b` commits, and `a`'s later
        // jobs wait for `a`'s next group, in order.
        let (groups_tx, groups) = mpsc::channel::<(String, Vec<u32>)>();
        let (release_tx, release) = mpsc::channel::<()>();
        let release = Mutex::new(release);
        let lanes = Lanes::new(
            4,
            move |session: &str, jobs: Vec<u32>| {
                if session == "a" && jobs == [1] {
                    release.lock().unwrap().recv_timeout(WAIT).unwrap();
                }
                groups_tx.send((session.to_owned(), jobs)).unwrap();
                None
            },
            || 0,
        );
        lanes.submit("a", 1);
        lanes.submit("b", 10);
        assert_eq!(
            groups.recv_timeout(WAIT).unwrap(),
            ("b".to_owned(), vec![10])
        );
        lanes.submit("a", 2);
        lanes.submit("a", 3);
        release_tx.send(()).unwrap();
        assert_eq!(
            groups.recv_timeout(WAIT).unwrap(),
            ("a".to_owned(), vec![1])
        );
        assert_eq!(
            groups.recv_timeout(WAIT).unwrap(),
            ("a".to_owned(), vec![2, 3])
        );
    }

    #[test]
    fn no_more_than_the_bound_commit_at_once_and_all_finish() {
        let busy = Arc::new(Mutex::new((0usize, 0usize)));
        let (done_tx, done) = mpsc::channel();
        let seen = Arc::clone(&busy);
        let lanes = Lanes::new(
            3,
            move |_session: &str, jobs: Vec<u32>| {
                {
                    let mut busy = seen.lock().unwrap();
                    busy.0 += 1;
                    busy.1 = busy.1.max(busy.0);
                }
                std::thread::yield_now();
                seen.lock().unwrap().0 -= 1;
                for _ in jobs {
                    done_tx.send(()).unwrap();
                }
                None
            },
            || 0,
        );
        for i in 0..200 {
            lanes.submit(&format!("s{}", i % 20), i);
        }
        for _ in 0..200 {
            done.recv_timeout(WAIT).unwrap();
        }
        let peak = busy.lock().unwrap().1;
        assert!(peak <= 3, "at most three at once, saw {peak}");
        drop(lanes);
    }

    #[test]
    fn a_debt_is_caught_up_once_when_due_unless_a_later_group_pays_it() {
        // Job 1 owes a catch-up (job 0) after 50 ms; job 2 pays it; job 3 owes again, and
        // nothing comes before its time, so the catch-up follows.
        let (groups_tx, groups) = mpsc::channel::<(Vec<u32>, Instant)>();
        let lanes = Lanes::new(
            2,
            move |_session: &str, jobs: Vec<u32>| {
                let owes = jobs.iter().any(|job| *job == 1 || *job == 3);
                groups_tx.send((jobs, Instant::now())).unwrap();
                owes.then_some(Duration::from_millis(50))
            },
            || 0,
        );
        lanes.submit("a", 1);
        assert_eq!(groups.recv_timeout(WAIT).unwrap().0, [1]);
        lanes.submit("a", 2);
        assert_eq!(groups.recv_timeout(WAIT).unwrap().0, [2]);
        let owed_at = Instant::now();
        lanes.submit("a", 3);
        assert_eq!(groups.recv_timeout(WAIT).unwrap().0, [3]);
        let (jobs, at) = groups.recv_timeout(WAIT).unwrap();
        assert_eq!(jobs, [0], "the catch-up");
        assert!(
            at >= owed_at + Duration::from_millis(50),
            "not before it is due"
        );
        // A debt still owed when the pool stops is caught up before its committers end.
        lanes.submit("b", 3);
        assert_eq!(groups.recv_timeout(WAIT).unwrap().0, [3]);
        drop(lanes);
        assert_eq!(groups.recv_timeout(WAIT).unwrap().0, [0]);
    }
}
