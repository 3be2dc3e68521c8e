//! The board page a notification links to, read from the board's access file each time (the
//! board may have started, or moved to another port, since the last notification).

use std::path::Path;

use shepherd_core::board::{ACCESS_FILE, board_url};

/// The board's base URL for the herd whose state directory is `state_dir`, when its board has
/// been served: `None` until `shepherd web` ran once for it.
pub fn url(state_dir: &Path) -> Option<String> {
    let text = fs_err::read_to_string(state_dir.join(ACCESS_FILE)).ok()?;
    board_url(&text)
}
