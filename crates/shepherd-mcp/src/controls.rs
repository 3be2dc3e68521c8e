//! The controls over MCP, as the pi tools offer them: `shepherd_resume`, the `isolate`
//! argument of `shepherd_spawn` and the worktree report of `shepherd_close` (the budget and
//! stall-watchdog arguments are read with the other arguments, in `args`).

use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use shepherd_core::protocol::{ResumeParams, calls};
use shepherd_core::worktree::WorktreeReport;
use tokio::time::Instant;

use super::catalogue;
use super::error::ToolError;
use super::schema::input;
use super::server::{Parent, respond};
use super::text::success;
use shepherd_client::connect::broker_timeout;
use shepherd_client::connect::{caller_context, spawn_wait};

/// What became of a closed isolated sheep's worktree, in words.
pub(crate) fn worktree_text(report: &WorktreeReport) -> String {
    match report {
        WorktreeReport::Local(local) if !local.kept && local.patch.is_none() => {
            format!("; worktree {} removed (clean, no new commits)", local.path)
        }
        WorktreeReport::Local(local) => {
            let patch = local.patch.clone().unwrap_or_default();
            let place = if local.kept {
                format!(
                    "; worktree kept at {} on branch {}: {}",
                    local.path,
                    local.branch,
                    local.reason.as_deref().unwrap_or_default()
                )
            } else {
                format!(
                    "; worktree {} removed, its work stays on branch {}",
                    local.path, local.branch
                )
            };
            let preserved = local
                .preserved
                .as_ref()
                .map(|r| format!("; uncommitted changes preserved on {r}"))
                .unwrap_or_default();
            format!(
                "{place} ({}){preserved}; files: {}; commits: {}. {}",
                patch.diffstat,
                patch.files.join(", "),
                patch.commits.join("; "),
                patch.integrate
            )
        }
        WorktreeReport::Remote(remote) => {
            let place = if remote.kept {
                format!(
                    "; worktree kept on host {} at {} on branch {}: {}",
                    remote.host,
                    remote.path,
                    remote.branch,
                    remote.reason.as_deref().unwrap_or_default()
                )
            } else {
                format!(
                    "; worktree on host {} removed: {}",
                    remote.host, remote.path
                )
            };
            if remote.commits.is_empty() && !remote.kept {
                return format!("{place} (clean, no new commits)");
            }
            let home = remote
                .brought_home_phrase()
                .map(|home| format!("; {home}"))
                .unwrap_or_default();
            format!(
                "{place}{home}; commits: {}. {}",
                remote.commits.join("; "),
                remote.integrate
            )
        }
    }
}

#[derive(Debug, Deserialize)]
struct Resume {
    id: String,
}

#[tool_router(router = controls_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_resume",
        description = catalogue::RESUME.description,
        input_schema = input(&catalogue::RESUME.mcp_schema())
    )]
    async fn shepherd_resume(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_resume",
            "resume",
            &args,
            self.resume(&args, &ctx).await,
        )
    }
}

impl Parent {
    async fn resume(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let resume: Resume = super::args::read("shepherd_resume", args, false)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = ResumeParams {
            id: resume.id,
            backend: None,
            caller: Some(caller_context()),
        };
        // A resume of an exited sheep closes what is left of it first.
        let deadline = Instant::now() + spawn_wait() + Duration::from_secs(30) + broker_timeout()?;
        let result = herd.send::<calls::Resume>(&params, deadline).await?;
        herd.remember(result.agent_id.as_str(), &result.display_name);
        Ok(success(
            "shepherd_resume",
            args,
            &format!(
                "resumed {} on {}",
                result.display_name,
                result.backend.as_str()
            ),
            &json!({ "id": result.agent_id, "resumes": result.resumes }),
            &[
                ("id", Some(json!(result.agent_id))),
                ("displayName", Some(json!(result.display_name))),
                ("backend", Some(json!(result.backend))),
                ("resumes", Some(json!(result.resumes))),
            ],
            &[("id", "agent id")],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::worktree_text;
    use shepherd_core::worktree::{RemoteWorktreeReport, WorktreeReport};

    fn remote(kept: bool, commits: &[&str], home: bool) -> WorktreeReport {
        WorktreeReport::Remote(RemoteWorktreeReport {
            host: "devbox".into(),
            path: "/srv/p.git-wt/w".into(),
            branch: "shepherd/w".into(),
            base: "abc".into(),
            kept,
            reason: kept.then(|| "uncommitted changes stay".to_owned()),
            commits: commits.iter().map(|c| (*c).to_owned()).collect(),
            brought_home: home,
            integrate: "git merge shepherd/w".into(),
        })
    }

    /// A remote worktree whose commits came home is never called clean.
    #[test]
    fn commits_brought_home_are_said() {
        let removed = worktree_text(&remote(false, &["1234567 add"], true));
        assert!(
            removed.contains("removed")
                && removed.contains("; 1 commit brought home on branch shepherd/w;"),
            "{removed}"
        );
        assert!(!removed.contains("clean, no new commits"), "{removed}");
        let kept = worktree_text(&remote(true, &["1234567 add"], true));
        assert!(
            kept.contains("kept on host devbox") && kept.contains("brought home"),
            "{kept}"
        );
        let clean = worktree_text(&remote(false, &[], false));
        assert!(clean.contains("clean, no new commits"), "{clean}");
    }
}
