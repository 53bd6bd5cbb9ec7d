//! Fuzzes the lockfile parser (`locara.lock`).
//!
//! Input: the bytes of a lockfile. Whatever parses must survive a round trip through
//! `to_json_pretty` unchanged, and find every pin it lists.

#![no_main]

use libfuzzer_sys::fuzz_target;
use locara_manifest::Lockfile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Lockfile::from_json(text) {
        Ok(lockfile) => {
            let printed = lockfile.to_json_pretty();
            let again = Lockfile::from_json(&printed)
                .unwrap_or_else(|e| panic!("the printed lockfile does not parse: {e}\n{printed}"));
            assert_eq!(again, lockfile, "the round trip changed the lockfile");
            for (id, pin) in lockfile.tools() {
                assert_eq!(lockfile.get(id), Some(pin));
            }
        }
        Err(error) => drop(error.to_string()),
    }
});
