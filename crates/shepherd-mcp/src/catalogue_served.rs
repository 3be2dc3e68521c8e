//! The MCP servers offer exactly the tool catalogue: each tool's name, description and input
//! schema as [`crate::catalogue`] writes it. Kept apart from the catalogue so that it, which
//! the servers read, reads none of them.

use serde_json::Value;

use crate::catalogue::{Front, PARENT, SHEEP, Tool, offered};

/// Each tool a server lists, as `(name, description, input schema)`, sorted by name.
fn listed(tools: Vec<rmcp::model::Tool>) -> Vec<(String, String, Value)> {
    let mut out: Vec<_> = tools
        .into_iter()
        .map(|tool| {
            (
                tool.name.to_string(),
                tool.description.unwrap_or_default().to_string(),
                Value::Object((*tool.input_schema).clone()),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// What the catalogue says `tools` offer over MCP, in the same form.
fn catalogued(tools: &[Tool]) -> Vec<(String, String, Value)> {
    let mut out: Vec<_> = offered(tools, Front::Mcp)
        .map(|tool| {
            (
                tool.name.to_owned(),
                tool.description.to_owned(),
                tool.mcp_schema(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn the_mcp_servers_offer_exactly_the_catalogue() {
    use crate::server::Parent;
    use crate::sheep::Sheep;
    let parent = Parent::tool_router()
        + Parent::wait_router()
        + Parent::run_router()
        + Parent::merge_router()
        + Parent::controls_router();
    for (side, served, written) in [
        ("parent", listed(parent.list_all()), catalogued(PARENT)),
        (
            "sheep",
            listed(Sheep::tool_router().list_all()),
            catalogued(SHEEP),
        ),
    ] {
        let names = |tools: &[(String, String, Value)]| -> Vec<String> {
            tools.iter().map(|t| t.0.clone()).collect()
        };
        assert_eq!(names(&served), names(&written), "{side}");
        for (served, written) in served.iter().zip(&written) {
            assert_eq!(served.1, written.1, "{side} {}: description", served.0);
            assert_eq!(served.2, written.2, "{side} {}: schema", served.0);
            assert_eq!(crate::schema::is_flat(&served.2), Ok(()), "{}", served.0);
        }
    }
}
