//! The tool ABI shared by every built-in tool (see `docs/tool-abi.md`): `locara-pdk`'s
//! entry points and errors, and its workspace helpers, which map user paths onto the guest's
//! `/workspace` preopen.

pub use locara_pdk::workspace::*;
pub use locara_pdk::{ErrorKind, ToolError, main_with, one_line, parse_args, to_output};
