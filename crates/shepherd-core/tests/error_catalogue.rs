//! The error catalogue, its documentation and the pi extension agree.
//!
//! `docs/errors.md` is what people and scripts read to learn the codes; the pi extension
//! branches on some of them. Both are text outside the compiler's reach, so these tests hold
//! them to the catalogue: the table in the docs is the catalogue's own rendering, and every code
//! the extension names exists.

use std::path::{Path, PathBuf};

use shepherd_core::error_code::{ErrorCode, markdown_table};

const START: &str = "<!-- catalogue:start -->\n";
const END: &str = "<!-- catalogue:end -->";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn docs_errors_md_lists_every_code_as_the_catalogue_says() {
    let path = repo().join("docs/errors.md");
    let text = fs_err::read_to_string(&path).expect("docs/errors.md");
    let (head, rest) = text
        .split_once(START)
        .expect("docs/errors.md has the start marker");
    let (_, tail) = rest
        .split_once(END)
        .expect("docs/errors.md has the end marker");
    let expected = format!("{head}{START}{}{END}{tail}", markdown_table());
    if std::env::var_os("SHEPHERD_UPDATE_DOCS").is_some() {
        fs_err::write(&path, &expected).expect("write docs/errors.md");
        return;
    }
    assert!(
        text == expected,
        "docs/errors.md is out of date with the catalogue (crates/shepherd-core/src/error_code.rs); \
         regenerate it with `SHEPHERD_UPDATE_DOCS=1 cargo nextest run -p shepherd-core --test error_catalogue`"
    );
    for code in ErrorCode::ALL {
        assert!(text.contains(&format!("| `{code}` |")), "{code} missing");
    }
}

#[test]
fn every_code_the_pi_extension_names_is_in_the_catalogue() {
    let mut named = Vec::new();
    let mut stack = vec![repo().join("integrations/pi/extensions")];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).expect("extension directory") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "ts") {
                let text = fs_err::read_to_string(&path).expect("extension file");
                for pattern in ["code === \"", "code: \""] {
                    for (at, _) in text.match_indices(pattern) {
                        let rest = &text[at + pattern.len()..];
                        let code = &rest[..rest.find('"').expect("closing quote")];
                        // Node's own error codes (`ENOENT`) are upper case; ours never are.
                        if code.bytes().any(|b| b.is_ascii_uppercase()) {
                            continue;
                        }
                        named.push((path.display().to_string(), code.to_owned()));
                    }
                }
            }
        }
    }
    assert!(
        named.len() >= 3,
        "the scan finds the extension's codes: {named:?}"
    );
    let unknown: Vec<_> = named
        .iter()
        .filter(|(_, code)| code.parse::<ErrorCode>().is_err())
        .collect();
    assert!(unknown.is_empty(), "codes the catalogue lacks: {unknown:?}");
}
