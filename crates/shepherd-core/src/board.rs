//! Where a herd's web board is served: its access file's name in the herd's state directory,
//! its host name, and the address read back from that file, so the board and whatever links to
//! it (a notification) agree on one place without the link ever carrying a token.

use serde::Deserialize;

/// The board's access file, in the herd's state directory (`shepherd web` writes it).
pub const ACCESS_FILE: &str = "web.json";

/// The board's host name for `label`: `herd-<label>.localhost`, which browsers resolve to
/// loopback and keep cookies for apart from every other local server.
pub fn host_name(label: &str) -> String {
    format!("herd-{label}.localhost")
}

/// The part of the access file a link needs.
#[derive(Deserialize)]
struct Address {
    label: String,
    #[serde(default)]
    port: Option<u16>,
}

/// The board's base URL (`http://herd-<label>.localhost:<port>`) from the access file's text,
/// when it names a port the board was served on.
pub fn board_url(access_file_text: &str) -> Option<String> {
    let address: Address = serde_json::from_str(access_file_text).ok()?;
    let port = address.port?;
    let label_ok = !address.label.is_empty()
        && address
            .label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    label_ok.then(|| format!("http://{}:{port}", host_name(&address.label)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_needs_a_label_and_a_port_and_nothing_else_of_the_file() {
        assert_eq!(
            board_url(r#"{"format":1,"label":"0a1b","csrf":"x","port":8421,"sessions":[]}"#)
                .as_deref(),
            Some("http://herd-0a1b.localhost:8421")
        );
        assert_eq!(board_url(r#"{"format":1,"label":"0a1b","csrf":"x"}"#), None);
        assert_eq!(board_url(r#"{"label":"a.b/evil","port":1}"#), None);
        assert_eq!(board_url("not json"), None);
    }
}
