//! The last line each sheep printed, for the herd view.
//!
//! A headless sheep's supervisor sees every byte its sheep writes; it says so
//! (`supervisor.output`, at most a few times a second, carrying nothing) and the broker reads
//! the end of the sheep's output the way `read` does — a pi sheep's RPC log rendered as a
//! transcript — and keeps its last line. The line is runtime state, not herd state: it is not
//! journaled, and a restarted broker learns it again from the next output. A changed line
//! wakes the herd feed, so dashboards show it within the feed's window without asking.
//!
//! Reading the end of a sheep's output is kept here ([`recent_output`]) and shared with `read`.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::herd::SheepStatus;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::OkResult;
use shepherd_term::{BackendKind, ReadSource};

use std::sync::Mutex;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::{Broker, Links};
use crate::state::session::Session;

/// How many lines are read to find the last one that is not blank.
const LINES_READ: u32 = 8;

/// `supervisor.output`: the sheep printed something.
pub(crate) async fn output(broker: &Arc<Broker>, session: &Session) -> BrokerResult<OkResult> {
    let id = session
        .agent_id
        .clone()
        .expect("supervisor sessions carry an agent");
    let sheep = broker.store.read(|herd| {
        herd.sheep
            .get(&id)
            .filter(|s| s.is_live())
            .map(|s| (s.backend, s.runtime))
    });
    let Some((kind, runtime)) = sheep else {
        return Ok(OkResult::ACK);
    };
    let text = recent_output(
        broker,
        &id,
        kind,
        &runtime,
        ReadSource::RecentUnwrapped,
        LINES_READ,
    )
    .await?;
    let Some(line) = shepherd_core::herd::last_line(&printable(&text)) else {
        return Ok(OkResult::ACK);
    };
    let changed = {
        let mut links = broker.links.lock().expect("links lock");
        links.printed.insert(id, line.clone()).as_ref() != Some(&line)
    };
    if changed {
        broker.store.generation.send_modify(|g| *g += 1);
    }
    Ok(OkResult::ACK)
}

/// Puts the last printed line into each live sheep's status (an ended sheep keeps the end of
/// its output recorded with its exit).
pub(crate) fn overlay(links: &Mutex<Links>, sheep: &mut [SheepStatus]) {
    let links = links.lock().expect("links lock");
    for status in sheep.iter_mut().filter(|s| s.error.is_none()) {
        if !matches!(status.state.as_str(), "exited" | "closing" | "closed")
            && let Some(line) = links.printed.get(&status.agent_id)
        {
            status.last_line = Some(line.clone());
        }
    }
}

/// `text` as a terminal may show it (the one filter, `shepherd_core::printable`), on one line's
/// terms: tabs become spaces.
fn printable(text: &str) -> String {
    shepherd_core::printable::printable(text).replace('\t', " ")
}

/// The last `lines` lines a sheep shows, read from its backend; a headless pi sheep's RPC
/// event log is rendered as a transcript first.
pub(crate) async fn recent_output(
    broker: &Arc<Broker>,
    id: &AgentId,
    kind: BackendKind,
    runtime: &shepherd_core::harness::Runtime,
    source: ReadSource,
    lines: u32,
) -> BrokerResult<String> {
    let record = crate::sheep::launch_record::current_launch(&broker.store, id);
    let backend = crate::sheep::remote_sheep::backend_of(broker, id, kind)?;
    // A headless pi sheep's log is pi's RPC event stream: read enough of it to fill `lines`
    // once rendered as a transcript.
    let rpc_log = kind == BackendKind::Headless && runtime.is_pi();
    let raw_lines = if rpc_log {
        lines.saturating_mul(50).min(10_000)
    } else {
        lines
    };
    let text = tokio::task::spawn_blocking(move || backend.read(&record, source, raw_lines))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))??;
    Ok(if rpc_log {
        let rendered = crate::sheep::transcript::transcript(&text);
        let all: Vec<&str> = rendered.lines().collect();
        all[all.len().saturating_sub(lines as usize)..].join("\n")
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_dropped_and_lines_kept() {
        let text = "\u{1b}[1;32mgreen\u{1b}[0m text\r\n\u{1b}]0;title\u{7}next\tline\n";
        assert_eq!(printable(text), "green text\nnext line\n");
        assert_eq!(
            shepherd_core::herd::last_line(&printable(text)).as_deref(),
            Some("next line")
        );
    }
}
