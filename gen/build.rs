//! Builds the generator's BPF programs (`../bpf/gen_*.c`) with clang into OUT_DIR, where
//! `include_bytes!` embeds them: the installed binary carries its programs.

use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: [&str; 2] = ["gen_sink", "gen_live"];

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("dir")).join("../bpf");
    // the multiarch include directory (asm/types.h), as the Makefile's BPF_INCLUDES
    let arch = Command::new("cc")
        .arg("-dumpmachine")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "x86_64-linux-gnu".into());
    for name in PROGRAMS {
        let c = src.join(format!("{name}.c"));
        println!("cargo:rerun-if-changed={}", c.display());
        let o = out.join(format!("{name}.o"));
        let st = Command::new("clang")
            .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
            .arg(format!("-I/usr/include/{arch}"))
            .arg("-c")
            .arg(&c)
            .arg("-o")
            .arg(&o)
            .status()
            .unwrap_or_else(|e| panic!("clang (for {}): {e}", c.display()));
        assert!(st.success(), "clang failed on {}", c.display());
    }
}
