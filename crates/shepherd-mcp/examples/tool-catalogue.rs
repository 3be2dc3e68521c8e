//! Prints the pi extension's tool catalogue (`integrations/pi/extensions/lib/tool-catalogue.ts`)
//! from the Rust one, for `scripts/gen-protocol-types`.

// Writing the file's text to stdout is this program's whole job.
#![allow(clippy::print_stdout)]

fn main() {
    print!("{}", shepherd_mcp::catalogue::pi_catalogue_text());
}
