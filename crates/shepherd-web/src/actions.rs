//! The only changes a browser can make, each one request to the broker as the herd's parent
//! (the same authority `shepherd message`, `shepherd close` and `shepherd merge` use), each
//! answered with a line saying what changed: reply to a question, send a message, close a
//! sheep (only when the person confirmed it), land a branch, discard one (confirmed), cancel a
//! landing (the last three in `landing`). Reading a sheep's output is here too: it is a
//! request, not a change.

use std::sync::Arc;
use std::time::Duration;

use crate::landing::{self, Landings};
use serde::Deserialize;
use shepherd_client::CliError;
use shepherd_client::connect::{Target, deadline_after, parent};
use shepherd_core::herd::MessageReceipt;
use shepherd_core::protocol::{
    CloseParams, MessageParams, MessageResult, ReadParams, StatusParams, StatusResult, calls,
};

/// How long a close may take (the sheep's grace to end and the backend's confirmation).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// How many lines of output a sheep's page shows at most.
const READ_LINES: u32 = 200;

/// What a page asks for, as its form sends it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ActForm {
    /// `reply`, `message`, `close`, `land`, `discard` or `cancel` (not `action`, which a form's
    /// own property would shadow).
    pub(crate) kind: String,
    /// The sheep (reply, message, close).
    #[serde(default)]
    pub(crate) agent: String,
    /// The branch (land, discard).
    #[serde(default)]
    pub(crate) branch: Option<String>,
    /// The check a landing runs (land; empty: none).
    #[serde(default)]
    pub(crate) check: Option<String>,
    /// The merge (cancel).
    #[serde(default)]
    pub(crate) merge: Option<String>,
    /// The reply or message.
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// The question a reply answers.
    #[serde(default)]
    pub(crate) reply_to: Option<String>,
    /// `yes` when the person ticked the confirmation a close needs.
    #[serde(default)]
    pub(crate) confirm: Option<String>,
    /// The key that makes a second send of the same form a repeat (see `once`).
    #[serde(default)]
    pub(crate) once: Option<String>,
}

/// An action, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Reply {
        text: String,
        reply_to: String,
    },
    Message {
        text: String,
    },
    Close,
    Land {
        branch: String,
        check: Option<String>,
    },
    Discard {
        branch: String,
    },
    Cancel {
        merge: String,
    },
}

impl Action {
    /// The action `form` asks for, or why it cannot be done.
    pub(crate) fn from_form(form: &ActForm) -> Result<Self, String> {
        let text = || {
            form.text
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("`{}` needs a non-empty text", form.kind))
        };
        let named = |value: &Option<String>, what: &str| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("`{}` needs the {what}", form.kind))
        };
        let sheep_named = || {
            if form.agent.trim().is_empty() {
                Err(format!("`{}` needs the sheep (agent)", form.kind))
            } else {
                Ok(())
            }
        };
        match form.kind.as_str() {
            "reply" | "message" | "close" => sheep_named()?,
            "discard" if form.confirm.as_deref() != Some("yes") => {
                return Err("discarding a branch needs its confirmation ticked".to_owned());
            }
            _ => {}
        }
        match form.kind.as_str() {
            "reply" => Ok(Self::Reply {
                text: text()?,
                reply_to: form
                    .reply_to
                    .clone()
                    .filter(|r| !r.is_empty())
                    .ok_or("a reply needs the question it answers (reply_to)")?,
            }),
            "message" => Ok(Self::Message { text: text()? }),
            "close" if form.confirm.as_deref() == Some("yes") => Ok(Self::Close),
            "close" => Err("closing a sheep needs its confirmation ticked".to_owned()),
            "land" => Ok(Self::Land {
                branch: named(&form.branch, "branch")?,
                check: form
                    .check
                    .as_deref()
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            }),
            "discard" => Ok(Self::Discard {
                branch: named(&form.branch, "branch")?,
            }),
            "cancel" => Ok(Self::Cancel {
                merge: named(&form.merge, "merge")?,
            }),
            other => Err(format!(
                "unknown action `{other}`; the actions are reply, message, close, land, discard and cancel"
            )),
        }
    }
}

/// Does `action` (to sheep `agent`, for those that name one); the line saying what changed.
pub(crate) async fn perform(
    target: &Target,
    landings: &Arc<Landings>,
    agent: &str,
    action: Action,
) -> Result<String, CliError> {
    match action {
        Action::Land { branch, check } => landing::land(target, landings, &branch, check).await,
        Action::Discard { branch } => landing::discard(target, landings, &branch).await,
        Action::Cancel { merge } => landing::cancel(target, landings, &merge).await,
        Action::Reply { text, reply_to } => {
            let result = send_message(target, agent, text, Some(reply_to)).await?;
            Ok(match result.target_task_state {
                Some(state) => format!("answered {agent}; its task is {}", state.as_str()),
                None => format!("answered {agent}"),
            })
        }
        Action::Message { text } => {
            let result = send_message(target, agent, text, None).await?;
            Ok(format!("message {} sent to {agent}", result.message_id))
        }
        Action::Close => {
            let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
            let result = link
                .send::<calls::Close>(
                    &CloseParams {
                        id: agent.to_owned(),
                        keep_pane: false,
                    },
                    deadline_after(CLOSE_WAIT)?,
                )
                .await?;
            let cancelled = result
                .cancelled
                .map(|task| format!("; its task {} was cancelled", task.task_id))
                .unwrap_or_default();
            Ok(format!("closed {}{cancelled}", result.display_name))
        }
    }
}

/// Sends `text` to sheep `agent`, as the answer to `reply_to` when given.
async fn send_message(
    target: &Target,
    agent: &str,
    text: String,
    reply_to: Option<String>,
) -> Result<MessageResult, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    Ok(link
        .send::<calls::Message>(
            &MessageParams {
                target: agent.to_owned(),
                message: text,
                reply_to,
                ..MessageParams::default()
            },
            deadline_after(Duration::ZERO)?,
        )
        .await?)
}

/// What a sheep's page shows beyond the herd view: the receipts of the messages sent to it
/// (only `status` gives them) and its last output, or a line saying why there is none.
pub(crate) async fn inspect(target: &Target, agent: &str) -> (Vec<MessageReceipt>, String) {
    let asked = async {
        let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
        let status = link
            .send::<calls::Status>(
                &StatusParams {
                    id: Some(agent.to_owned()),
                },
                deadline_after(Duration::ZERO)?,
            )
            .await?;
        let receipts = match status {
            StatusResult::One(sheep) => sheep.messages,
            StatusResult::All(_) | StatusResult::Message(_) => Vec::new(),
        };
        let read = link
            .send::<calls::Read>(
                &ReadParams {
                    target: agent.to_owned(),
                    lines: Some(READ_LINES),
                    source: None,
                },
                deadline_after(Duration::ZERO)?,
            )
            .await;
        let output = match read {
            Ok(result) => result.text,
            Err(err) => format!("(no output: {err})"),
        };
        Ok::<_, CliError>((receipts, output))
    };
    asked
        .await
        .unwrap_or_else(|err| (Vec::new(), format!("(no output: {})", err.message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(
        action: &str,
        text: Option<&str>,
        reply_to: Option<&str>,
        confirm: Option<&str>,
    ) -> ActForm {
        ActForm {
            kind: action.into(),
            agent: "a".into(),
            text: text.map(Into::into),
            reply_to: reply_to.map(Into::into),
            confirm: confirm.map(Into::into),
            ..ActForm::default()
        }
    }

    #[test]
    fn a_close_needs_its_confirmation() {
        assert!(Action::from_form(&form("close", None, None, None)).is_err());
        assert_eq!(
            Action::from_form(&form("close", None, None, Some("yes"))),
            Ok(Action::Close)
        );
    }

    #[test]
    fn a_reply_needs_text_and_its_question() {
        assert!(Action::from_form(&form("reply", Some("  "), Some("m1"), None)).is_err());
        assert!(Action::from_form(&form("reply", Some("yes"), None, None)).is_err());
        assert_eq!(
            Action::from_form(&form("reply", Some(" yes "), Some("m1"), None)),
            Ok(Action::Reply {
                text: "yes".into(),
                reply_to: "m1".into()
            })
        );
    }

    #[test]
    fn an_unknown_action_names_the_accepted_ones() {
        let err = Action::from_form(&form("spawn", None, None, None)).unwrap_err();
        assert!(
            err.contains("`spawn`")
                && err.contains("reply, message, close, land, discard and cancel"),
            "{err}"
        );
    }

    #[test]
    fn branch_actions_need_their_branch_or_merge_and_a_discard_its_confirmation() {
        let branch = |kind: &str, branch: Option<&str>, check: Option<&str>, confirm| ActForm {
            kind: kind.into(),
            branch: branch.map(Into::into),
            check: check.map(Into::into),
            confirm,
            ..ActForm::default()
        };
        assert_eq!(
            Action::from_form(&branch("land", Some("shepherd/a"), Some("  "), None)),
            Ok(Action::Land {
                branch: "shepherd/a".into(),
                check: None
            })
        );
        assert_eq!(
            Action::from_form(&branch("land", Some("shepherd/a"), Some(" make "), None)),
            Ok(Action::Land {
                branch: "shepherd/a".into(),
                check: Some("make".into())
            })
        );
        assert!(Action::from_form(&branch("land", None, None, None)).is_err());
        assert!(Action::from_form(&branch("discard", Some("shepherd/a"), None, None)).is_err());
        assert_eq!(
            Action::from_form(&branch(
                "discard",
                Some("shepherd/a"),
                None,
                Some("yes".into())
            )),
            Ok(Action::Discard {
                branch: "shepherd/a".into()
            })
        );
        let cancel = ActForm {
            kind: "cancel".into(),
            merge: Some("merge-3".into()),
            ..ActForm::default()
        };
        assert_eq!(
            Action::from_form(&cancel),
            Ok(Action::Cancel {
                merge: "merge-3".into()
            })
        );
        let nobody = ActForm {
            kind: "message".into(),
            text: Some("hi".into()),
            ..ActForm::default()
        };
        assert!(Action::from_form(&nobody).unwrap_err().contains("sheep"));
    }
}
