//! Running the real pi coding agent in tests, offline and hermetic.
//!
//! Shepherd's first integration is pi, and its behaviour (event order, run-finished signals,
//! what it sends the model) is only known for sure by running it. `scripts/setup` installs two
//! pinned versions into `.tools/`; this module finds them ([`locate`], [`available`],
//! [`installed_or_skip`]), builds an isolated pi environment wired to a
//! [`FakeLlm`](crate::fake_llm::FakeLlm) ([`PiEnv`]), runs pi with deadlines ([`run`]) and
//! drives its RPC mode ([`PiRpc`]). Nothing pi writes lands outside the environment's temporary
//! directory, and no network is used (`PI_OFFLINE=1`).

mod env;
mod process;
mod rpc;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use env::{
    ANTHROPIC_PROVIDER, API_KEY, HERMETIC_ARGS, PROVIDER, PiEnv, PiEnvBuilder, REMOVED_VARS,
    THINKING_PROVIDER,
};
pub use process::run;
pub use rpc::PiRpc;

/// A pi version that `scripts/setup` installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PiVersion {
    /// `@mariozechner/pi-coding-agent` 0.73.1, on the machine's node (>= 20.6).
    V0_73,
    /// `@earendil-works/pi-coding-agent` 1.6.0, on node 22 from the npm registry.
    V1,
}

impl PiVersion {
    /// Every version, oldest first.
    pub const ALL: [Self; 2] = [Self::V0_73, Self::V1];

    /// The exact version `scripts/setup` pins.
    #[must_use]
    pub fn pinned(self) -> &'static str {
        match self {
            Self::V0_73 => "0.73.1",
            Self::V1 => "1.6.0",
        }
    }

    /// The environment variable that points at another binary of this version.
    #[must_use]
    pub fn env_var(self) -> &'static str {
        match self {
            Self::V0_73 => "SHEPHERD_PI_073",
            Self::V1 => "SHEPHERD_PI_1",
        }
    }

    /// The wrapper's name in `.tools/bin`.
    #[must_use]
    pub fn wrapper(self) -> &'static str {
        match self {
            Self::V0_73 => "pi-0.73",
            Self::V1 => "pi-1",
        }
    }

    /// Whether a run ends with `agent_settled` (1.x). On 0.73 the end is an `agent_end` that
    /// no `auto_retry_start` or `compaction_start` follows.
    #[must_use]
    pub fn emits_agent_settled(self) -> bool {
        self == Self::V1
    }
}

impl fmt::Display for PiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pi {}", self.pinned())
    }
}

/// What can go wrong around pi.
#[derive(Debug, thiserror::Error)]
pub enum PiError {
    /// The binary is not there.
    #[error(
        "{version} is not installed at {}: run scripts/setup (or set {} to a pi binary)",
        path.display(), version.env_var()
    )]
    NotInstalled {
        /// Which version.
        version: PiVersion,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: io::Error,
    },
    /// A deadline passed; pi was killed.
    #[error("timed out after {waited:?} waiting for {what}; pi's stderr:\n{stderr}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        waited: Duration,
        /// What pi wrote on stderr so far.
        stderr: String,
    },
    /// pi answered something a test did not expect.
    #[error("unexpected from pi: {0}")]
    Protocol(String),
    /// pi's stdout closed (it exited) before what was awaited arrived.
    #[error("pi exited while waiting for {what}; pi's stderr:\n{stderr}")]
    Exited {
        /// What was awaited.
        what: String,
        /// What pi wrote on stderr.
        stderr: String,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> PiError {
    let what = what.into();
    move |source| PiError::Io { what, source }
}

/// An installed pi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiBinary {
    /// Its version.
    pub version: PiVersion,
    /// The program to run.
    pub path: PathBuf,
}

/// The repository's `.tools` directory, where `scripts/setup` installs pi.
#[must_use]
pub fn tools_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // crates/shepherd-testkit -> the repository root.
    let root = crate_dir.ancestors().nth(2).unwrap_or(crate_dir);
    root.join(".tools")
}

/// Finds one version: `$SHEPHERD_PI_073` / `$SHEPHERD_PI_1` when set, else the wrapper in
/// `.tools/bin`.
///
/// # Errors
/// [`PiError::NotInstalled`] when the file is not there.
pub fn locate(version: PiVersion) -> Result<PiBinary, PiError> {
    let path = std::env::var_os(version.env_var())
        .filter(|value| !value.is_empty())
        .map_or_else(
            || tools_dir().join("bin").join(version.wrapper()),
            PathBuf::from,
        );
    if path.is_file() {
        Ok(PiBinary { version, path })
    } else {
        Err(PiError::NotInstalled { version, path })
    }
}

/// Every installed version.
#[must_use]
pub fn available() -> Vec<PiBinary> {
    PiVersion::ALL
        .into_iter()
        .filter_map(|version| locate(version).ok())
        .collect()
}

/// For a test that needs `version`: the binary, or `None` after printing one line saying the
/// test is skipped. With `SHEPHERD_REQUIRE_PI=1` a missing pi fails the test instead.
///
/// # Panics
/// When pi is missing and `SHEPHERD_REQUIRE_PI=1`.
#[must_use]
pub fn installed_or_skip(version: PiVersion, test: &str) -> Option<PiBinary> {
    match locate(version) {
        Ok(pi) => Some(pi),
        Err(err) if std::env::var_os("SHEPHERD_REQUIRE_PI").is_some_and(|v| v == "1") => {
            panic!("{test}: {err}")
        }
        Err(err) => {
            println!("skipping {test}: {err}");
            None
        }
    }
}

/// Runs `body` with `version` when it is installed; otherwise prints one line and returns (see
/// [`installed_or_skip`]). Used by [`pi_tests!`](crate::pi_tests).
pub fn with_pi(version: PiVersion, test: &str, body: impl FnOnce(&PiBinary)) {
    if let Some(pi) = installed_or_skip(version, test) {
        body(&pi);
    }
}

/// Defines one test, `pi_1`, on the newest pi for each named function `fn name(pi: &PiBinary)`:
/// for a scenario about Shepherd's own behaviour, where the pi version only carries it. What
/// differs between the versions (the extension's API, the system prompt, how a run ends, steering,
/// the TUI, resuming, models, rate-limit errors) runs on both through [`pi_tests!`](crate::pi_tests),
/// so the two versions are covered pairwise rather than every scenario twice.
#[macro_export]
macro_rules! pi_1_tests {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            $crate::pi_test!(pi_1, V1, $name);
        }
    )+};
}

/// Defines one test per pi version for each named function `fn name(pi: &PiBinary)`: a module
/// `name` with tests `pi_0_73` and `pi_1`, each skipped with one printed line when that
/// version is not installed.
///
/// ```ignore
/// fn print_text_turn(pi: &PiBinary) { /* ... */ }
/// shepherd_testkit::pi_tests!(print_text_turn);
/// ```
#[macro_export]
macro_rules! pi_tests {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            $crate::pi_test!(pi_0_73, V0_73, $name);
            $crate::pi_test!(pi_1, V1, $name);
        }
    )+};
}

/// One test, `$test`, running `super::$name` on pi `$version` (inside the module
/// [`pi_tests!`](crate::pi_tests) and [`pi_1_tests!`](crate::pi_1_tests) make).
#[doc(hidden)]
#[macro_export]
macro_rules! pi_test {
    ($test:ident, $version:ident, $name:ident) => {
        #[test]
        fn $test() {
            $crate::pi::with_pi(
                $crate::pi::PiVersion::$version,
                concat!(module_path!(), "::", stringify!($test)),
                super::$name,
            );
        }
    };
}
