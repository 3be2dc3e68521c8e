//! Finding Herdr's API socket the way Herdr itself does, so Shepherd talks to the same server
//! the user's `herdr` CLI would: an explicit path, an explicit session, `HERDR_SOCKET_PATH`,
//! `HERDR_SESSION`, then the default socket under the Herdr config directory
//! (`$XDG_CONFIG_HOME/herdr` or `~/.config/herdr`; named sessions live in
//! `sessions/<name>/`). The environment is an explicit input ([`HerdrEnv`]) so resolution is
//! a pure function and nothing here reads `std::env` behind the caller's back.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::error::HerdrError;

/// The socket file name inside a Herdr config or session directory.
const SOCKET_NAME: &str = "herdr.sock";

/// What Herdr-related variables the environment holds. Empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HerdrEnv {
    /// `HERDR_SOCKET_PATH`: an API socket override.
    pub socket_path: Option<PathBuf>,
    /// `HERDR_SESSION`: a named session.
    pub session: Option<String>,
    /// `XDG_CONFIG_HOME` (only honoured when absolute, as the XDG spec asks).
    pub config_home: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `HERDR_ENV=1`: this process runs inside a Herdr pane.
    pub in_herdr: bool,
    /// `HERDR_PANE_ID`: the pane this process runs in.
    pub pane_id: Option<String>,
    /// `HERDR_WORKSPACE_ID`: the workspace this process runs in.
    pub workspace_id: Option<String>,
    /// `HERDR_BIN_PATH`: the `herdr` executable that runs the server around us.
    pub bin_path: Option<PathBuf>,
}

impl HerdrEnv {
    /// Reads the variables from `vars` (for example `std::env::vars_os()`).
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: Into<OsString>,
    {
        let mut env = Self::default();
        for (key, value) in vars {
            let value: OsString = value.into();
            if value.is_empty() {
                continue;
            }
            let text = || value.to_str().map(str::to_owned);
            match key.as_ref().to_str() {
                Some("HERDR_SOCKET_PATH") => env.socket_path = Some(PathBuf::from(&value)),
                Some("HERDR_SESSION") => env.session = text(),
                Some("XDG_CONFIG_HOME") => env.config_home = Some(PathBuf::from(&value)),
                Some("HOME") => env.home = Some(PathBuf::from(&value)),
                Some("HERDR_ENV") => env.in_herdr = value == "1",
                Some("HERDR_PANE_ID") => env.pane_id = text(),
                Some("HERDR_WORKSPACE_ID") => env.workspace_id = text(),
                Some("HERDR_BIN_PATH") => env.bin_path = Some(PathBuf::from(&value)),
                _ => {}
            }
        }
        env
    }

    /// Reads this process's environment once.
    pub fn from_process() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// Herdr's config directory: `$XDG_CONFIG_HOME/herdr`, else `~/.config/herdr`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        match (&self.config_home, &self.home) {
            (Some(xdg), _) if xdg.is_absolute() => Some(xdg.join("herdr")),
            (_, Some(home)) => Some(home.join(".config").join("herdr")),
            _ => None,
        }
    }
}

/// Where the socket path came from; it decides what a server we start must be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketSource {
    /// Given explicitly (configuration or command line).
    ExplicitPath,
    /// An explicitly named session.
    ExplicitSession(String),
    /// `HERDR_SOCKET_PATH`.
    EnvPath,
    /// `HERDR_SESSION`.
    EnvSession(String),
    /// The default session socket.
    Default,
}

/// A resolved socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketTarget {
    /// The API socket.
    pub path: PathBuf,
    /// Why this one.
    pub source: SocketSource,
}

impl SocketTarget {
    /// Resolves the socket in Herdr's order: `explicit_path`, `explicit_session`,
    /// `HERDR_SOCKET_PATH`, `HERDR_SESSION`, then the default.
    pub fn resolve(
        explicit_path: Option<&Path>,
        explicit_session: Option<&str>,
        env: &HerdrEnv,
    ) -> Result<Self, HerdrError> {
        if let Some(path) = explicit_path {
            return Ok(Self {
                path: path.to_path_buf(),
                source: SocketSource::ExplicitPath,
            });
        }
        if let Some(name) = explicit_session {
            return Ok(Self {
                path: session_socket(env, name)?,
                source: SocketSource::ExplicitSession(name.to_owned()),
            });
        }
        if let Some(path) = &env.socket_path {
            return Ok(Self {
                path: path.clone(),
                source: SocketSource::EnvPath,
            });
        }
        if let Some(name) = &env.session {
            return Ok(Self {
                path: session_socket(env, name)?,
                source: SocketSource::EnvSession(name.clone()),
            });
        }
        let dir = env.config_dir().ok_or(HerdrError::NoSocketPath)?;
        Ok(Self {
            path: dir.join(SOCKET_NAME),
            source: SocketSource::Default,
        })
    }

    /// The environment changes a `herdr server` we start needs so that it binds exactly this
    /// socket: `(name, Some(value))` sets, `(name, None)` removes. A named session is passed
    /// as a session (so Herdr keeps its session bookkeeping) with any socket override removed,
    /// because Herdr prefers `HERDR_SOCKET_PATH` over `HERDR_SESSION`.
    pub fn server_env(&self) -> Vec<(OsString, Option<OsString>)> {
        let path = || Some(self.path.clone().into_os_string());
        match &self.source {
            SocketSource::ExplicitPath | SocketSource::EnvPath => {
                vec![("HERDR_SOCKET_PATH".into(), path())]
            }
            SocketSource::ExplicitSession(name) | SocketSource::EnvSession(name) => vec![
                ("HERDR_SOCKET_PATH".into(), None),
                ("HERDR_SESSION".into(), Some(name.into())),
            ],
            SocketSource::Default => vec![
                ("HERDR_SOCKET_PATH".into(), None),
                ("HERDR_SESSION".into(), None),
            ],
        }
    }
}

/// `<config>/sessions/<name>/herdr.sock`, refusing names that would leave that directory.
fn session_socket(env: &HerdrEnv, name: &str) -> Result<PathBuf, HerdrError> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(HerdrError::BadSession(name.to_owned()));
    }
    let dir = env.config_dir().ok_or(HerdrError::NoSocketPath)?;
    Ok(dir.join("sessions").join(name).join(SOCKET_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> HerdrEnv {
        HerdrEnv::from_vars(vars.iter().copied())
    }

    #[test]
    fn follows_herdrs_order() {
        let all = env(&[
            ("HOME", "/home/u"),
            ("HERDR_SOCKET_PATH", "/run/h.sock"),
            ("HERDR_SESSION", "work"),
        ]);
        let explicit = SocketTarget::resolve(Some(Path::new("/x.sock")), Some("s"), &all).unwrap();
        assert_eq!(explicit.path, Path::new("/x.sock"));
        let session = SocketTarget::resolve(None, Some("s"), &all).unwrap();
        assert_eq!(
            session.path,
            Path::new("/home/u/.config/herdr/sessions/s/herdr.sock")
        );
        let from_env = SocketTarget::resolve(None, None, &all).unwrap();
        assert_eq!(from_env.path, Path::new("/run/h.sock"));
        assert_eq!(from_env.source, SocketSource::EnvPath);
        let env_session =
            SocketTarget::resolve(None, None, &env(&[("HOME", "/h"), ("HERDR_SESSION", "w")]))
                .unwrap();
        assert_eq!(
            env_session.path,
            Path::new("/h/.config/herdr/sessions/w/herdr.sock")
        );
        let default = SocketTarget::resolve(None, None, &env(&[("HOME", "/h")])).unwrap();
        assert_eq!(default.path, Path::new("/h/.config/herdr/herdr.sock"));
    }

    #[test]
    fn xdg_config_home_wins_over_home_when_absolute() {
        let xdg = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/cfg")]);
        let target = SocketTarget::resolve(None, None, &xdg).unwrap();
        assert_eq!(target.path, Path::new("/cfg/herdr/herdr.sock"));
        let relative = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "cfg")]);
        let target = SocketTarget::resolve(None, None, &relative).unwrap();
        assert_eq!(target.path, Path::new("/h/.config/herdr/herdr.sock"));
    }

    #[test]
    fn refuses_bad_sessions_and_missing_homes() {
        let home = env(&[("HOME", "/h")]);
        for bad in ["", "../x", "a/b", ".hidden"] {
            let err = SocketTarget::resolve(None, Some(bad), &home).unwrap_err();
            assert!(matches!(err, HerdrError::BadSession(_)), "{bad}: {err}");
        }
        let err = SocketTarget::resolve(None, None, &HerdrEnv::default()).unwrap_err();
        assert!(matches!(err, HerdrError::NoSocketPath));
    }

    #[test]
    fn reads_pane_facts_and_ignores_empty_values() {
        let inside = env(&[
            ("HERDR_ENV", "1"),
            ("HERDR_PANE_ID", "w1:p3"),
            ("HERDR_WORKSPACE_ID", "w1"),
            ("HERDR_SESSION", ""),
        ]);
        assert!(inside.in_herdr);
        assert_eq!(inside.pane_id.as_deref(), Some("w1:p3"));
        assert_eq!(inside.workspace_id.as_deref(), Some("w1"));
        assert_eq!(inside.session, None);
    }

    #[test]
    fn a_started_server_is_told_exactly_which_socket() {
        let home = env(&[("HOME", "/h")]);
        let path = SocketTarget::resolve(Some(Path::new("/s.sock")), None, &home).unwrap();
        assert_eq!(
            path.server_env(),
            vec![("HERDR_SOCKET_PATH".into(), Some("/s.sock".into()))]
        );
        let session = SocketTarget::resolve(None, Some("w"), &home).unwrap();
        assert!(
            session
                .server_env()
                .contains(&("HERDR_SESSION".into(), Some("w".into())))
        );
    }
}
