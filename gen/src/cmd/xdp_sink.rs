//! XDP sink mode: attach the count-and-drop (or count-and-pass) program to --dev
//! (with --latency, its one-way latency histogram too) and print its counts until a
//! signal or --duration.

use super::interface;
use crate::args::SinkArgs;
use crate::error::{Error, SystemError};
use crate::sink;

pub fn run(k: &SinkArgs) -> Result<(), Error> {
    let ifindex = interface(&k.dev)?;
    let action = if k.pass {
        sink::Action::Pass
    } else {
        sink::Action::Drop
    };
    let mut s = sink::Sink::attach(
        ifindex,
        k.size,
        k.mix.clone(),
        action,
        k.latency,
        k.flows.as_ref(),
    )
    .map_err(|err| SystemError::SinkAttach {
        dev: k.dev.clone(),
        err,
    })?;
    sink::run(&mut s, &k.dev, k.duration_ns).map_err(|err| SystemError::SinkRead {
        dev: k.dev.clone(),
        err,
    })?;
    Ok(())
}
