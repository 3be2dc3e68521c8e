//! The commit message a landing carries: a subject naming the branch and whose work it is,
//! then trailers a person or a script can read back (`git log --format=%(trailers)`): the
//! agent, the first line of its task, its note, and the sheep that resolved or fixed it.

/// What a landing's message says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Landing<'a> {
    /// The branch.
    pub branch: &'a str,
    /// Whose work it is (display name).
    pub owner: Option<&'a str>,
    /// The task its sheep was given.
    pub task: Option<&'a str>,
    /// Its note, relative to the project.
    pub note: Option<&'a str>,
    /// The sheep that resolved its conflict (display name).
    pub resolver: Option<&'a str>,
    /// The sheep that fixed its check (display names).
    pub fixers: &'a [String],
}

/// One line of `text`, as a trailer's value takes it: its first line, trimmed, at most 200
/// characters.
fn trailer_value(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    line.unwrap_or_default().chars().take(200).collect()
}

/// The message: `Land <branch> (<owner>)`, a blank line, then a trailer per fact known.
pub fn message(landing: &Landing<'_>) -> String {
    let mut out = match landing.owner {
        Some(owner) => format!("Land {} ({})", landing.branch, trailer_value(owner)),
        None => format!("Land {}", landing.branch),
    };
    let mut trailers = Vec::new();
    let mut add = |key: &str, value: Option<&str>| {
        if let Some(value) = value.map(trailer_value).filter(|v| !v.is_empty()) {
            trailers.push(format!("{key}: {value}"));
        }
    };
    add("Shepherd-Agent", landing.owner);
    add("Shepherd-Task", landing.task);
    add("Shepherd-Note", landing.note);
    add("Shepherd-Resolver", landing.resolver);
    for fixer in landing.fixers {
        add("Shepherd-Fixer", Some(fixer));
    }
    if !trailers.is_empty() {
        out.push_str("\n\n");
        out.push_str(&trailers.join("\n"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_work_and_its_trailers_are_one_line_each() {
        let fixers = ["fixer (fix): login".to_owned()];
        let text = message(&Landing {
            branch: "shepherd/run-1-t1-worker",
            owner: Some("worker: login"),
            task: Some("fix the login\nand test it"),
            note: Some(".shepherd/sessions/0001-x/worker-01.md"),
            resolver: None,
            fixers: &fixers,
        });
        assert_eq!(
            text,
            "Land shepherd/run-1-t1-worker (worker: login)\n\n\
             Shepherd-Agent: worker: login\n\
             Shepherd-Task: fix the login\n\
             Shepherd-Note: .shepherd/sessions/0001-x/worker-01.md\n\
             Shepherd-Fixer: fixer (fix): login\n"
        );
        assert_eq!(
            message(&Landing {
                branch: "shepherd/x",
                ..Landing::default()
            }),
            "Land shepherd/x\n"
        );
    }
}
