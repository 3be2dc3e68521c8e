use super::*;

fn file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("web.json");
    (dir, file)
}

#[test]
fn the_entry_token_opens_one_session_and_is_spent() {
    let (_dir, file) = file();
    let access = Access::open(&file, false).unwrap();
    let token = access.entry_token().unwrap();
    assert_eq!(access.trade("wrong").unwrap(), Trade::Refused);
    let Trade::Session(session) = access.trade(&token).unwrap() else {
        panic!("the entry token is traded");
    };
    assert!(access.signed_in(&session));
    assert!(!access.signed_in(&token), "the token is not a session");
    assert_eq!(access.trade(&token).unwrap(), Trade::Refused, "spent");
    assert_eq!(access.entry_token(), None);
}

#[test]
fn a_restart_keeps_sessions_host_name_and_csrf_but_not_the_token() {
    let (_dir, file) = file();
    let first = Access::open(&file, false).unwrap();
    let old_token = first.entry_token().unwrap();
    let Trade::Session(session) = first.trade(&old_token).unwrap() else {
        panic!("traded");
    };
    first.remember_port(4321).unwrap();
    let again = Access::open(&file, false).unwrap();
    assert!(again.signed_in(&session));
    assert_eq!(again.host_name(), first.host_name());
    assert_eq!(again.csrf(), first.csrf());
    assert_eq!(again.last_port(), Some(4321));
    assert_eq!(again.trade(&old_token).unwrap(), Trade::Refused);
    assert_ne!(again.entry_token(), Some(old_token));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(&session),
        "the file keeps digests, not secrets"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn revoking_forgets_every_session() {
    let (_dir, file) = file();
    let first = Access::open(&file, false).unwrap();
    let Trade::Session(session) = first.trade(&first.entry_token().unwrap()).unwrap() else {
        panic!("traded");
    };
    let revoked = Access::open(&file, true).unwrap();
    assert!(!revoked.signed_in(&session));
    assert!(
        !first.signed_in(&session),
        "the other server reads the file again"
    );
}

#[test]
fn a_session_made_by_another_server_of_the_herd_is_known() {
    let (_dir, file) = file();
    let one = Access::open(&file, false).unwrap();
    let two = Access::open(&file, false).unwrap();
    let Trade::Session(session) = two.trade(&two.entry_token().unwrap()).unwrap() else {
        panic!("traded");
    };
    assert!(one.signed_in(&session));
    let Trade::Session(other) = one.trade(&one.entry_token().unwrap()).unwrap() else {
        panic!("traded");
    };
    assert!(
        two.signed_in(&other) && two.signed_in(&session),
        "neither write lost the other's"
    );
}

#[test]
fn an_old_session_has_expired() {
    let (_dir, file) = file();
    let access = Access::open(&file, false).unwrap();
    let Trade::Session(session) = access.trade(&access.entry_token().unwrap()).unwrap() else {
        panic!("traded");
    };
    access
        .update(|stored| {
            stored.sessions[0].made_ms -= SESSION_LIFE.as_millis() as u64 + 1;
        })
        .unwrap();
    assert!(!access.signed_in(&session));
}

#[test]
fn a_file_that_is_not_ours_is_refused_naming_it() {
    let (_dir, file) = file();
    std::fs::write(&file, "{\"sessions\": 3}").unwrap();
    let err = Access::open(&file, false).unwrap_err().to_string();
    assert!(
        err.contains("web.json") && err.contains("remove it"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"sessions\": 3}",
        "unchanged"
    );
}
