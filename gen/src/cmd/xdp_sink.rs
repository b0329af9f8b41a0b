//! XDP sink mode: attach the count-and-drop (or count-and-pass) program to --dev
//! (with --latency, its one-way latency histogram too) and print its counts until a
//! signal or --duration.

use super::interface;
use crate::args::SinkArgs;
use crate::error::{Error, SendUsage, SystemError};
use crate::mix::Mix;
use crate::sink;

pub fn run(k: &SinkArgs) -> Result<(), Error> {
    let ifindex = interface(&k.dev)?;
    let action = if k.pass {
        sink::Action::Pass
    } else {
        sink::Action::Drop
    };
    let (size, mix) = match &k.pcap {
        Some(path) => pcap_sizes(path)?,
        None => (k.size, k.mix.clone()),
    };
    let mut s = sink::Sink::attach(ifindex, size, mix, action, k.latency, k.flows.as_ref())
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

/// --pcap FILE: the sizes of the frames a replay of it marks, each counted on its own.
fn pcap_sizes(path: &str) -> Result<(usize, Option<Mix>), SendUsage> {
    let bad = |why: String| SendUsage::Pcap(path.into(), why);
    let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let records = crate::pcap::parse(&bytes).map_err(bad)?;
    let sizes = crate::replay::marked_sizes(&records);
    if sizes.is_empty() {
        return Err(bad(format!(
            "none of its {} frames is one the sink counts (a UDP frame of IPv4 without \
             options or IPv6 with 22 bytes of payload or more)",
            records.len()
        )));
    }
    let m = Mix::counting(sizes);
    Ok((m.largest(), Some(m)))
}
