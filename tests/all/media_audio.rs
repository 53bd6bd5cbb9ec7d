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

/// 16-bit mono PCM at 8 kHz as a WAV file.
fn wav_16_bit(samples: &[i16]) -> Vec<u8> {
    let data = u32::try_from(samples.len() * 2).unwrap();
    let mut wav = Vec::with_capacity(44 + samples.len() * 2);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&16000u32.to_le_bytes()); // bytes per second
    wav.extend_from_slice(&2u16.to_le_bytes()); // bytes per frame
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        wav.extend_from_slice(&s.to_le_bytes());
    }
    wav
}

/// The levels of 16-bit samples, which the guest sums as pairs of squares in 32-bit lanes
/// (`i32x4.dot_i16x8_s`: two squares of −2¹⁵ make 2³¹, which wraps as a signed sum), are
/// what the samples have, on both engines: a frame of −2¹⁵ is full scale (0 dB), and the
/// file's level (frames at full scale, half scale, silence and pseudo-random) is that of its
/// samples' mean square.
#[tokio::test(flavor = "multi_thread")]
async fn full_scale_16_bit_samples_measure_0_db() {
    // 10 ms frames of 80 samples: −2¹⁵, ±full scale, half scale, silence, and a pseudo-random one.
    let mut samples = vec![i16::MIN; 80];
    samples.extend((0..80).map(|i| if i % 2 == 0 { i16::MAX } else { i16::MIN }));
    samples.extend([16384i16; 80]);
    samples.extend([0i16; 80]);
    let mut x = 0x2545_f491_u32;
    samples.extend((0..80).map(|_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x >> 8) as i16
    }));
    let mean_square = samples
        .iter()
        .map(|&s| (f64::from(s) / 32768.0).powi(2))
        .sum::<f64>()
        / samples.len() as f64;
    let overall = (100.0 * mean_square.log10()).round() / 10.0;
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        let (out, _) = output(
            locara,
            "audio.detect-silence",
            json!({"source": blob(&wav_16_bit(&samples)), "frame_ms": 10, "min_silence_ms": 10}),
        )
        .await;
        let engine = locara.engine().name();
        assert_eq!(out["loudest_frame_db"], json!(0.0), "{engine}: {out}");
        assert_eq!(out["quietest_frame_db"], json!(-120.0), "{engine}: {out}");
        assert_eq!(out["overall_rms_db"], json!(overall), "{engine}: {out}");
        assert_eq!(
            regions(&out),
            [(30.0, 40.0)],
            "{engine}: only the silent frame is below the default threshold"
        );
    }
}

/// A long file argument (over 1 MiB of base64) is decoded while the tool runs, its start read
/// while the rest is decoded (audio.detect-silence can change nothing outside its sandbox): the
/// answer is the one for the same file read from the workspace, and a bad symbol near the end
/// of the text, which the tool reaches last, still fails the call as invalid input naming it,
/// on both engines.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_file_argument_is_decoded_while_the_tool_runs() {
    // 70 s of 8 kHz mono: each third second silent, the others a tone.
    let samples: Vec<i16> = (0..70 * 8000)
        .map(|i| {
            if (i / 8000) % 3 == 2 {
                0
            } else {
                ((f64::from(i) * 0.3).sin() * 8000.0) as i16
            }
        })
        .collect();
    let wav = wav_16_bit(&samples);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.wav"), &wav).unwrap();
    let source = blob(&wav);
    let text = source["base64"].as_str().unwrap().to_owned();
    assert!(text.len() > 1 << 20, "{} bytes of base64", text.len());
    let (_home, hosts) = engines(&[], Some(dir.path()));
    for locara in &hosts {
        let what = locara.engine().name();
        let arguments = |source: Value| json!({"source": source, "min_silence_ms": 500});
        let (made, _) = output(locara, "audio.detect-silence", arguments(source.clone())).await;
        let read = crate::media_support::call(
            locara,
            locara_facade::RunRequest::new(
                "audio.detect-silence",
                arguments(json!({"path": "long.wav"})),
            )
            .with_workspace(dir.path()),
        )
        .await;
        assert_eq!(
            Some(&made),
            read.output.as_ref(),
            "{what}: {:?}",
            read.error
        );
        assert_eq!(regions(&made).len(), 23, "{what}: {made}");

        let mut damaged = text.clone().into_bytes();
        let at = damaged.len() - 100;
        damaged[at] = b'*';
        let damaged = String::from_utf8(damaged).unwrap();
        let error = locara
            .run(locara_facade::RunRequest::new(
                "audio.detect-silence",
                arguments(json!({ "base64": damaged })),
            ))
            .await
            .unwrap_err();
        let report = error.report();
        assert_eq!(report.code, "invalid_input", "{what}: {error}");
        assert_eq!(report.violations[0].pointer, "/source/base64", "{what}");
        assert!(
            report.violations[0]
                .message
                .contains(&format!("offset {at}")),
            "{what}: {}",
            report.violations[0].message
        );
    }
}
