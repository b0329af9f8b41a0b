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
    let s =
        sink::Sink::attach(ifindex, k.size, k.mix.clone(), action, k.latency).map_err(|err| {
            SystemError::SinkAttach {
                dev: k.dev.clone(),
                err,
            }
        })?;
    sink::run(&s, &k.dev, k.duration_ns).map_err(|err| SystemError::SinkRead {
        dev: k.dev.clone(),
        err,
    })?;
    Ok(())
}
