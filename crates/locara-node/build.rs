//! napi-build sets the linker arguments a Node addon needs on each platform.

fn main() {
    napi_build::setup();
}
