//! Compiles proto/dnstap.proto into prost types at build time with protox, a
//! pure-Rust protobuf compiler, so no `protoc` binary is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/dnstap.proto");
    let descriptors = protox::compile(["proto/dnstap.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
