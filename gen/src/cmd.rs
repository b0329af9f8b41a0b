//! The three modes, each run to its end or to the error that stops it: send
//! (`send`, with its plan, technique and report), receive and the XDP sink.

pub mod delay;
pub mod receive;
pub mod replay;
pub mod send;
pub mod xdp_sink;

mod plan;
mod report;
mod technique;

use crate::error::Refusal;
use crate::sys;

/// The index of `dev`, which must exist in this network namespace.
fn interface(dev: &str) -> Result<u32, Refusal> {
    sys::ifindex(dev).ok_or_else(|| Refusal::NoInterface(dev.to_string()))
}

/// Pin this thread to `cpu`, if one is given.
fn pin(cpu: Option<usize>) -> Result<(), Refusal> {
    match cpu {
        Some(c) => sys::pin_to_cpu(c).map_err(|err| Refusal::Cpu { cpu: c, err }),
        None => Ok(()),
    }
}
