//! Short names on the command line: `shepherd close 9f3c`, `shepherd status "worker: docs"`.
//!
//! A person should not have to paste a 60-character id. Where a command takes a sheep or a
//! task, anything that is not already a whole id is first sent to the broker's `resolve`, which
//! answers with the one id it stands for (a unique prefix of the id or of its random part, a
//! display name, a unique label) or refuses an ambiguous name with the candidates. A name the
//! herd does not know goes on unchanged, so the command fails with its own error; a herd that
//! is not running is not started for this.

use std::time::Duration;

use shepherd_core::ids::{AgentId, TaskId};
use shepherd_core::protocol::{ResolveKind, ResolveParams, calls};

use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::{HerdArgs, deadline_after, parent_if_alive, runtime, target};

/// Whole ids are this long or longer (`shepherd-task-` + 8 + `-` + a UUID is 59); anything
/// shorter may be an abbreviation even when it has an id's shape.
const WHOLE_ID_LEN: usize = 50;

/// The sheep `text` names, as a whole agent id (or `text` itself when the herd knows no such
/// name).
pub(crate) fn sheep_id(ctx: &Context, herd: &HerdArgs, text: String) -> Result<String, CliError> {
    if AgentId::parse(&text).is_some() && text.len() >= WHOLE_ID_LEN {
        return Ok(text);
    }
    resolve(ctx, herd, ResolveKind::Sheep, text)
}

/// The tasks `texts` name, as whole task ids.
pub(crate) fn task_ids(
    ctx: &Context,
    herd: &HerdArgs,
    texts: &[String],
) -> Result<Vec<String>, CliError> {
    texts
        .iter()
        .map(|text| {
            if TaskId::parse(text).is_some() && text.len() >= WHOLE_ID_LEN {
                Ok(text.clone())
            } else {
                resolve(ctx, herd, ResolveKind::Task, text.clone())
            }
        })
        .collect()
}

fn resolve(
    ctx: &Context,
    herd: &HerdArgs,
    kind: ResolveKind,
    text: String,
) -> Result<String, CliError> {
    let target = target(ctx, herd)?;
    let params = ResolveParams {
        kind,
        text: text.clone(),
    };
    runtime()?.block_on(async {
        let deadline = deadline_after(Duration::ZERO)?;
        let Some(mut link) = parent_if_alive(&target, deadline).await? else {
            return Ok(text);
        };
        let result = link.send::<calls::Resolve>(&params, deadline).await?;
        Ok(result.id.unwrap_or(text))
    })
}
