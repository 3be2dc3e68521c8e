//! Whether this machine can make a sheep's sandbox: bubblewrap installed, and able to make the
//! namespaces it needs. The broker asks before a confined spawn (so a spawn that cannot be
//! confined is refused, not run unconfined), `shepherd hosts check` asks on each host, and the
//! supervisor asks again where the sheep runs.

// The probe runs the real bwrap: whether user namespaces work shows only by trying.
#![allow(clippy::disallowed_types)]

/// Why a sandbox cannot be made on this machine, as one line saying what is missing and how to
/// install it; `None` when bubblewrap runs here.
pub fn unavailable() -> Option<String> {
    let probe = std::process::Command::new("bwrap")
        // The namespaces and locks every sandbox is made with (`shepherd-sheep`'s bwrap line).
        .args([
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match probe {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(
            "bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap` \
             (Debian, Ubuntu), `dnf install bubblewrap` (Fedora) or your system's package"
                .to_owned(),
        ),
        Err(err) => Some(format!("bubblewrap (bwrap) could not be run: {err}")),
        Ok(out) if out.status.success() => None,
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            let inside = std::env::var("SHEPHERD_SANDBOX").is_ok_and(|mode| mode != "off");
            Some(if inside {
                format!(
                    "this herd runs inside a sheep's own sandbox, where no sandbox can be made \
                     ({said}): a confined sheep may make no user namespaces; its herd's sheep \
                     run confined with it, as --sandbox off"
                )
            } else if said.contains("disable-userns") {
                format!(
                    "bubblewrap (bwrap) is too old here ({said}): Shepherd's sandbox needs \
                     bubblewrap 0.8 or later (`--disable-userns`)"
                )
            } else {
                format!(
                    "bubblewrap (bwrap) cannot make a sandbox here ({said}); user namespaces \
                     may be off: enable them with `sysctl kernel.unprivileged_userns_clone=1` \
                     or run as a user allowed to"
                )
            })
        }
    }
}
