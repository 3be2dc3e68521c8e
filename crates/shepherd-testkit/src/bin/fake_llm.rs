//! `shepherd-fake-llm`: the scripted fake model server as a program, for shell scripts and
//! manual runs against the real pi (Rust tests use `shepherd_testkit::fake_llm::FakeLlm`).
//!
//! Usage: `shepherd-fake-llm [--script FILE] [--host ADDR] [--port N] [--port-file FILE]
//! [--log FILE]`. It prints `LISTENING <port>` once ready (and writes the port to the port
//! file, atomically), then serves until killed. The script format and control endpoints are
//! described in `shepherd_testkit::fake_llm`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use shepherd_testkit::fake_llm::{FakeLlm, Options, Script};

const USAGE: &str = "usage: shepherd-fake-llm [--script FILE] [--host ADDR] [--port N] \
                     [--port-file FILE] [--log FILE]";

struct Args {
    script: Script,
    options: Options,
    port_file: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut script = Script::new();
    let mut options = Options::default();
    let mut port_file = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--script" => {
                let path = value()?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                script = Script::from_json(&text).map_err(|e| format!("{path}: {e}"))?;
            }
            "--host" => {
                let host = value()?;
                options.host = host
                    .parse::<IpAddr>()
                    .map_err(|e| format!("--host {host}: {e}"))?;
            }
            "--port" => {
                let port = value()?;
                options.port = port.parse().map_err(|e| format!("--port {port}: {e}"))?;
            }
            "--port-file" => port_file = Some(PathBuf::from(value()?)),
            "--log" => options.log = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(Args {
        script,
        options,
        port_file,
    })
}

fn write_port_file(path: &PathBuf, port: u16) -> std::io::Result<()> {
    let mut partial = path.clone().into_os_string();
    partial.push(".partial");
    std::fs::write(&partial, port.to_string())?;
    std::fs::rename(&partial, path)
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("shepherd-fake-llm: {err}");
            return ExitCode::from(2);
        }
    };
    let server = match FakeLlm::start_with(args.script, &args.options) {
        Ok(server) => server,
        Err(err) => {
            eprintln!("shepherd-fake-llm: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.port_file
        && let Err(err) = write_port_file(path, server.port())
    {
        eprintln!("shepherd-fake-llm: {}: {err}", path.display());
        return ExitCode::FAILURE;
    }
    println!("LISTENING {}", server.port());
    // Serve until killed: the server's threads do the work.
    loop {
        std::thread::park();
    }
}
