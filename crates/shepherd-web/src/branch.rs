//! A branch's page: what landing it would bring (its commits, diffstat and patch, rendered line
//! by line), whether it would land or why not, the landing under way or done, and the forms
//! that land it, discard it or cancel its landing. Pure: the preview and the merge come in,
//! HTML comes out; every text from git or the herd goes through [`esc`].

use std::fmt::Write as _;

use shepherd_client::land_words::merge_text;
use shepherd_core::land::MergeView;
use shepherd_core::land::preview::{MergePreview, PATCH_LIMIT};

use crate::html::esc;

/// The class a patch line is shown with: a file's header, a hunk's, an added or removed line,
/// or context.
fn line_class(line: &str) -> Option<&'static str> {
    const FILE: [&str; 10] = [
        "diff --git ",
        "index ",
        "--- ",
        "+++ ",
        "new file mode",
        "deleted file mode",
        "similarity index",
        "rename from",
        "rename to",
        "Binary files",
    ];
    if FILE.iter().any(|prefix| line.starts_with(prefix)) {
        Some("file")
    } else if line.starts_with("@@") {
        Some("hunk")
    } else if line.starts_with('+') {
        Some("add")
    } else if line.starts_with('-') {
        Some("del")
    } else {
        None
    }
}

/// `patch` as HTML: one line each, classed so added and removed lines stand out.
pub(crate) fn patch_html(patch: &str) -> String {
    let mut html = String::from(r#"<pre class="diff">"#);
    for line in patch.lines() {
        match line_class(line) {
            Some(class) => {
                let _ = writeln!(html, r#"<span class="d-{class}">{}</span>"#, esc(line));
            }
            None => {
                let _ = writeln!(html, "{}", esc(line));
            }
        }
    }
    html.push_str("</pre>");
    html
}

/// A form the page sends to `/act`, with its hidden fields and its visible part.
fn form(csrf: &str, class: &str, hidden: &[(&str, &str)], inner: &str) -> String {
    let mut html = format!(
        r#"<form class="act {class}" method="post" action="/act"><input type="hidden" name="csrf" value="{}">"#,
        esc(csrf)
    );
    for (name, value) in hidden {
        let _ = write!(
            html,
            r#"<input type="hidden" name="{name}" value="{}">"#,
            esc(value)
        );
    }
    html.push_str(inner);
    html.push_str("</form>");
    html
}

/// The landing of the branch started from this server: the merge's own words, and a cancel
/// while it runs.
fn landing(merge: &MergeView, csrf: &str) -> String {
    let state = if merge.finished { "over" } else { "running" };
    let heading = if merge.discard { "Discard" } else { "Landing" };
    let mut html = format!(
        r#"<section class="landing" data-merge="{id}" data-state="{state}"><h2>{heading} {id}</h2><pre class="merge">{text}</pre>"#,
        id = esc(&merge.merge_id),
        text = esc(&merge_text(merge)),
    );
    if !merge.finished {
        html.push_str(&form(
            csrf,
            "cancel",
            &[("kind", "cancel"), ("merge", &merge.merge_id)],
            "<button>Cancel this landing</button>",
        ));
    }
    html.push_str("</section>");
    html
}

/// The branch page's body. `preview` is the broker's preview of landing `branch` alone, or why
/// there is none; `merge` the landing started here, if any; `check` the check its form offers.
pub(crate) fn branch_body(
    branch: &str,
    preview: Result<&MergePreview, &str>,
    merge: Option<&MergeView>,
    check: Option<&str>,
    csrf: &str,
) -> String {
    let mut html = format!(r#"<h1>Branch <code>{}</code></h1>"#, esc(branch));
    if let Some(merge) = merge {
        html.push_str(&landing(merge, csrf));
    }
    let preview = match preview {
        Ok(preview) => preview,
        Err(why) => {
            let _ = write!(html, r#"<p class="error">{}</p>"#, esc(why));
            return html;
        }
    };
    let Some(one) = preview.branches.first() else {
        html.push_str(r#"<p class="why">Nothing to land.</p>"#);
        return html;
    };
    let mut meta = Vec::new();
    if let Some(owner) = &one.owner {
        meta.push(format!("{}'s work", esc(owner)));
    }
    if let Some(status) = &one.task_status {
        meta.push(format!("its task: {}", esc(status)));
    }
    if !meta.is_empty() {
        let _ = write!(html, r#"<p class="meta">{}</p>"#, meta.join(" · "));
    }
    if one.lands {
        let _ = write!(
            html,
            r#"<p class="lands">Lands into <code>{}</code> by {}.</p>"#,
            esc(&preview.target),
            esc(preview.strategy.as_str())
        );
    } else if let Some(why) = &one.why {
        let _ = write!(html, r#"<p class="why">{}</p>"#, esc(why));
    }
    if !one.conflicts.is_empty() {
        let _ = write!(
            html,
            r#"<p class="error">Conflicts with {} in {}: landing it stops the queue there.</p>"#,
            esc(&preview.target),
            esc(&one.conflicts.join(", "))
        );
    }
    if !one.commits.is_empty() {
        html.push_str(r#"<h2>Commits</h2><ul class="commits">"#);
        for commit in &one.commits {
            let short = commit.commit.get(..10).unwrap_or(&commit.commit);
            let _ = write!(
                html,
                "<li><code>{}</code> {}</li>",
                esc(short),
                esc(&commit.subject)
            );
        }
        html.push_str("</ul>");
    }
    if !one.diffstat.is_empty() {
        let _ = write!(
            html,
            r#"<h2>Changes</h2><pre class="stat">{}</pre>"#,
            esc(&one.diffstat)
        );
    }
    if let Some(patch) = one.patch.as_deref().filter(|p| !p.is_empty()) {
        html.push_str("<h2>Patch</h2>");
        html.push_str(&patch_html(patch));
        if one.patch_cut {
            let _ = write!(
                html,
                r#"<p class="why">The patch is cut at {} KiB: <code>git diff {}...{}</code> shows all of it.</p>"#,
                PATCH_LIMIT / 1024,
                esc(&preview.target),
                esc(&one.landing_ref)
            );
        }
    }
    let running = merge.is_some_and(|m| !m.finished);
    if one.lands && !running {
        html.push_str("<h2>Act</h2>");
        let check = check.map(esc).unwrap_or_default();
        html.push_str(&form(
            csrf,
            "land",
            &[("kind", "land"), ("branch", branch)],
            &format!(
                r#"<label>Check <input name="check" value="{check}" placeholder="a command that must pass after the merge (optional)" autocomplete="off"></label><button>Land into {}</button>"#,
                esc(&preview.target)
            ),
        ));
        html.push_str(&form(
            csrf,
            "discard",
            &[("kind", "discard"), ("branch", branch)],
            r#"<label><input type="checkbox" name="confirm" value="yes" required> throw this work away (its branch and preserved changes)</label><button>Discard</button>"#,
        ));
    }
    html
}

#[cfg(test)]
#[path = "branch/tests.rs"]
mod tests;
