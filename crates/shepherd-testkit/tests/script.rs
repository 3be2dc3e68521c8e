//! Builds `shepherd-test-sheep` for the workspace's integration tests and checks that it
//! refuses a bad script with a clear message.

#[test]
fn bad_script_is_refused() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_shepherd-test-sheep"))
        .args(["--on-task", "jump around"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown step"), "{stderr}");
}
