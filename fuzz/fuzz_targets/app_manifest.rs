//! Fuzzes the app manifest parser (`locara.json`) with its `validate`.
//!
//! Input: the bytes of a `locara.json`. Whatever parses must survive a round trip through
//! `to_json_pretty` unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use locara_manifest::AppManifest;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match AppManifest::from_json(text) {
        Ok(app) => {
            let printed = app.to_json_pretty();
            let again = AppManifest::from_json(&printed).unwrap_or_else(|e| {
                panic!("the printed app manifest does not parse: {e}\n{printed}")
            });
            assert_eq!(again, app, "the round trip changed the app manifest");
        }
        Err(error) => drop(error.to_string()),
    }
});
