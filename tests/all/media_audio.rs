//! audio.detect-silence on speech made by espeak-ng, with silences of known length put around
//! and between the utterances by sox, in the four formats sox writes, on both engines.

use std::path::Path;

use serde_json::{Value, json};

use crate::media_support::{blob, engines, output, program, run};

/// Seconds of sox-made silence before, between and after the two utterances.
const LEAD: f64 = 1.0;
const GAP: f64 = 1.5;
const TAIL: f64 = 1.2;

/// `lead` s of silence, "hello world", `gap` s, "the quick brown fox", `tail` s, as 22.05 kHz
/// mono WAV, and the duration of the first utterance in milliseconds (measured by sox).
fn speech(dir: &Path) -> (Vec<u8>, f64) {
    let first = dir.join("first.wav");
    let second = dir.join("second.wav");
    for (file, text) in [(&first, "hello world"), (&second, "the quick brown fox")] {
        let mut espeak = program("espeak-ng", "espeak-ng");
        espeak.arg("-w").arg(file).arg(text);
        run(espeak, b"");
    }
    let mut soxi = program("soxi", "sox");
    soxi.arg("-D").arg(&first);
    let first_ms: f64 = String::from_utf8(run(soxi, b""))
        .unwrap()
        .trim()
        .parse::<f64>()
        .unwrap()
        * 1000.0;
    let padded_first = dir.join("first-padded.wav");
    let mut sox = program("sox", "sox");
    sox.arg(&first)
        .arg(&padded_first)
        .args(["pad", &LEAD.to_string(), &GAP.to_string()]);
    run(sox, b"");
    let whole = dir.join("speech.wav");
    let mut sox = program("sox", "sox");
    sox.arg(&padded_first)
        .arg(&second)
        .arg(&whole)
        .args(["pad", "0", &TAIL.to_string()]);
    run(sox, b"");
    (std::fs::read(&whole).unwrap(), first_ms)
}

/// `wav` converted by sox to `extension`.
fn convert(dir: &Path, wav: &[u8], extension: &str) -> Vec<u8> {
    let source = dir.join("convert-source.wav");
    std::fs::write(&source, wav).unwrap();
    let target = dir.join(format!("speech.{extension}"));
    let mut sox = program("sox", "sox (with libsox-fmt-all for MP3)");
    sox.arg(&source).arg(&target);
    run(sox, b"");
    std::fs::read(target).unwrap()
}

fn regions(output: &Value) -> Vec<(f64, f64)> {
    output["silences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["start_ms"].as_f64().unwrap(),
                s["end_ms"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn known_silences_are_found_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (wav, first_ms) = speech(dir.path());
    let files = [
        ("wav", wav.clone(), 0.0),
        ("flac", convert(dir.path(), &wav, "flac"), 0.0),
        ("ogg", convert(dir.path(), &wav, "ogg"), 0.0),
        // MP3 shifts everything by the encoder and decoder delay (1105 samples, 50 ms at
        // 22.05 kHz) when, as with sox, the file has no gapless header.
        ("mp3", convert(dir.path(), &wav, "mp3"), 60.0),
    ];
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        for (format, bytes, delay) in &files {
            let (out, _) = output(
                locara,
                "audio.detect-silence",
                json!({"source": blob(bytes), "min_silence_ms": 700, "threshold_db": -45}),
            )
            .await;
            let what = format!("{format} on {}", locara.engine().name());
            assert_eq!(out["format"], *format, "{what}");
            let found = regions(&out);
            assert_eq!(found.len(), 3, "{what}: {found:?}");
            let duration = out["duration_ms"].as_f64().unwrap();
            // Where sox put silence: each found region must cover it, one 10 ms frame and the
            // MP3 delay aside, and may extend past it only by espeak-ng's own quiet edges
            // (it ends each utterance with about 300 ms of near-silence).
            let slack = 450.0 + delay;
            let gap_start = LEAD * 1000.0 + first_ms;
            let expected = [
                (0.0, LEAD * 1000.0),
                (gap_start, gap_start + GAP * 1000.0),
                (duration - TAIL * 1000.0 - delay, duration),
            ];
            for ((start, end), (want_start, want_end)) in found.iter().zip(expected) {
                assert!(
                    *start <= want_start + 10.0 + delay && *start >= want_start - slack,
                    "{what}: region {start}..{end} should start near {want_start}"
                );
                assert!(
                    *end >= want_end - 10.0 && *end <= want_end + slack,
                    "{what}: region {start}..{end} should end near {want_end}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn not_audio_is_a_clear_tool_error() {
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        let response = crate::media_support::call(
            locara,
            locara_facade::RunRequest::new(
                "audio.detect-silence",
                json!({"source": blob(b"%PDF-1.7 this is not audio")}),
            ),
        )
        .await;
        let error = response.error.expect("a tool error");
        assert_eq!(
            (error.code.as_str(), error.exit_code),
            ("tool_error", Some(2))
        );
        assert!(error.message.contains("PDF"), "{}", error.message);
    }
}
