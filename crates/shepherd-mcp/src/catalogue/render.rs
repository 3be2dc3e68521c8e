//! The catalogue written out for each front end: the flat input schemas the MCP server offers,
//! the JSON Schema pi sends its model, and the TypeBox source of the pi extension's
//! `lib/tool-catalogue.ts`, which is generated from it.

use serde_json::{Map, Value, json};

use super::{Arg, Front, HARNESSES, HIDDEN_DETAILS, Kind, PARENT, SHEEP, Tool, offered};

impl Kind {
    /// This kind as an MCP input property: flat, one type, no combinators (see
    /// `crate::schema`).
    fn mcp(self, description: &str) -> Value {
        use crate::schema::{boolean, choice, integer, number, objects, string, strings};
        match self {
            Kind::String => string(description),
            Kind::Choice(values) => choice(values, description),
            Kind::Harness => choice(HARNESSES, description),
            Kind::Number | Kind::Positive | Kind::NonNegative => number(description),
            Kind::Integer { minimum } => integer(minimum, description),
            Kind::Boolean => boolean(description),
            Kind::Strings | Kind::IdOrIds => strings(description),
            Kind::Objects(fields) => objects(&object_of(fields, Front::Mcp), description),
        }
    }

    /// This kind as the JSON Schema pi sends its model: what [`Kind::typebox`] builds.
    fn pi(self, description: &str) -> Value {
        let mut schema = match self {
            Kind::String => json!({ "type": "string" }),
            Kind::Choice(values) => json!({ "type": "string", "enum": values }),
            Kind::Harness => json!({ "type": "string", "enum": HARNESSES }),
            Kind::Number => json!({ "type": "number" }),
            Kind::Positive => json!({ "type": "number", "exclusiveMinimum": 0 }),
            Kind::NonNegative => json!({ "type": "number", "minimum": 0 }),
            Kind::Integer { minimum } => json!({ "type": "integer", "minimum": minimum }),
            Kind::Boolean => json!({ "type": "boolean" }),
            Kind::Strings => json!({ "type": "array", "items": { "type": "string" } }),
            Kind::IdOrIds => json!({ "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 },
            ] }),
            Kind::Objects(fields) => json!({ "type": "array", "items": pi_object(fields) }),
        };
        schema["description"] = json!(description);
        schema
    }

    /// This kind as TypeBox source for the pi extension, building [`Kind::pi`]'s schema.
    fn typebox(self, description: &str) -> String {
        let said = quoted(description);
        match self {
            Kind::String => format!("Type.String({{ description: {said} }})"),
            Kind::Harness => Kind::Choice(HARNESSES).typebox(description),
            Kind::Choice(values) => {
                let union: Vec<String> = values.iter().map(|v| quoted(v)).collect();
                format!(
                    "Type.Unsafe<{}>({{ type: \"string\", enum: [{}], description: {said} }})",
                    union.join(" | "),
                    union.join(", ")
                )
            }
            Kind::Number => format!("Type.Number({{ description: {said} }})"),
            Kind::Positive => {
                format!("Type.Number({{ exclusiveMinimum: 0, description: {said} }})")
            }
            Kind::NonNegative => format!("Type.Number({{ minimum: 0, description: {said} }})"),
            Kind::Integer { minimum } => {
                format!("Type.Integer({{ minimum: {minimum}, description: {said} }})")
            }
            Kind::Boolean => format!("Type.Boolean({{ description: {said} }})"),
            Kind::Strings => format!("Type.Array(Type.String(), {{ description: {said} }})"),
            Kind::IdOrIds => format!(
                "Type.Union([Type.String(), Type.Array(Type.String(), {{ minItems: 1 }})], {{ description: {said} }})"
            ),
            Kind::Objects(fields) => format!(
                "Type.Array({}, {{ description: {said} }})",
                typebox_object(fields, "\t\t\t\t")
            ),
        }
    }
}

/// A JavaScript string literal (JSON's is one).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// The flat object schema of `args` that `front` offers.
fn object_of(args: &[Arg], front: Front) -> Value {
    let offered: Vec<&Arg> = args.iter().filter(|a| a.fronts.offers(front)).collect();
    let properties: Vec<(&str, Value)> = offered
        .iter()
        .map(|a| (a.name, a.kind.mcp(&a.described())))
        .collect();
    let required: Vec<&str> = offered
        .iter()
        .filter(|a| a.required)
        .map(|a| a.name)
        .collect();
    crate::schema::object(&properties, &required)
}

/// The object schema TypeBox's `Type.Object` makes of pi's `args`: `required` only when some
/// are.
fn pi_object(args: &[Arg]) -> Value {
    let offered: Vec<&Arg> = args.iter().filter(|a| a.fronts.offers(Front::Pi)).collect();
    let properties: Map<String, Value> = offered
        .iter()
        .map(|a| (a.name.to_owned(), a.kind.pi(&a.described())))
        .collect();
    let required: Vec<&str> = offered
        .iter()
        .filter(|a| a.required)
        .map(|a| a.name)
        .collect();
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// `Type.Object({…})` of pi's `args`, each line indented by `indent` and a tab.
fn typebox_object(args: &[Arg], indent: &str) -> String {
    let lines: Vec<String> = args
        .iter()
        .filter(|a| a.fronts.offers(Front::Pi))
        .map(|a| {
            let schema = a.kind.typebox(&a.described());
            let schema = if a.required {
                schema
            } else {
                format!("Type.Optional({schema})")
            };
            format!("{indent}\t{}: {schema},\n", a.name)
        })
        .collect();
    if lines.is_empty() {
        return "Type.Object({})".to_owned();
    }
    format!("Type.Object({{\n{}{indent}}})", lines.concat())
}

impl Tool {
    /// The input schema the MCP server offers.
    pub fn mcp_schema(&self) -> Value {
        object_of(self.args, Front::Mcp)
    }

    /// The parameters' JSON Schema the pi extension offers (what the model is sent).
    pub fn pi_schema(&self) -> Value {
        pi_object(self.args)
    }
}

/// `export const NAME = { tool: { name, description, parameters }, … } as const;`
fn typebox_tools(constant: &str, tools: &[Tool]) -> String {
    let entries: Vec<String> = offered(tools, Front::Pi)
        .map(|tool| {
            format!(
                "\t{}: {{\n\t\tname: {},\n\t\tdescription: {},\n\t\tparameters: {},\n\t}},\n",
                tool.name,
                quoted(tool.name),
                quoted(tool.description_for(Front::Pi)),
                typebox_object(tool.args, "\t\t"),
            )
        })
        .collect();
    format!(
        "export const {constant} = {{\n{}}} as const;\n",
        entries.concat()
    )
}

/// The pi extension's `lib/tool-catalogue.ts`: the parent's and the sheep's pi tools as
/// TypeBox schemas (so each tool's parameters keep their static type), the hidden detail
/// keys, and the harnesses.
pub fn pi_catalogue_text() -> String {
    let hidden: Vec<String> = HIDDEN_DETAILS.iter().map(|key| quoted(key)).collect();
    let harnesses: Vec<String> = HARNESSES.iter().map(|name| quoted(name)).collect();
    format!(
        "/**\n * The tools the pi extension offers, generated from Shepherd's tool catalogue\n * \
         (crates/shepherd-mcp/src/catalogue.rs), which the MCP server's tools are written from too:\n * \
         each tool's name, description and parameters. Do not edit: run scripts/gen-protocol-types.\n */\n\n\
         import {{ Type }} from \"typebox\";\n\n\
         /** The parent's tools (extensions/parent/tools.ts). */\n{}\n\
         /** A sheep's own tools (extensions/shepherd-sheep.ts). */\n{}\n\
         /** Detail keys a parent tool's result never shows: the call and the return value have their\n * \
         own sections, and lists the service line already spells out. */\n\
         export const HIDDEN_DETAILS: readonly string[] = [{}];\n\n\
         /** The coding agents a sheep can run on: every harness, in its wire spelling. */\n\
         export const HARNESSES = [{}] as const;\n",
        typebox_tools("PARENT_TOOLS", PARENT),
        typebox_tools("SHEEP_TOOLS", SHEEP),
        hidden.join(", "),
        harnesses.join(", "),
    )
}
