// Prints the pi extension's protocol types (TypeScript) generated from the broker protocol's
// JSON Schema (docs/protocol.schema.json), with the pinned json-schema-to-typescript that
// scripts/setup installs in .tools/json2ts. scripts/gen-protocol-types writes its output to
// integrations/pi/extensions/lib/protocol-types.ts, and a test compares the two.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, ".tools/json2ts/node_modules/"));
const { compile } = require("json-schema-to-typescript");

const schema = JSON.parse(readFileSync(join(root, "docs/protocol.schema.json"), "utf8"));
// Two readings json-schema-to-typescript gets wrong are made explicit first: a schema that
// allows any value (serde_json::Value) is `unknown`, not an object; and a schema that adds
// properties beside an `allOf` (an internally tagged enum's newtype variant: the tag beside the
// variant's type) becomes an intersection that keeps them.
const SHAPES = ["type", "$ref", "anyOf", "allOf", "oneOf", "enum", "const", "properties", "items"];
function prepare(node) {
	if (Array.isArray(node)) return node.map(prepare);
	if (node === null || typeof node !== "object") return node;
	const out = {};
	for (const [key, value] of Object.entries(node)) {
		out[key] = key === "properties" || key === "definitions" ? prepareMap(value) : prepare(value);
	}
	if (!SHAPES.some((key) => key in out)) out.tsType = "unknown";
	if (Array.isArray(out.allOf) && out.properties) {
		const { properties, required, type, ...rest } = out;
		return { ...rest, allOf: [...out.allOf, { type: "object", properties, required }] };
	}
	return out;
}
function prepareMap(map) {
	return Object.fromEntries(Object.entries(map).map(([key, value]) => [key, prepare(value)]));
}

const banner = `/**
 * The Shepherd broker protocol's types, generated from docs/protocol.schema.json (itself
 * generated from crates/shepherd-core/src/protocol). Do not edit: run scripts/gen-protocol-types.
 */`;
const ts = await compile(prepare(schema), "ShepherdProtocol", {
	bannerComment: banner,
	additionalProperties: false,
	unreachableDefinitions: true,
	strictIndexSignatures: true,
	style: { useTabs: true, printWidth: 120 },
});
process.stdout.write(ts);
