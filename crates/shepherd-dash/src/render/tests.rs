use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::*;

const NOW: i64 = 1_800_000_000_000;

fn herd() -> HerdResult {
    serde_json::from_value(json!({
        "now": NOW,
        "session": { "name": "fix login", "relative": ".shepherd/sessions/0001-fix-login" },
        "sheep": [
            {
                "agentId": "shepherd-agent-1a2b3c4d-00000001", "agent": "worker", "label": "a",
                "displayName": "worker: a", "backend": "tmux", "pane": "%3", "state": "working",
                "cwd": "/p", "createdAt": NOW - 300_000, "runtime": "pi",
                "model": "anthropic/claude-sonnet-4", "since": NOW - 125_000,
                "usage": { "tokensIn": 12_000, "tokensOut": 345, "cost": 0.042 },
                "lastLine": "running cargo test",
                "task": { "id": "shepherd-task-1a2b3c4d-00000001", "state": "running",
                          "title": "fix the login bug", "createdAt": NOW - 70_000,
                          "startedAt": NOW - 70_000 }
            },
            {
                "agentId": "shepherd-agent-1a2b3c4d-00000002", "agent": "scout", "label": "b",
                "displayName": "scout: b", "backend": "headless", "state": "working",
                "cwd": "/p", "createdAt": NOW - 300_000, "runtime": "command",
                "since": NOW - 30_000,
                "task": { "id": "shepherd-task-1a2b3c4d-00000002", "state": "waiting",
                          "title": "map the auth module", "createdAt": NOW - 90_000,
                          "startedAt": NOW - 90_000, "waitingOn": "shepherd",
                          "question": "which branch?" }
            }
        ],
        "settled": [
            { "taskId": "shepherd-task-1a2b3c4d-00000003",
              "agentId": "shepherd-agent-1a2b3c4d-00000003", "displayName": "reviewer",
              "title": "review the diff", "status": "blocked", "returnCode": 2,
              "outcome": "need the credentials", "startedAt": NOW - 200_000,
              "completedAt": NOW - 65_000 }
        ]
    }))
    .unwrap()
}

fn frame(width: u16, height: u16, ui: &Ui, link: &Link) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let herd = herd();
    let scene = Scene {
        herd: Some(&herd),
        now: NOW,
        ui,
        link,
        identity: "cli-0123456789abcdef",
        project: "/home/me/project",
        color: true,
    };
    terminal.draw(|f| draw(f, &scene)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_wide_frame() {
    let ui = Ui {
        selected: Some("shepherd-agent-1a2b3c4d-00000002".into()),
        ..Ui::default()
    };
    insta::assert_snapshot!(frame(160, 12, &ui, &Link::Live));
}

#[test]
fn a_narrow_frame_keeps_what_matters() {
    insta::assert_snapshot!(frame(60, 12, &Ui::default(), &Link::Reconnected));
}

#[test]
fn the_help_overlay() {
    let ui = Ui {
        mode: Mode::Help,
        ..Ui::default()
    };
    insta::assert_snapshot!(frame(100, 20, &ui, &Link::Live));
}

#[test]
fn a_prompt_in_the_footer() {
    let ui = Ui {
        mode: Mode::Prompt {
            kind: PromptKind::Message {
                agent_id: "shepherd-agent-1a2b3c4d-00000002".into(),
                name: "scout: b".into(),
                reply_to: Some("shepherd-message-1a2b3c4d-00000009".into()),
            },
            text: "main".into(),
        },
        ..Ui::default()
    };
    let frame = frame(80, 8, &ui, &Link::Lost);
    assert!(frame.ends_with("answer scout: b › main"), "{frame}");
    assert!(
        frame
            .lines()
            .next()
            .unwrap()
            .ends_with("connection lost · reconnecting…")
    );
}

#[test]
fn colour_marks_states_unless_no_color() {
    let herd = herd();
    let ui = Ui::default();
    let colours = |color: bool| {
        let mut terminal = Terminal::new(TestBackend::new(120, 8)).unwrap();
        let scene = Scene {
            herd: Some(&herd),
            now: NOW,
            ui: &ui,
            link: &Link::Live,
            identity: "x",
            project: "/p",
            color,
        };
        terminal.draw(|f| draw(f, &scene)).unwrap();
        terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .filter(|cell| cell.fg != Color::Reset)
            .count()
    };
    assert!(colours(true) > 0);
    assert_eq!(colours(false), 0);
}

#[test]
fn cutting_respects_wide_characters_and_marks_the_cut() {
    assert_eq!(cut("short", 10), "short");
    assert_eq!(cut("exactly10!", 10), "exactly10!");
    assert_eq!(cut("a bit too long", 8), "a bit t…");
    assert_eq!(cut("日本語テキスト", 7), "日本語…");
    assert_eq!(cut("tab\there", 20), "tab here");
    assert_eq!(tail("a long line typed", 6), " typed");
}
