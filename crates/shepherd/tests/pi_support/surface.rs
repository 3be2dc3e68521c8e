//! What a pi session offers: the parent's tools and commands, and whether a model is offered
//! exactly the tool catalogue's Shepherd tools, in its words.

#![allow(dead_code, unreachable_pub)]

use serde_json::json;
use shepherd_mcp::catalogue::{self, Front, Tool};
use shepherd_testkit::fake_llm::{RecordedRequest, Step};

use super::{PARENT_MODEL, Shepherd, TURN};

/// The parent's tools, as the original named them.
pub const PARENT_TOOLS: [&str; 9] = [
    "shepherd",
    "shepherd_spawn",
    "shepherd_delegate",
    "shepherd_message",
    "shepherd_prompt",
    "shepherd_watch",
    "shepherd_status",
    "shepherd_close",
    "shepherd_read",
];

/// The commands the parent pi offers.
pub fn commands(s: &mut Shepherd) -> Vec<String> {
    let response = s
        .parent()
        .call(json!({"type": "get_commands"}), TURN)
        .expect("get_commands");
    response["data"]["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// The tools the parent's model is offered.
pub fn offered_tools(s: &mut Shepherd) -> Vec<String> {
    s.parent_turn("hello", vec![Step::text("hi")]);
    let requests = s.requests(PARENT_MODEL);
    requests.last().expect("one request").tool_names()
}

/// Checks that the Shepherd tools `request` offers are exactly the catalogue's pi `tools`, each
/// with the catalogue's description and parameters' schema.
pub fn offers_the_catalogue(request: &RecordedRequest, tools: &[Tool]) {
    let offered: Vec<_> = request
        .offered_tools()
        .into_iter()
        .filter(|tool| tool.name.starts_with("shepherd"))
        .collect();
    let mut names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    let mut written: Vec<&str> = catalogue::offered(tools, Front::Pi)
        .map(|t| t.name)
        .collect();
    written.sort_unstable();
    assert_eq!(names, written);
    for tool in &offered {
        let entry = tools.iter().find(|t| t.name == tool.name).unwrap();
        assert_eq!(
            tool.description,
            entry.description_for(Front::Pi),
            "{}",
            tool.name
        );
        assert_eq!(tool.schema, entry.pi_schema(), "{}", tool.name);
    }
}
