//! Rewrites a module's start function into an export, for engines that cannot bound it.
//!
//! A wasm start function runs during instantiation. wasmi cannot resume an instantiation, so
//! it could only give a start function the whole fuel budget in one go, with no wall-clock
//! check until it returned: a start function that loops would hold the thread for as long as
//! its fuel lasts, whatever the call's `wall_time`. Exporting it instead lets the backend call
//! it like `_start`, in fuel slices, with the deadline and cancellation checked between them.
//!
//! Only the section framing is parsed (ids, sizes, the export count); everything else is copied
//! byte for byte. The input has already passed the engine's validator, and the output goes
//! through it again, so a mistake here is a compile error, never a different module.

/// The export the start function is given. A module that already exports this name fails
/// validation after the rewrite (duplicate export), which is the right answer for it.
pub(crate) const START_EXPORT: &str = "__locara_start";

const START_SECTION: u8 = 8;
const EXPORT_SECTION: u8 = 7;
const FUNC_EXTERN: u8 = 0;

/// If `wasm` has a start section, the same module without it and with the start function
/// exported as [`START_EXPORT`]; `None` if it has none (or is not framed like a module).
pub(crate) fn export_start(wasm: &[u8]) -> Option<Vec<u8>> {
    let sections = sections(wasm)?;
    let start = sections
        .iter()
        .find(|(id, _)| *id == START_SECTION)
        .map(|(_, payload)| read_leb(payload).map(|(index, _)| index))??;
    let mut out = wasm[..8].to_vec();
    let mut exported = false;
    for (id, payload) in sections {
        match id {
            START_SECTION => {}
            EXPORT_SECTION => {
                let (count, used) = read_leb(payload)?;
                let mut new = Vec::with_capacity(payload.len() + START_EXPORT.len() + 8);
                write_leb(&mut new, count.checked_add(1)?);
                new.extend_from_slice(&payload[used..]);
                write_leb(&mut new, START_EXPORT.len() as u32);
                new.extend_from_slice(START_EXPORT.as_bytes());
                new.push(FUNC_EXTERN);
                write_leb(&mut new, start);
                push_section(&mut out, id, &new);
                exported = true;
            }
            _ => push_section(&mut out, id, payload),
        }
    }
    // A command module always exports `_start`; without an export section there is nothing
    // sensible to do, and the compile step has already refused such a module.
    exported.then_some(out)
}

/// The module's sections as `(id, payload)`, or `None` if the framing is broken.
fn sections(wasm: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut rest = wasm.get(8..)?;
    let mut sections = Vec::new();
    while let Some((&id, after_id)) = rest.split_first() {
        let (size, used) = read_leb(after_id)?;
        let body = after_id.get(used..)?;
        let size = usize::try_from(size).ok()?;
        sections.push((id, body.get(..size)?));
        rest = &body[size..];
    }
    Some(sections)
}

fn push_section(out: &mut Vec<u8>, id: u8, payload: &[u8]) {
    out.push(id);
    write_leb(out, u32::try_from(payload.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(payload);
}

/// Reads an unsigned LEB128 `u32`; returns it and how many bytes it took.
fn read_leb(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= u32::from(byte & 0x7f).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn write_leb(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb_round_trips() {
        for value in [0, 1, 127, 128, 300, 16_384, u32::MAX] {
            let mut out = Vec::new();
            write_leb(&mut out, value);
            assert_eq!(read_leb(&out), Some((value, out.len())));
        }
        assert_eq!(read_leb(&[0x80, 0x80]), None);
    }

    #[test]
    fn a_module_without_a_start_section_is_left_alone() {
        // (module)
        assert_eq!(export_start(b"\0asm\x01\0\0\0"), None);
        assert_eq!(export_start(b"\0asm"), None);
    }
}
