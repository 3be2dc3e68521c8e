//! Prints the broker protocol's JSON Schema, the document checked in at
//! `docs/protocol.schema.json` (`scripts/gen-protocol-types` writes it from here).

fn main() {
    print!(
        "{}",
        shepherd_core::protocol::schema::protocol_schema_text()
    );
}
