//! The command line typed into a Herdr pane's shell. Herdr panes run the user's interactive
//! shell and take no argv at creation, so the supervisor is started by typing one line; every
//! word is single-quoted so paths and arguments with spaces, quotes or `$` reach the
//! supervisor unchanged in POSIX shells (and in fish, which reads `'\''` the same way).
//! Secrets never appear here: they travel in the pane's creation environment.

use crate::LaunchSpec;

/// `'<shepherd>' supervise --grace-ms <ms> … -- '<program>' '<arg>'…`: the supervisor's own
/// options are quoted only when they need it, the sheep's program always.
pub(crate) fn supervisor_command(spec: &LaunchSpec, shepherd_exe: &str) -> String {
    let mut words = vec![quote(shepherd_exe)];
    let mut program = false;
    for word in spec.supervisor_args(&[]) {
        let plain = !program
            && !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
        words.push(if plain { word.clone() } else { quote(&word) });
        program |= word == "--";
    }
    words.join(" ")
}

/// Single-quotes `word` for a POSIX shell.
pub(crate) fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_every_word_and_survives_a_real_shell() {
        let word = r#"it's a "test" $HOME `x` \n"#;
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote(word)))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(output.stdout).unwrap(), word);
    }
}
