use shepherd_core::land::preview::{BranchPreview, CommitLine};
use shepherd_core::land::{BranchLanding, BranchState, Strategy};

use super::*;

fn preview(lands: bool, patch: &str) -> MergePreview {
    MergePreview {
        target: "main".into(),
        strategy: Strategy::Merge,
        branches: vec![BranchPreview {
            branch: "shepherd/w-1".into(),
            landing_ref: "shepherd/w-1".into(),
            owner: Some("writer-01".into()),
            lands,
            why: (!lands).then(|| "already landed at 0123456789 by merge-1".into()),
            commits: vec![CommitLine {
                commit: "0123456789abcdef".into(),
                subject: "write <a>".into(),
            }],
            diffstat: " a | 1 +\n".into(),
            patch: Some(patch.into()),
            ..BranchPreview::default()
        }],
        ..MergePreview::default()
    }
}

const PATCH: &str = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-base\n+</pre><script>alert(1)</script>\n context\n";

#[test]
fn a_patch_is_shown_line_by_line_with_nothing_of_it_as_markup() {
    let html = patch_html(PATCH);
    assert!(!html.contains("<script>"), "{html}");
    assert!(
        html.contains(
            r#"<span class="d-add">+&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;</span>"#
        ),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="d-del">-base</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="d-hunk">@@ -1 +1 @@</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="d-file">+++ b/a</span>"#),
        "{html}"
    );
    assert!(html.contains("\n context\n"), "{html}");
}

#[test]
fn a_branch_that_lands_offers_land_and_discard_and_shows_its_work() {
    let preview = preview(true, PATCH);
    let html = branch_body("shepherd/w-1", Ok(&preview), None, Some("test -f a"), "c");
    assert!(
        html.contains("Lands into <code>main</code> by merge."),
        "{html}"
    );
    assert!(html.contains("writer-01's work"), "{html}");
    assert!(
        html.contains("<code>0123456789</code> write &lt;a&gt;"),
        "{html}"
    );
    assert!(html.contains(r#"<pre class="stat"> a | 1 +"#), "{html}");
    assert!(html.contains(r#"name="check" value="test -f a""#), "{html}");
    assert!(html.contains("<button>Land into main</button>"), "{html}");
    assert!(html.contains(r#"name="kind" value="discard""#), "{html}");
    assert!(!html.contains("<script>"), "{html}");
}

#[test]
fn a_landed_branch_says_where_and_offers_nothing_to_do() {
    let preview = preview(false, "");
    let html = branch_body("shepherd/w-1", Ok(&preview), None, None, "c");
    assert!(
        html.contains("already landed at 0123456789 by merge-1"),
        "{html}"
    );
    assert!(!html.contains(r#"value="land""#), "{html}");
    assert!(!html.contains(r#"value="discard""#), "{html}");
}

#[test]
fn a_running_landing_shows_its_words_and_a_cancel_and_no_second_land() {
    let preview = preview(true, PATCH);
    let merge = MergeView {
        merge_id: "merge-7".into(),
        target: "main".into(),
        branches: vec![BranchLanding {
            branch: "shepherd/w-1".into(),
            state: BranchState::Checking,
            ..BranchLanding::default()
        }],
        ..MergeView::default()
    };
    let html = branch_body("shepherd/w-1", Ok(&preview), Some(&merge), None, "c");
    assert!(
        html.contains(r#"data-merge="merge-7" data-state="running""#),
        "{html}"
    );
    assert!(html.contains(r#"name="merge" value="merge-7""#), "{html}");
    assert!(!html.contains(r#"value="land""#), "{html}");
}

#[test]
fn a_branch_the_broker_cannot_preview_says_why() {
    let html = branch_body("shepherd/nope", Err("no branch <nope>"), None, None, "c");
    assert!(
        html.contains(r#"<p class="error">no branch &lt;nope&gt;</p>"#),
        "{html}"
    );
}
