//! The herd dashboard (`shepherd herd --tui`) in a real terminal: a tmux pane runs it against a
//! broker whose clock the test moves, with a herd of `command` sheep (and one pi sheep that
//! never starts). Keys go in with `send-keys`; what the dashboard draws comes back with
//! `capture-pane` and is compared with snapshots, and what a key did to the herd is checked
//! with the broker.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::dash_support;
use crate::herd_support;

use dash_support::{Dash, Launch, filters};

const MINUTE: i64 = 60_000;

fn wide() -> Launch {
    Launch {
        width: 180,
        height: 24,
        ..Launch::default()
    }
}

/// A herd with a sheep in every state a person meets, the test clock at 1m30s after the first
/// spawns. Returns the dashboard and the agent ids by label.
fn every_state(launch: &Launch) -> (Dash, Ids) {
    let mut dash = Dash::new(launch);
    dash.shows(&["no sheep in this herd yet"]);
    let worker = dash.spawn("worker", "a", "headless");
    let idler = dash.spawn("idler", "t", "tmux");
    let blocker = dash.spawn("blocker", "c", "headless");
    let crasher = dash.spawn("crasher", "d", "headless");
    let finisher = dash.spawn("finisher", "e", "headless");
    let asker = dash.spawn("asker", "f", "headless");
    dash.advance(MINUTE);
    dash.delegate(&worker, "fix the login bug");
    dash.delegate(&idler, "map the auth module");
    dash.delegate(&blocker, "deploy to staging");
    dash.delegate(&crasher, "migrate the database");
    dash.delegate(&finisher, "tag the release");
    dash.delegate(&asker, &idler);
    // Everything the sheep do with their tasks happens at this minute.
    dash.shows(&[
        "shepherd: which branch?",
        "idler: t: which port?",
        "blocked 0s",
        "exited 0s",
        "done 0s",
    ]);
    dash.advance(MINUTE / 2);
    dash.spawn_in_background("thinker", "g");
    dash.shows(&[
        "starting 0s",
        "waiting 30s",
        "blocked 30s",
        "exited 30s",
        "done 30s",
        "compiling fix the login bug",
        "crashing with status 3",
        "checking deploy to staging",
        "shipping tag the release",
        "idler: t: which port?",
    ]);
    let ids = Ids { worker, blocker };
    (dash, ids)
}

struct Ids {
    worker: String,
    blocker: String,
}

#[test]
fn every_state_a_person_meets() {
    let (dash, _ids) = every_state(&wide());
    let screen = dash.shows(&["fake/model-1", "failed rc 3"]);
    filters(&dash).bind(|| insta::assert_snapshot!("every_state", screen));
}

#[test]
fn enter_brings_a_tmux_sheep_to_the_front_and_opens_a_headless_sheeps_transcript() {
    let (dash, _ids) = every_state(&wide());
    // The second row is the tmux sheep.
    dash.press(&["Down"]);
    dash.press(&["Enter"]);
    let window = dash
        .pane
        .wait_until("the sheep's window in front", dash_support::SHOWS, |_| {
            dash.pane
                .run(&["display-message", "-p", "-t", "agent", "#{window_name}"])
                .is_ok_and(|name| name.trim() == "idler: t")
        })
        .unwrap();
    drop(window);
    let sheep_screen = dash.shows(&["working on map the auth module"]);
    assert!(!sheep_screen.contains("SETTLED"), "{sheep_screen}");
    dash.pane.run(&["select-window", "-t", "agent:0"]).unwrap();
    dash.shows(&["idler: t is in front (tmux %1)"]);

    // The first row runs headless: Enter shows what it printed, and keeps following it.
    dash.press(&["Up"]);
    dash.press(&["Enter"]);
    let transcript = dash.shows(&[
        "worker: a · transcript (live)",
        "compiling fix the login bug",
    ]);
    assert!(transcript.contains("test sheep ready"), "{transcript}");
    dash.press(&["Escape"]);
    dash.shows(&["SETTLED"]);
}

#[test]
fn r_reads_a_sheeps_screen() {
    let (dash, _ids) = every_state(&wide());
    dash.press(&["Down"]);
    dash.press(&["r"]);
    let screen = dash.shows(&[
        "idler: t · screen",
        "working on map the auth module",
        "message: which port?",
    ]);
    filters(&dash).bind(|| insta::assert_snapshot!("reading_a_screen", screen));
}

#[test]
fn m_answers_a_sheep_that_waits_on_the_shepherd() {
    let (mut dash, ids) = every_state(&wide());
    dash.press(&["m"]);
    dash.shows(&["answer worker: a ›"]);
    dash.type_text("main");
    dash.press(&["Enter"]);
    let screen = dash.shows(&["answered worker: a", "built main", "on main"]);
    assert!(screen.contains("4 settled"), "{screen}");
    let status = dash.status(&ids.worker);
    assert_eq!(status["state"], "done", "{status}");
}

#[test]
fn m_messages_and_d_delegates_to_a_sheep() {
    let (mut dash, ids) = every_state(&wide());
    // The blocker settled its task and takes another.
    dash.press(&["Down"]);
    dash.press(&["Down"]);
    dash.press(&["d"]);
    dash.shows(&["task for blocker: c ›"]);
    dash.type_text("rotate the keys");
    dash.press(&["Enter"]);
    dash.shows(&["task handed to blocker: c", "checking rotate the keys"]);
    let herd = dash.call("herd", serde_json::json!({}));
    let settled = &herd["settled"][0];
    assert_eq!(settled["title"], "rotate the keys", "{herd}");
    assert_eq!(settled["agentId"], ids.blocker.as_str());

    // A plain message to a sheep between tasks: it prints what it got.
    let mut dash = dash;
    let idle = dash.spawn("idler", "u", "headless");
    // Keys act on the rows on screen: wait for the new sheep's row before selecting it.
    dash.shows(&["idler: u", "test sheep ready"]);
    dash.press(&["End"]);
    dash.press(&["m"]);
    dash.shows(&["message idler: u ›"]);
    dash.type_text("take your time");
    dash.press(&["Enter"]);
    dash.shows(&["message sent to idler: u", "message: take your time"]);
    assert_eq!(dash.status(&idle)["state"], "idle");
}

#[test]
fn x_closes_a_sheep_after_asking_and_shows_it_closing() {
    let mut dash = Dash::new(&wide());
    let stubborn = dash.spawn("stubborn", "s", "headless");
    dash.shows(&["stubborn: s", "holding on"]);
    dash.press(&["x"]);
    dash.shows(&["close stubborn: s? its open task is cancelled  [y/N]"]);
    dash.press(&["n"]);
    dash.shows(&["stubborn: s left open"]);
    assert_eq!(dash.status(&stubborn)["state"], "idle");
    dash.press(&["x"]);
    dash.shows(&["[y/N]"]);
    dash.press(&["y"]);
    // It shrugs off SIGTERM: it stays `closing` for the close's grace.
    let closing = dash.shows(&["closing 0s"]);
    filters(&dash).bind(|| insta::assert_snapshot!("closing", closing));
    dash.shows(&["closed stubborn: s", "no sheep in this herd yet"]);
    let herd = dash.call("herd", serde_json::json!({}));
    assert_eq!(herd["sheep"], serde_json::json!([]), "{herd}");
}

#[test]
fn n_opens_the_note_in_the_pager_and_the_dashboard_comes_back() {
    let pager_saw = tempfile::NamedTempFile::new().unwrap();
    let pager = format!("echo >{}", pager_saw.path().display());
    let launch = Launch {
        env: vec![("PAGER".into(), pager)],
        ..wide()
    };
    let (dash, _ids) = every_state(&launch);
    dash.press(&["n"]);
    dash.shows(&["closed "]);
    let saw = std::fs::read_to_string(pager_saw.path()).unwrap();
    let note = saw.trim();
    assert!(
        note.ends_with("/worker-01.md") && std::path::Path::new(note).exists(),
        "the pager got the worker's note: {saw:?}"
    );
    dash.shows(&["worker: a", "SETTLED"]);
}

#[test]
fn slash_filters_s_sorts_and_question_mark_helps() {
    let (dash, _ids) = every_state(&wide());
    dash.press(&["/"]);
    dash.type_text("wait");
    let filtered = dash.shows(&["filter › wait", "filter “wait”"]);
    assert!(filtered.contains("worker: a") && filtered.contains("asker: f"));
    assert!(!filtered.contains("blocker: c"), "{filtered}");
    dash.press(&["Enter"]);
    dash.press(&["Escape"]);
    dash.shows(&["filter cleared", "blocker: c"]);
    dash.press(&["s"]);
    let sorted = dash.shows(&["sorted by state", "by state"]);
    let order: Vec<&str> = sorted
        .lines()
        .skip_while(|line| !line.starts_with("SHEEP"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split("  ").next())
        .collect();
    assert_eq!(
        order,
        [
            "worker: a",
            "asker: f",
            "blocker: c",
            "crasher: d",
            "idler: t",
            "thinker: g",
            "finisher: e"
        ],
        "{sorted}"
    );
    dash.press(&["?"]);
    let help = dash.shows(&["keys", "close it (asks first"]);
    filters(&dash).bind(|| insta::assert_snapshot!("help", help));
    dash.press(&["q"]);
    dash.shows(&["SETTLED"]);
}

#[test]
fn a_resize_drops_columns_by_importance() {
    let (dash, _ids) = every_state(&wide());
    dash.pane.resize(72, 24).unwrap();
    // Redrawn whole: the footer is the last thing drawn.
    let narrow = dash_support::trimmed(
        &dash
            .pane
            .wait_until("the narrow frame", dash_support::SHOWS, |screen| {
                !screen.contains("HARNESS") && screen.contains("x close  ? help  q quit")
            })
            .unwrap(),
    );
    filters(&dash).bind(|| insta::assert_snapshot!("narrow", narrow));
    dash.pane.resize(180, 24).unwrap();
    dash.shows(&["HARNESS", "MODEL", "WHERE"]);
}

#[test]
fn no_color_draws_without_colour() {
    let coloured = |no_color: bool| {
        let launch = Launch {
            env: if no_color {
                vec![("NO_COLOR".into(), "1".into())]
            } else {
                Vec::new()
            },
            ..wide()
        };
        let mut dash = Dash::new(&launch);
        dash.spawn("idler", "t", "headless");
        dash.shows(&["idler: t", "idle 0s"]);
        has_colour(&dash.pane.screen_styled().unwrap())
    };
    assert!(coloured(false), "states are coloured by default");
    assert!(!coloured(true), "NO_COLOR means no colour");
}

#[test]
fn quitting_gives_the_terminal_back() {
    let stty = tempfile::NamedTempFile::new().unwrap();
    let launch = Launch {
        wrap: Some(format!(
            "$DASH; echo \"dashboard ended with $?\"; stty -a > {}; exec cat >/dev/null",
            stty.path().display()
        )),
        ..wide()
    };
    let dash = Dash::new(&launch);
    dash.shows(&["no sheep in this herd yet"]);
    dash.press(&["q"]);
    dash.shows(&["dashboard ended with 0"]);
    assert_restored(&dash, stty.path());
}

#[test]
fn ctrl_c_gives_the_terminal_back_even_inside_a_prompt() {
    let stty = tempfile::NamedTempFile::new().unwrap();
    let launch = Launch {
        wrap: Some(format!(
            "$DASH; echo \"dashboard ended with $?\"; stty -a > {}; exec cat >/dev/null",
            stty.path().display()
        )),
        ..wide()
    };
    let mut dash = Dash::new(&launch);
    dash.spawn("idler", "t", "headless");
    dash.shows(&["idler: t"]);
    dash.press(&["m"]);
    dash.shows(&["message idler: t ›"]);
    dash.press(&["C-c"]);
    dash.shows(&["dashboard ended with 0"]);
    assert_restored(&dash, stty.path());
}

#[test]
fn a_panic_gives_the_terminal_back_before_its_message() {
    let stty = tempfile::NamedTempFile::new().unwrap();
    let launch = Launch {
        env: vec![("SHEPHERD_DASHBOARD_PANIC_KEY".into(), "1".into())],
        wrap: Some(format!(
            "$DASH; echo \"dashboard ended with $?\"; stty -a > {}; exec cat >/dev/null",
            stty.path().display()
        )),
        ..wide()
    };
    let dash = Dash::new(&launch);
    dash.shows(&["no sheep in this herd yet"]);
    dash.press(&["!"]);
    let screen = dash.shows(&["dashboard ended with 101"]);
    assert!(
        screen.contains("the dashboard was asked to panic"),
        "the panic message is readable on the main screen: {screen}"
    );
    assert_restored(&dash, stty.path());
}

/// Whether `styled` (a capture with escape sequences) sets a foreground or background colour
/// anywhere: SGR parameters 30–37, 40–47, 90–97, 100–107, or 38/48 (256 and true colour).
/// Resets to the default (39, 49), bold and reverse video are not colour.
fn has_colour(styled: &str) -> bool {
    styled.split("\u{1b}[").skip(1).any(|sequence| {
        let Some(end) = sequence.find('m') else {
            return false;
        };
        let params = &sequence[..end];
        params.bytes().all(|b| b.is_ascii_digit() || b == b';')
            && params
                .split(';')
                .filter_map(|p| p.parse::<u16>().ok())
                .any(|p| matches!(p, 30..=38 | 40..=48 | 90..=97 | 100..=107))
    })
}

/// The pane is back on the main screen, and the terminal in cooked mode with echo.
fn assert_restored(dash: &Dash, stty: &std::path::Path) {
    let alternate = dash
        .pane
        .run(&["display-message", "-p", "-t", "agent", "#{alternate_on}"])
        .unwrap();
    assert_eq!(alternate.trim(), "0", "left the alternate screen");
    let cursor = dash
        .pane
        .run(&["display-message", "-p", "-t", "agent", "#{cursor_flag}"])
        .unwrap();
    assert_eq!(cursor.trim(), "1", "the cursor is shown again");
    let modes = std::fs::read_to_string(stty).unwrap();
    let words: Vec<&str> = modes.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig", "icrnl", "opost"] {
        assert!(words.contains(&mode), "`{mode}` is back on: {modes}");
    }
}

#[test]
fn the_picker_lists_every_herd_and_follows_the_one_chosen() {
    let launch = Launch {
        args: vec!["--all".into()],
        ..wide()
    };
    let mut dash = Dash::new(&launch);
    dash.spawn("idler", "t", "headless");
    let other = dash.runtime.block_on(dash_support::start_broker(
        &dash.world,
        &dash.clock,
        "other-herd",
    ));
    let mut other_client = dash.runtime.block_on(dash_support::parent(other.socket()));
    dash.runtime.block_on(async {
        other_client
            .call_value(
                "spawn",
                serde_json::json!({ "agent": "finisher", "label": "z", "backend": "headless" }),
            )
            .await
            .unwrap()
    });
    // The picker asked before the second herd had a sheep: ask again.
    dash.shows(&["herds on this machine"]);
    dash.press(&["r"]);
    let picker = dash.shows(&["dash-test", "other-herd", "· 1 sheep"]);
    let listed: Vec<&str> = picker.lines().filter(|l| l.contains("named")).collect();
    assert_eq!(listed.len(), 2, "{picker}");
    assert!(listed[0].contains("dash-test") && listed[1].contains("other-herd"));
    dash.press(&["Down"]);
    dash.press(&["Enter"]);
    dash.shows(&["herd other-herd", "finisher: z"]);
    // H comes back to the picker, on the herd followed now.
    dash.press(&["H"]);
    dash.shows(&["herds on this machine"]);
    dash.runtime.block_on(async {
        other.handle().stop_herd().await;
        other.wait().await;
    });
}

#[test]
fn a_broker_killed_under_the_dashboard_comes_back_and_it_says_so() {
    let world = herd_support::World::new();
    world.define_test_sheep("idler", "print working on {task}; idle", None);
    let launch = Launch {
        cli_herd: true,
        ..wide()
    };
    let agent = world.spawn("idler", "t");
    world.delegate(&agent, "map the auth module");
    let pane = shepherd_testkit::agents::TmuxPane::start_shell(
        &dash_support::command_line(&world, &launch),
        launch.width,
        launch.height,
    )
    .unwrap();
    dash_support::shows(&pane, &["idler: t", "working", "● live"]);
    let old = world.broker_pid().unwrap();
    herd_support::kill9(old);
    let screen = dash_support::shows(
        &pane,
        &[
            "reconnected after a broker restart",
            "idler: t",
            "map the auth module",
        ],
    );
    assert!(screen.contains("working"), "{screen}");
    assert_ne!(world.running_broker(), Some(old));
}
