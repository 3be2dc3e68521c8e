//! A backend on another machine: every step is the host's own backend, run by its `shepherd`.
//!
//! [`RemoteBackend`] implements the same [`Backend`] trait as tmux, Herdr and headless, so
//! spawn, read, close and recovery treat a remote sheep like any other. Its launch rewrites the
//! local launch for the host: the supervisor reports to the forwarded socket, the sheep's
//! environment names the host's `shepherd` and project, output goes to the host's state
//! directory, the supervisor never starts a broker of its own there and keeps its sheep alive
//! for as long as a host may stay unreachable. The supervisor's credential travels in the
//! request (never on a command line) and is written to a private file on the host.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::backend::{BackendKind, LaunchRecord, Placement, ReadSource};
use shepherd_term::{Backend, LaunchSpec, Presence, TermError};

use super::link::HostLink;
use super::ops::{CloseRequest, LaunchRequest, PresenceReply, PresenceRequest, ReadRequest, op};

/// How long a launch or a read on the host may take.
const STEP_DEADLINE: Duration = Duration::from_secs(30);

/// One host's backend of one kind.
pub(crate) struct RemoteBackend {
    link: Arc<HostLink>,
    kind: BackendKind,
    /// How long the host's supervisor keeps its sheep without a broker.
    link_timeout: Duration,
}

impl RemoteBackend {
    pub(crate) fn new(link: Arc<HostLink>, kind: BackendKind, link_timeout: Duration) -> Self {
        Self {
            link,
            kind,
            link_timeout,
        }
    }

    fn unreachable(&self, why: &str) -> TermError {
        TermError::HostUnreachable(format!("host {} is unreachable: {why}", self.link.name))
    }

    /// The launch as the host must run it, and the supervisor's credential taken out of it.
    fn for_host(&self, spec: &LaunchSpec) -> Result<(LaunchSpec, String), TermError> {
        let hello = self
            .link
            .hello()
            .ok_or_else(|| self.unreachable("no SSH connection"))?;
        let local_exe = spec.shepherd_exe.display().to_string();
        let host_exe = hello.exe.display().to_string();
        let mut args = spec.supervisor_args.iter();
        let mut supervisor_args = Vec::new();
        let mut credential = None;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--credential-file" => credential = args.next().cloned(),
                // A remote supervisor never starts a broker: the broker lives here.
                "--broker-state" => {
                    args.next();
                }
                _ => supervisor_args.push(arg.clone()),
            }
        }
        let credential = credential
            .ok_or_else(|| TermError::Launch("the launch carries no credential".to_owned()))?;
        let token = fs_err::read_to_string(&credential).map_err(|err| TermError::Io {
            context: "reading the supervisor's credential".to_owned(),
            source: err,
        })?;
        let _taken = fs_err::remove_file(&credential);
        let project = self.link.def.project_path.display().to_string();
        let env = spec
            .env
            .iter()
            .map(|(key, value)| {
                let value = match key.as_str() {
                    "SHEPHERD_SOCKET" => hello.link_socket.display().to_string(),
                    "SHEPHERD_BIN" => host_exe.clone(),
                    "SHEPHERD_PROJECT" => project.clone(),
                    _ => value.clone(),
                };
                (key.clone(), value)
            })
            .chain([
                ("SHEPHERD_HOST".to_owned(), self.link.name.clone()),
                // The sheep's own commands wait through a dropped link as long as the host may
                // stay unreachable, not the 15 s a local broker gets.
                (
                    "SHEPHERD_BROKER_TIMEOUT".to_owned(),
                    self.link_timeout.as_secs().max(1).to_string(),
                ),
            ])
            .collect();
        let program = spec
            .program
            .iter()
            .map(|word| {
                if *word == local_exe {
                    host_exe.clone()
                } else {
                    word.clone()
                }
            })
            .collect();
        let host_spec = LaunchSpec {
            agent_id: spec.agent_id.clone(),
            display_name: spec.display_name.clone(),
            cwd: spec.cwd.clone(),
            program,
            env,
            shepherd_exe: hello.exe.clone(),
            socket: hello.link_socket.clone(),
            log: hello
                .state_dir
                .join("sheep")
                .join(format!("{}.log", spec.agent_id)),
            // The caller's pane is on this machine; on the host a sheep gets a window.
            placement: Placement::Tab,
            caller_pane: None,
            caller_pid: None,
            tmux_socket: None,
            keep_open: spec.keep_open,
            keep_stdin: spec.keep_stdin,
            orphan_grace: self.link_timeout,
            supervisor_args,
        };
        Ok((host_spec, token.trim().to_owned()))
    }

    fn step_deadline() -> Instant {
        Instant::now() + STEP_DEADLINE
    }
}

impl Backend for RemoteBackend {
    fn kind(&self) -> BackendKind {
        self.kind
    }

    fn launch(&self, spec: &LaunchSpec) -> Result<LaunchRecord, TermError> {
        let (spec, credential) = self.for_host(spec)?;
        let request = LaunchRequest {
            backend: self.kind,
            spec,
            credential,
            owner: self.link.owner(),
        };
        let mut record: LaunchRecord = self
            .link
            .call::<op::Launch>(&request, Self::step_deadline())
            .map_err(TermError::Launch)?;
        // The pids and log are the host's: recorded, never used on this machine.
        record.server = Some(match record.server.take() {
            Some(server) => format!("{}:{server}", self.link.name),
            None => self.link.name.clone(),
        });
        Ok(record)
    }

    fn read(
        &self,
        record: &LaunchRecord,
        source: ReadSource,
        lines: u32,
    ) -> Result<String, TermError> {
        if self.link.hello().is_none() {
            return Err(self.unreachable("no SSH connection"));
        }
        let request = ReadRequest {
            backend: self.kind,
            record: host_record(&self.link.name, record),
            source,
            lines,
        };
        self.link
            .call::<op::Read>(&request, Self::step_deadline())
            .map_err(TermError::Read)
    }

    fn close(
        &self,
        record: &LaunchRecord,
        keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError> {
        if self.link.hello().is_none() {
            return Err(TermError::NotConfirmed(format!(
                "host {} is unreachable, so the sheep's end there cannot be confirmed",
                self.link.name
            )));
        }
        let request = CloseRequest {
            backend: self.kind,
            record: host_record(&self.link.name, record),
            keep_pane,
            owner: self.link.owner(),
            deadline_ms: u64::try_from(
                deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis(),
            )
            .unwrap_or(u64::MAX),
        };
        // The host gets the caller's time; the SSH session a little more.
        self.link
            .call::<op::Close>(&request, deadline + Duration::from_secs(5))
            .map(|_| ())
            .map_err(TermError::NotConfirmed)
    }

    fn presence(&self, record: &LaunchRecord) -> Presence {
        if self.link.hello().is_none() {
            return Presence::Unknown;
        }
        let request = PresenceRequest {
            backend: self.kind,
            record: host_record(&self.link.name, record),
        };
        match self
            .link
            .call::<op::Presence>(&request, Self::step_deadline())
        {
            Ok(PresenceReply::Present) => Presence::Present,
            Ok(PresenceReply::Gone) => Presence::Gone,
            Ok(PresenceReply::Unknown) | Err(_) => Presence::Unknown,
        }
    }

    fn available(&self) -> Result<(), TermError> {
        match self.link.hello() {
            Some(hello) if hello.backends.get(self.kind.as_str()) == Some(&true) => Ok(()),
            Some(_) => Err(TermError::Unavailable(format!(
                "{} does not run on host {}",
                self.kind.as_str(),
                self.link.name
            ))),
            None => Err(self.unreachable("no SSH connection")),
        }
    }
}

/// The record as the host knows it: the server without this side's `host:` prefix.
fn host_record(host: &str, record: &LaunchRecord) -> LaunchRecord {
    let mut record = record.clone();
    record.server = record.server.take().and_then(|server| {
        if server == host {
            None
        } else {
            server
                .strip_prefix(&format!("{host}:"))
                .map(str::to_owned)
                .or(Some(server))
        }
    });
    record
}

/// The host path of a directory under the local project root: the same place under the
/// host's project path. A directory outside the project has no counterpart there.
pub(crate) fn host_cwd(
    local_root: &std::path::Path,
    host_root: &std::path::Path,
    requested: Option<&str>,
) -> Result<PathBuf, String> {
    let Some(requested) = requested.filter(|text| !text.is_empty()) else {
        return Ok(host_root.to_path_buf());
    };
    let path = std::path::Path::new(requested);
    let relative = if path.is_absolute() {
        path.strip_prefix(local_root)
            .or_else(|_| path.strip_prefix(host_root))
            .map_err(|_| {
                format!(
                    "cwd `{requested}` is outside the project, so it has no place on the host; \
                     give a directory inside the project"
                )
            })?
    } else {
        path
    };
    if relative
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "cwd `{requested}` leaves the project; give a directory inside it"
        ));
    }
    Ok(host_root.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn directories_map_into_the_hosts_project() {
        let local = Path::new("/home/me/app");
        let host = Path::new("/srv/app");
        assert_eq!(host_cwd(local, host, None).unwrap(), host);
        assert_eq!(
            host_cwd(local, host, Some("/home/me/app/crates/x")).unwrap(),
            host.join("crates/x")
        );
        assert_eq!(
            host_cwd(local, host, Some("docs")).unwrap(),
            host.join("docs")
        );
        assert!(host_cwd(local, host, Some("/etc")).is_err());
        assert!(host_cwd(local, host, Some("../other")).is_err());
    }

    #[test]
    fn the_hosts_record_loses_this_sides_prefix() {
        let record = LaunchRecord {
            server: Some("devbox:/tmp/tmux-1/default".to_owned()),
            ..LaunchRecord::default()
        };
        assert_eq!(
            host_record("devbox", &record).server.as_deref(),
            Some("/tmp/tmux-1/default")
        );
        let bare = LaunchRecord {
            server: Some("devbox".to_owned()),
            ..LaunchRecord::default()
        };
        assert_eq!(host_record("devbox", &bare).server, None);
    }
}
