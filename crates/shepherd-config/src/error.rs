//! The one error type of file access in this crate.
//!
//! File operations go through `fs-err`, whose messages already name the operation and the path
//! (`failed to open file `…`: …`), so [`ConfigError::Io`] shows its source as is and keeps the
//! path as a field for programs. A file that exists but does not hold what Shepherd wrote is
//! [`ConfigError::Malformed`]; Shepherd refuses to overwrite such a file rather than lose what a
//! person put there.

use shepherd_core::error_code::ErrorCode;
use std::io;
use std::path::{Path, PathBuf};

/// A file could not be read or written, or does not hold what it should.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading or writing failed.
    #[error("{source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The failure, naming the path.
        #[source]
        source: io::Error,
    },
    /// The file exists but is not in the expected format.
    #[error("{} is {reason}; fix or remove it", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, e.g. `not valid JSON (…)`.
        reason: String,
    },
}

impl ConfigError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Io { .. } => ErrorCode::Io,
            Self::Malformed { .. } => ErrorCode::MalformedFile,
        }
    }
}
