use super::*;

#[test]
fn scripts_handlers_and_javascript_links_are_removed() {
    let html = render(
        "# Hi\n\n<script>window.pwned = 1</script>\n\n<img src=x onerror=\"window.pwned=2\">\n\n[click](javascript:alert(1)) <a href=\"javascript:alert(2)\">two</a>\n\n<iframe src=\"https://example.com\"></iframe>\n",
    );
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<iframe"), "{html}");
    assert!(!html.contains(r#"<a href="javascript"#), "{html}");
    assert!(
        html.contains("&lt;script&gt;window.pwned = 1&lt;/script&gt;"),
        "shown as text: {html}"
    );
    assert!(
        html.contains(r##"<a href="#unsafe-link-removed">click</a>"##),
        "{html}"
    );
    assert!(html.contains("<h1>Hi</h1>"), "{html}");
}

#[test]
fn only_relative_web_and_mail_urls_are_kept() {
    for url in [
        "./a.md",
        "../b.md#x",
        "https://example.com/",
        "HTTP://x",
        "mailto:a@b",
        "a/b:c",
        "?q=1",
    ] {
        assert!(safe_url(url), "{url}");
    }
    for url in [
        "javascript:alert(1)",
        "JavaScript:x",
        "java\tscript:x",
        " javascript:x",
        "data:text/html,x",
        "vbscript:x",
        "file:///etc/passwd",
    ] {
        assert!(!safe_url(url), "{url}");
    }
}

#[test]
fn relative_links_are_kept_as_written() {
    let html = render("[next](./worker-01.md) and [code](../../../src/main.rs)\n");
    assert!(html.contains(r#"href="./worker-01.md""#), "{html}");
    assert!(html.contains(r#"href="../../../src/main.rs""#), "{html}");
}

#[test]
fn frontmatter_folds_into_a_summary_with_the_table_behind_it() {
    let html = render(
        "---\nartifactSessionVersion: 1\nordinal: 1\nstatus: completed\nagent: worker\nstarted: \"2026-12-06T18:05:48Z\"\nfiles:\n  - a.rs\n---\n# Note\n",
    );
    assert!(
        html.starts_with(r#"<details class="frontmatter"><summary><span class="field-agent">worker</span> · <span class="field-status">completed</span> · <span class="field-started">2026-12-06T18:05:48Z</span></summary><table class="frontmatter">"#),
        "{html}"
    );
    assert!(html.contains("<th>status</th><td>completed</td>"), "{html}");
    assert!(html.contains("<th>ordinal</th><td>1</td>"), "{html}");
    assert!(html.contains("<th>files</th><td>- a.rs</td>"), "{html}");
    assert!(html.contains("</table></details><h1>Note</h1>"), "{html}");
}

#[test]
fn the_note_formats_comments_are_left_out_and_other_html_shown_as_text() {
    let html = render(
        "# Worker 01\n\n<!-- Agent's note or agent-maintained report follows. -->\n\nText <!-- inline --> here.\n\n<!--\nspans\nlines\n-->\n\n<!-- Shepherd orchestration -->\n## Shepherd orchestration\n\n- **Final status:** completed\n\n<b>bold</b>\n",
    );
    assert!(
        !html.contains("&lt;!--") && !html.contains("<!--"),
        "{html}"
    );
    assert!(!html.contains("spans"), "{html}");
    assert!(html.contains("<p>Text  here.</p>"), "{html}");
    assert!(
        html.contains(
            r#"<details class="orchestration"><summary>Shepherd orchestration</summary>"#
        ),
        "the note format's orchestration section is folded: {html}"
    );
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;"), "{html}");
}

#[test]
fn the_flow_is_drawn_and_orchestration_folded() {
    let text = "# S\n\n## Flow\n\n```text\n[scout-01](./scout-01.md) → [planner-01](./planner-01.md)\nparallel: [a](./a.md) · [b](./b.md)\n```\n\n## Orchestration\n\nlong details\n\n## Notes\n\n1. x\n";
    let html = render(text);
    assert!(html.contains(r#"<div class="flow">"#), "{html}");
    assert_eq!(html.matches(r#"class="flow-row""#).count(), 2, "{html}");
    assert!(
        html.contains(r#"<span class="flow-arrow">→</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="flow-label">parallel</span>"#),
        "{html}"
    );
    assert!(html.contains(r#"href="./planner-01.md""#), "{html}");
    assert!(!html.contains("```"), "{html}");
    assert!(
        html.contains(
            r#"<details class="orchestration"><summary>Orchestration</summary><p>long details</p>"#
        ),
        "{html}"
    );
    assert!(html.contains("<h2>Notes</h2>"), "{html}");
}
