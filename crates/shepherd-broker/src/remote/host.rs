//! The host's side of a remote sheep: `shepherd remote <op>`, run over SSH by the broker.
//!
//! Each op reads one JSON request from standard input and answers with one JSON document on
//! standard output; it uses the host's own backends, directories and files, exactly as a local
//! broker would use this machine's. Nothing here starts a broker or listens anywhere: the
//! broker on the parent's machine decides, this side only carries out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shepherd_core::backend::BackendKind;
use shepherd_core::dirs::UserDirs;
use shepherd_core::protocol::PROTOCOL_VERSION;
use shepherd_term::{Backend, Presence};

use shepherd_core::backend::LaunchRecord;

use super::ops::{
    AgentReply, AgentRequest, BranchReply, BranchRequest, CloseReply, CloseRequest, FileRead,
    FilesReply, FilesRequest, HelloReply, HelloRequest, HostOp, HostOpError, HostOps,
    LaunchRequest, PresenceReply, PresenceRequest, ReadRequest, ServeAnswer, ServeFrame, answer,
};

/// Carries out `op` with `input` (its JSON request) and returns its JSON answer.
pub fn run_op(op: &str, input: &str, dirs: &UserDirs) -> Result<String, HostOpError> {
    let op = HostOp::from_name(op).ok_or_else(|| HostOpError::UnknownOp(op.to_owned()))?;
    answer(&Host { dirs }, op, input)
}

/// This host, carrying out the ops with the user's directories.
struct Host<'a> {
    dirs: &'a UserDirs,
}

impl HostOps for Host<'_> {
    fn hello(&self, request: HelloRequest) -> Result<HelloReply, HostOpError> {
        hello(&request, self.dirs)
    }

    fn launch(&self, request: LaunchRequest) -> Result<LaunchRecord, HostOpError> {
        launch(request, self.dirs)
    }

    fn read(&self, request: ReadRequest) -> Result<String, HostOpError> {
        read(&request)
    }

    fn close(&self, request: CloseRequest) -> Result<CloseReply, HostOpError> {
        close(&request, self.dirs)
    }

    fn presence(&self, request: PresenceRequest) -> Result<PresenceReply, HostOpError> {
        Ok(presence(&request))
    }

    fn files(&self, request: FilesRequest) -> Result<FilesReply, HostOpError> {
        files(request)
    }

    fn branch(&self, request: BranchRequest) -> Result<BranchReply, HostOpError> {
        super::host_branch::branch(&request, self.dirs).map_err(HostOpError::Failed)
    }

    fn agent(&self, request: AgentRequest) -> Result<AgentReply, HostOpError> {
        agent(request)
    }
}

/// `shepherd remote serve`: answers ops one line at a time until `input` ends, so a broker's
/// steps on this host share one SSH session and one process instead of one each.
///
/// Only a whole line (ending in a newline) is carried out: a session cut mid-line leaves its
/// last op undone, never half-read. `output` gets one [`ServeAnswer`] line per op, flushed at
/// once; the caller hands in streams that no process an op starts can inherit.
pub fn serve(
    mut input: impl std::io::BufRead,
    mut output: impl std::io::Write,
    dirs: &UserDirs,
) -> std::io::Result<()> {
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<ServeFrame>(&line) {
            Ok(frame) => match run_op(&frame.op, &frame.request.to_string(), dirs) {
                // The op's answer is JSON already: it goes in as it is.
                Ok(answer) => format!("{{\"ok\":{answer}}}"),
                Err(err) => answer_line(&ServeAnswer::Error(err.to_string())),
            },
            Err(err) => answer_line(&ServeAnswer::Error(format!(
                "a `serve` line does not parse: {err}"
            ))),
        };
        output.write_all(answer.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}

fn answer_line(answer: &ServeAnswer) -> String {
    serde_json::to_string(answer).expect("answers serialise")
}

fn failed(context: &str, err: impl std::fmt::Display) -> HostOpError {
    HostOpError::Failed(format!("{context}: {err}"))
}

fn backend(kind: BackendKind) -> Result<Box<dyn Backend>, HostOpError> {
    match kind {
        BackendKind::Headless => Ok(Box::new(shepherd_term::headless::HeadlessBackend)),
        // On a host nobody but Shepherd started tmux: the session it made goes with its last
        // sheep.
        BackendKind::Tmux => Ok(Box::new(shepherd_term::tmux::TmuxBackend::tidying())),
        // The host user's Herdr: the server their environment names (started when none runs).
        BackendKind::Herdr => {
            let env = shepherd_term::herdr::HerdrEnv::from_process();
            let config = shepherd_term::herdr::HerdrConfig::new(env).starting_server();
            shepherd_term::herdr::HerdrBackend::connect(config)
                .map(|backend| Box::new(backend) as Box<dyn Backend>)
                .map_err(|err| failed("reaching Herdr on this host", err))
        }
    }
}

fn link_dir(dirs: &UserDirs) -> PathBuf {
    dirs.runtime_dir.join("links")
}

fn hello(request: &HelloRequest, dirs: &UserDirs) -> Result<HelloReply, HostOpError> {
    valid_link_name(&request.link_name)?;
    let links = link_dir(dirs);
    shepherd_client::paths::ensure_private_dir(&dirs.runtime_dir)
        .and_then(|()| shepherd_client::paths::ensure_private_dir(&links))
        .map_err(|err| failed(&format!("making {}", links.display()), err))?;
    let link_socket = links.join(format!("{}.sock", request.link_name));
    // The forward of an earlier link (its broker or connection gone) left its socket behind.
    match fs_err::remove_file(&link_socket) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(failed("removing the old link socket", err)),
    }
    let state_dir = dirs.state_dir.join("remote").join(&request.link_name);
    shepherd_client::paths::ensure_private_dir(&state_dir.join("sheep"))
        .map_err(|err| failed(&format!("making {}", state_dir.display()), err))?;
    let exe = std::env::current_exe().map_err(|err| failed("finding this shepherd", err))?;
    let mut backends = BTreeMap::new();
    backends.insert(BackendKind::Headless.as_str().to_owned(), true);
    backends.insert(
        BackendKind::Tmux.as_str().to_owned(),
        shepherd_term::tmux::TmuxBackend::new().available(),
    );
    let herdr = std::env::var_os("HERDR_BIN_PATH")
        .filter(|path| !path.is_empty())
        .map_or_else(|| on_path("herdr"), |path| Path::new(&path).is_file());
    backends.insert(BackendKind::Herdr.as_str().to_owned(), herdr);
    let programs = request
        .programs
        .iter()
        .map(|program| (program.clone(), on_path(program)))
        .collect();
    Ok(HelloReply {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol: PROTOCOL_VERSION,
        exe,
        link_socket,
        runtime_dir: dirs.runtime_dir.clone(),
        state_dir,
        project_exists: request.project_path.is_dir(),
        backends,
        programs,
        serves: true,
    })
}

fn valid_link_name(name: &str) -> Result<(), HostOpError> {
    if !name.is_empty() && name.len() <= 32 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(HostOpError::Failed(format!(
            "link name `{name}` is not 1–32 hex digits"
        )))
    }
}

fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn launch(mut request: LaunchRequest, dirs: &UserDirs) -> Result<LaunchRecord, HostOpError> {
    let backend = backend(request.backend)?;
    let creds = dirs.runtime_dir.join("cred");
    let file = creds.join(format!(
        "{}.{}",
        request.spec.agent_id,
        uuid::Uuid::new_v4().simple()
    ));
    shepherd_client::paths::ensure_private_dir(&creds)
        .and_then(|()| shepherd_fs::write_atomic(&file, request.credential.as_bytes(), Some(0o600)))
        .map_err(|err| failed("writing the supervisor's credential", err))?;
    request
        .spec
        .supervisor_args
        .extend(["--credential-file".to_owned(), file.display().to_string()]);
    if let Some(dir) = request.spec.log.parent() {
        fs_err::create_dir_all(dir).map_err(|err| failed("making the log directory", err))?;
    }
    let record = backend.launch(&request.spec).map_err(|err| {
        let _unused = fs_err::remove_file(&file);
        failed("starting the sheep", err)
    })?;
    // The pane is recorded as the link's, so only that broker ever closes it.
    if let Some(pane) = &record.pane {
        let project = request
            .spec
            .env
            .iter()
            .find(|(key, _)| key == "SHEPHERD_PROJECT")
            .map(|(_, value)| value.clone());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            });
        let entry = shepherd_term::registry::PaneEntry {
            pane_id: pane.clone(),
            tab_id: record.window.clone(),
            name: request.spec.display_name.clone(),
            cwd: request.spec.cwd.display().to_string(),
            created_at: shepherd_core::time::iso(shepherd_core::time::from_millis(now)),
            dir: None,
            owner_session: Some(request.owner.clone()),
            owner_project: project,
            backend: Some(request.backend),
            server: record.server.clone(),
            agent_id: Some(request.spec.agent_id.clone()),
        };
        registry(dirs)
            .register(entry)
            .map_err(|err| failed("recording the sheep's pane", err))?;
    }
    Ok(record)
}

fn registry(dirs: &UserDirs) -> shepherd_term::registry::Registry {
    shepherd_term::registry::Registry::in_dir(&dirs.user_config_dir())
}

fn read(request: &ReadRequest) -> Result<String, HostOpError> {
    backend(request.backend)?
        .read(&request.record, request.source, request.lines)
        .map_err(|err| failed("reading the sheep", err))
}

fn close(request: &CloseRequest, dirs: &UserDirs) -> Result<CloseReply, HostOpError> {
    let deadline = Instant::now() + Duration::from_millis(request.deadline_ms);
    let registry = registry(dirs);
    if let Some(pane) = &request.record.pane {
        // Never a pane this link did not make: it may be a person's own.
        let entry = registry
            .find(request.backend, pane)
            .map_err(|err| failed("reading the pane registry", err))?;
        if entry.is_none_or(|entry| entry.owner_session.as_deref() != Some(&request.owner)) {
            return Err(HostOpError::Failed(format!(
                "refusing to close pane {pane}: this link did not create it"
            )));
        }
    }
    backend(request.backend)?
        .close(&request.record, request.keep_pane, deadline)
        .map_err(|err| failed("closing the sheep", err))?;
    if let Some(pane) = request
        .record
        .pane
        .as_deref()
        .filter(|_| !request.keep_pane)
    {
        registry
            .unregister(request.backend, pane)
            .map_err(|err| failed("updating the pane registry", err))?;
    }
    Ok(CloseReply {})
}

fn presence(request: &PresenceRequest) -> PresenceReply {
    match backend(request.backend).map(|backend| backend.presence(&request.record)) {
        Ok(Presence::Present) => PresenceReply::Present,
        Ok(Presence::Gone) => PresenceReply::Gone,
        Ok(Presence::Unknown) | Err(_) => PresenceReply::Unknown,
    }
}

fn files(request: FilesRequest) -> Result<FilesReply, HostOpError> {
    // A file a sheep turned into a link (or a link on its way) is skipped, not a failed step:
    // the other notes in the same step still go and come back.
    fn unless_refused<T>(done: std::io::Result<T>) -> std::io::Result<Option<T>> {
        match done {
            Ok(value) => Ok(Some(value)),
            Err(err) if err.kind() == std::io::ErrorKind::InvalidData => Ok(None),
            Err(err) => Err(err),
        }
    }
    let within = &request.within;
    for file in &request.write {
        let path = &file.path;
        if file.keep_existing {
            match unless_refused(super::host_files::exists(within, path)) {
                Ok(Some(false)) => {}
                Ok(_) => continue,
                Err(err) => return Err(failed(&format!("looking at {}", path.display()), err)),
            }
        }
        unless_refused(super::host_files::write(
            within,
            path,
            file.content.as_bytes(),
        ))
        .map_err(|err| failed(&format!("writing {}", path.display()), err))?;
    }
    let mut reply = FilesReply::default();
    for probe in request.read {
        let read = unless_refused(super::host_files::read(within, &probe.path, probe.since))
            .map_err(|err| failed(&format!("reading {}", probe.path.display()), err))?;
        let Some(Some((modified, content))) = read else {
            continue;
        };
        reply.read.push(FileRead {
            path: probe.path,
            modified,
            content,
        });
    }
    Ok(reply)
}

fn agent(request: AgentRequest) -> Result<AgentReply, HostOpError> {
    let mut plan = request.plan;
    let harness = plan.harness;
    let adapter = shepherd_harness::adapter(harness)
        .ok_or_else(|| HostOpError::Failed(format!("{harness} has no adapter here")))?;
    let env = shepherd_harness::ProcessEnv;
    let program = shepherd_harness::locate_program(adapter, &env).map_err(HostOpError::Failed)?;
    let exe = std::env::current_exe().map_err(|err| failed("finding this shepherd", err))?;
    let exe = exe.display().to_string();
    plan.program = vec![program.display().to_string()];
    plan.mcp = vec![exe.clone(), "mcp".into(), "--sheep".into()];
    // A sheep reopened by `resume` continues the session its earlier turns recorded here.
    plan.resume = shepherd_harness::recorded_session(&plan.dir);
    adapter
        .prepare(&mut plan, &env)
        .map_err(|err| failed("composing the agent's configuration", err))?;
    let file = plan.dir.join("plan.json");
    plan.write(&file)
        .map_err(|err| failed("writing the agent's plan", err))?;
    Ok(AgentReply {
        argv: vec![
            exe,
            "harness".into(),
            "--plan".into(),
            file.display().to_string(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::serve;
    use shepherd_core::dirs::UserDirs;

    fn answers(input: &str) -> Vec<serde_json::Value> {
        let dir = tempfile::tempdir().unwrap();
        let dirs = UserDirs {
            home: dir.path().join("home"),
            pi_agent_dir: dir.path().join("pi"),
            runtime_dir: dir.path().join("run"),
            state_dir: dir.path().join("state"),
        };
        let mut output = Vec::new();
        serve(input.as_bytes(), &mut output, &dirs).unwrap();
        String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn a_session_answers_each_whole_line_and_leaves_a_cut_one_undone() {
        let presence = r#"{"op":"presence","request":{"backend":"headless","record":{"pid":1}}}"#;
        let got = answers(&format!(
            "{presence}\n\n{{\"op\":\"nonsense\",\"request\":{{}}}}\nnot json\n{presence}"
        ));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].get("ok").is_some(), "{}", got[0]);
        let unknown = got[1]["error"].as_str().unwrap();
        assert!(
            unknown.contains("unknown remote op `nonsense`"),
            "{unknown}"
        );
        let garbled = got[2]["error"].as_str().unwrap();
        assert!(garbled.contains("does not parse"), "{garbled}");
    }
}
