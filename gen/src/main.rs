//! netassay-gen: a paced UDP packet generator and its receiver. See `--help`.
//!
//! This file only parses the command line and runs the mode it asks for; an error
//! ends the process with one line on stderr and its exit code (see `error`).

// Every unsafe block says why it is sound (`// SAFETY:`); clippy holds it.
#![deny(clippy::undocumented_unsafe_blocks)]

mod args;
mod bpf;
mod cmd;
mod delay;
mod error;
mod flows;
mod json;
mod latency;
mod mix;
mod netlink;
mod pace;
mod packet;
mod pcap;
#[cfg(test)]
mod proptests;
mod replay;
mod rx;
mod sink;
mod sys;
mod tx;
mod xdp;

use args::Cmd;
use error::Error;

fn main() {
    let argv = std::env::args_os().skip(1).map(|w| {
        w.into_string()
            .map_err(|w| error::FlagError::NotUtf8(w.to_string_lossy().into_owned()))
    });
    let line = argv.collect::<Result<Vec<String>, _>>();
    if let Err(e) = line
        .map_err(Error::from)
        .and_then(|argv| args::parse(&argv).map_err(Error::from))
        .and_then(run)
    {
        eprintln!("netassay-gen: {e}");
        std::process::exit(e.exit_code());
    }
}

/// Run the command the line asks for.
fn run(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Help => print!("{}", args::help()),
        Cmd::Version => println!("netassay-gen {}", env!("CARGO_PKG_VERSION")),
        Cmd::Send(s) => match &s.pcap {
            Some(p) => cmd::replay::run(&s, p)?,
            None => cmd::send::run(&s)?,
        },
        Cmd::Recv(r) => cmd::receive::run(&r)?,
        Cmd::Sink(k) => cmd::xdp_sink::run(&k)?,
        Cmd::Delay(d) => cmd::delay::run(&d)?,
        Cmd::Describe(d) => println!("{}", replay::describe(&d)?),
    }
    Ok(())
}
