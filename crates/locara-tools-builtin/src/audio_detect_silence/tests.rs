//! Tests for `audio.detect-silence` on synthetic signals written as WAV files here.

use std::f64::consts::PI;
use std::path::Path;

use serde_json::{Value, json};

use super::{MAX_REGIONS, Sniffed, sniff};
use crate::abi::ErrorKind;
use crate::blob::{Blob, OutDir};

/// One channel's samples in [-1, 1].
type Signal = Vec<f64>;

fn sine(rate: u32, ms: u64, amplitude: f64) -> Signal {
    let n = rate as u64 * ms / 1000;
    (0..n)
        .map(|i| amplitude * (2.0 * PI * 440.0 * i as f64 / f64::from(rate)).sin())
        .collect()
}

fn zeros(rate: u32, ms: u64) -> Signal {
    vec![0.0; (rate as u64 * ms / 1000) as usize]
}

fn concat(parts: &[Signal]) -> Signal {
    parts.concat()
}

/// A minimal WAV writer: 16-bit PCM (`float` false) or 32-bit float, channels interleaved.
fn wav(rate: u32, channels: &[Signal], float: bool) -> Vec<u8> {
    let n = channels[0].len();
    assert!(channels.iter().all(|c| c.len() == n));
    let (tag, bytes_per_sample) = if float { (3u16, 4u16) } else { (1u16, 2u16) };
    let block = bytes_per_sample * channels.len() as u16;
    let data_len = n as u32 * u32::from(block);
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&(channels.len() as u16).to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&(bytes_per_sample * 8).to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..n {
        for c in channels {
            if float {
                out.extend_from_slice(&(c[i] as f32).to_le_bytes());
            } else {
                let s = (c[i] * 32767.0).round().clamp(-32768.0, 32767.0) as i16;
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
    out
}

/// Runs the tool on `bytes` written to a temp workspace as `a.wav`, with extra arguments.
fn detect_bytes(bytes: &[u8], extra: Value) -> Result<Value, crate::abi::ToolError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.wav"), bytes).unwrap();
    let mut input = json!({"source": {"path": "a.wav"}});
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    super::run(input, dir.path(), &OutDir::at(dir.path().join("out")))
}

fn detect(bytes: &[u8], extra: Value) -> Value {
    detect_bytes(bytes, extra).unwrap()
}

/// The regions of `key` as `(start_ms, end_ms)`, checking `duration_ms` on the way.
fn regions(out: &Value, key: &str) -> Vec<(u64, u64)> {
    out[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let (start, end) = (
                r["start_ms"].as_u64().unwrap(),
                r["end_ms"].as_u64().unwrap(),
            );
            assert_eq!(r["duration_ms"].as_u64().unwrap(), end - start);
            (start, end)
        })
        .collect()
}

/// Asserts the regions match `expected` to within one frame (`frame_ms`) at each boundary.
fn assert_near(actual: &[(u64, u64)], expected: &[(u64, u64)], frame_ms: u64) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{actual:?} vs expected {expected:?}"
    );
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            a.0.abs_diff(e.0) <= frame_ms && a.1.abs_diff(e.1) <= frame_ms,
            "{actual:?} vs expected {expected:?}"
        );
    }
}

const RATE: u32 = 16_000;

/// Asserts a level in dB to within 0.2 dB.
fn assert_db(actual: &Value, expected: f64) {
    let actual = actual.as_f64().unwrap();
    assert!(
        (actual - expected).abs() <= 0.2,
        "{actual} dB, expected {expected}"
    );
}

#[test]
fn finds_a_silence_between_two_tones() {
    let signal = concat(&[
        sine(RATE, 1000, 0.5),
        zeros(RATE, 1000),
        sine(RATE, 1000, 0.5),
    ]);
    let out = detect(&wav(RATE, &[signal], false), json!({}));
    assert_eq!(out["format"], "wav");
    assert_eq!(out["codec"], "pcm_s16le");
    assert_eq!(out["sample_rate"], RATE);
    assert_eq!(out["channels"], 1);
    assert_eq!(out["duration_ms"], 3000);
    assert_eq!(out["frame_ms"], 10);
    assert_eq!(out["threshold_db"], -40.0);
    assert_eq!(out["truncated"], false);
    assert_eq!(out["warnings"], json!([]));
    assert_near(&regions(&out, "silences"), &[(1000, 2000)], 10);
    assert_near(&regions(&out, "sounds"), &[(0, 1000), (2000, 3000)], 10);
    assert_eq!(out["silent_ms"], out["silences"][0]["duration_ms"]);
    // A 0.5 sine is -9 dBFS RMS (frames of 4.4 periods vary a little); digital silence
    // reports the floor.
    assert_db(&out["loudest_frame_db"], -9.0);
    assert_db(&out["overall_rms_db"], -10.8);
    assert_eq!(out["quietest_frame_db"], -120.0);
}

#[test]
fn silence_at_the_start_and_end_counts() {
    let signal = concat(&[zeros(RATE, 700), sine(RATE, 1000, 0.3), zeros(RATE, 600)]);
    let out = detect(&wav(RATE, &[signal], false), json!({}));
    assert_eq!(out["duration_ms"], 2300);
    assert_near(&regions(&out, "silences"), &[(0, 700), (1700, 2300)], 10);
    assert_near(&regions(&out, "sounds"), &[(700, 1700)], 10);
    // The edges are exact when they fall on frame boundaries.
    assert_eq!(regions(&out, "silences")[1].1, 2300);
    assert_eq!(regions(&out, "silences")[0].0, 0);
}

#[test]
fn all_silence_and_no_silence() {
    let out = detect(&wav(RATE, &[zeros(RATE, 800)], false), json!({}));
    assert_eq!(regions(&out, "silences"), [(0, 800)]);
    assert_eq!(regions(&out, "sounds"), []);
    assert_eq!(out["silent_ms"], 800);

    let out = detect(&wav(RATE, &[sine(RATE, 800, 0.5)], false), json!({}));
    assert_eq!(regions(&out, "silences"), []);
    assert_eq!(regions(&out, "sounds"), [(0, 800)]);
    assert_eq!(out["silent_ms"], 0);
}

#[test]
fn the_threshold_decides_what_is_quiet_enough() {
    // The middle tone is 0.01 peak: 20 log10(0.01 / sqrt 2) = -43 dBFS RMS.
    let signal = concat(&[
        sine(RATE, 1000, 0.5),
        sine(RATE, 1000, 0.01),
        sine(RATE, 1000, 0.5),
    ]);
    let bytes = wav(RATE, &[signal], false);
    let out = detect(&bytes, json!({}));
    assert_near(&regions(&out, "silences"), &[(1000, 2000)], 10);
    assert_db(&out["quietest_frame_db"], -43.0);

    let out = detect(&bytes, json!({"threshold_db": -50}));
    assert_eq!(regions(&out, "silences"), []);
    assert_eq!(regions(&out, "sounds"), [(0, 3000)]);

    // Everything below -9 dBFS is silent at -8.
    let out = detect(&bytes, json!({"threshold_db": -8}));
    assert_eq!(regions(&out, "silences"), [(0, 3000)]);
}

#[test]
fn min_silence_drops_short_gaps() {
    let signal = concat(&[
        sine(RATE, 1000, 0.5),
        zeros(RATE, 300),
        sine(RATE, 1000, 0.5),
        zeros(RATE, 800),
    ]);
    let bytes = wav(RATE, &[signal], false);
    let out = detect(&bytes, json!({}));
    assert_near(&regions(&out, "silences"), &[(2300, 3100)], 10);
    assert_near(&regions(&out, "sounds"), &[(0, 2300)], 10);

    let out = detect(&bytes, json!({"min_silence_ms": 200}));
    assert_near(
        &regions(&out, "silences"),
        &[(1000, 1300), (2300, 3100)],
        10,
    );
    assert_near(&regions(&out, "sounds"), &[(0, 1000), (1300, 2300)], 10);

    let out = detect(&bytes, json!({"min_silence_ms": 1000}));
    assert_eq!(regions(&out, "silences"), []);
}

#[test]
fn frame_size_sets_the_resolution() {
    // The silence starts 5 ms into a 10 ms frame, and 25 ms into a 50 ms one.
    let signal = concat(&[
        sine(RATE, 1025, 0.5),
        zeros(RATE, 1000),
        sine(RATE, 975, 0.5),
    ]);
    let bytes = wav(RATE, &[signal], false);
    let out = detect(&bytes, json!({"frame_ms": 1}));
    assert_near(&regions(&out, "silences"), &[(1025, 2025)], 1);
    let out = detect(&bytes, json!({"frame_ms": 50}));
    assert_eq!(out["frame_ms"], 50);
    assert_near(&regions(&out, "silences"), &[(1025, 2025)], 50);
}

#[test]
fn stereo_channels_are_mixed_or_chosen() {
    // Left plays throughout; right stops for a second.
    let left = sine(RATE, 3000, 0.5);
    let right = concat(&[
        sine(RATE, 1000, 0.5),
        zeros(RATE, 1000),
        sine(RATE, 1000, 0.5),
    ]);
    let bytes = wav(RATE, &[left.clone(), right], false);
    let out = detect(&bytes, json!({}));
    assert_eq!(out["channels"], 2);
    assert_eq!(out["channel"], "mix");
    assert_eq!(regions(&out, "silences"), []);
    let out = detect(&bytes, json!({"channel": 1}));
    assert_eq!(out["channel"], "1");
    assert_near(&regions(&out, "silences"), &[(1000, 2000)], 10);
    let out = detect(&bytes, json!({"channel": 0}));
    assert_eq!(regions(&out, "silences"), []);
    let out = detect(&bytes, json!({"channel": "loudest"}));
    assert_eq!(regions(&out, "silences"), []);

    // Opposite phases cancel in the mix, but not per channel.
    let inverted: Signal = left.iter().map(|s| -s).collect();
    let bytes = wav(RATE, &[left, inverted], false);
    let out = detect(&bytes, json!({}));
    assert_eq!(regions(&out, "silences"), [(0, 3000)]);
    let out = detect(&bytes, json!({"channel": "loudest"}));
    assert_eq!(regions(&out, "silences"), []);

    let err = detect_bytes(&bytes, json!({"channel": 2})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("has 2 channel(s)"), "{err}");
}

#[test]
fn float_wav_odd_rates_and_base64() {
    let rate = 22_050;
    let signal = concat(&[
        sine(rate, 500, 0.5),
        zeros(rate, 1500),
        sine(rate, 500, 0.5),
    ]);
    let bytes = wav(rate, &[signal], true);
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"source": {"base64": Blob::bytes(&bytes).base64}});
    let out = super::run(input, dir.path(), &OutDir::at(dir.path())).unwrap();
    assert_eq!(out["codec"], "pcm_f32le");
    assert_eq!(out["sample_rate"], 22_050);
    assert_eq!(out["duration_ms"], 2500);
    assert_near(&regions(&out, "silences"), &[(500, 2000)], 10);
}

/// A float file's NaN or infinite samples make their frames' sums NaN or infinite, from which
/// no level can be read: the call fails as for a damaged file, naming the first such frame,
/// whether the samples are analysed alone, mixed or as the loudest channel. A channel the call
/// does not analyse does not count.
#[test]
fn samples_that_are_not_finite_are_refused_with_their_time() {
    let rate = 8000;
    // A constant half scale: every frame's mean square is 1/4, -6.0 dB.
    let tone = vec![0.5; 8000];
    let nan = vec![f64::NAN; tone.len()];
    let left = concat(&[tone.clone(), nan.clone(), zeros(rate, 1000)]);
    let right = concat(&[nan, tone.clone(), zeros(rate, 1000)]);
    let stereo = wav(rate, &[left, right], true);
    for channel in [json!("loudest"), json!("mix"), json!(1)] {
        let err = detect_bytes(&stereo, json!({"channel": channel})).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgs, "{channel}: {err}");
        assert!(
            err.message().contains("not finite numbers")
                && err
                    .message()
                    .contains("first in the analysis frame at 0 ms"),
            "{channel}: {err}"
        );
    }
    // Channel 0 alone is NaN only from 1 s on.
    let err = detect_bytes(&stereo, json!({"channel": 0})).unwrap_err();
    assert!(err.message().contains("frame at 1000 ms"), "{err}");
    // 80 NaN samples (10 ms, one frame) in the middle of a mono tone; an infinite sample at
    // its end, alone in the last, partial frame (checked when the audio ends).
    let cases = [
        (
            concat(&[tone.clone(), vec![f64::NAN; 80], tone.clone()]),
            1000,
        ),
        (
            concat(&[tone.clone(), tone.clone(), vec![f64::INFINITY]]),
            2000,
        ),
    ];
    for (mono, at) in cases {
        let err = detect_bytes(&wav(rate, &[mono], true), json!({})).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgs, "{err}");
        assert!(
            err.message().contains(&format!("frame at {at} ms")),
            "{err}"
        );
    }
    // The clean channel of a file whose other channel is NaN is measured as usual.
    let clean = wav(rate, &[tone.clone(), vec![f64::NAN; tone.len()]], true);
    let out = detect(&clean, json!({"channel": 0}));
    assert_eq!(out["loudest_frame_db"], -6.0, "{out}");
    assert_eq!(out["quietest_frame_db"], -6.0, "{out}");
}

#[test]
fn too_many_silences_are_truncated() {
    // 1 ms frames alternating 2 ms of tone and 2 ms of silence at 8 kHz.
    let rate = 8_000;
    let period = concat(&[vec![0.5; 16], vec![0.0; 16]]);
    let signal: Signal = period.repeat(MAX_REGIONS + 10);
    let out = detect(
        &wav(rate, &[signal], false),
        json!({"frame_ms": 1, "min_silence_ms": 1}),
    );
    assert_eq!(out["truncated"], true);
    assert_eq!(out["silences"].as_array().unwrap().len(), MAX_REGIONS);
    assert_eq!(out["sounds"].as_array().unwrap().len(), MAX_REGIONS);
    assert_eq!(regions(&out, "silences")[0], (2, 4));
    assert!(out["warnings"][0].as_str().unwrap().contains("more than"));
}

#[test]
fn long_files_are_refused_up_front() {
    // A header declaring 2^31 bytes of 8 kHz mono data: 37 hours, refused before decoding.
    let mut header = wav(8_000, &[sine(8_000, 10, 0.5)], false);
    header[40..44].copy_from_slice(&0x8000_0000u32.to_le_bytes());
    header[4..8].copy_from_slice(&(0x8000_0000u32 + 36).to_le_bytes());
    let err = detect_bytes(&header, json!({})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(
        err.message().contains("is too long: at least 2236 min of 8000 Hz audio in 1 channel(s), and this tool analyses at most 240 min"),
        "{err}"
    );
    assert_eq!(super::max_samples(44_100, 2), 60_000_000);
    assert_eq!(super::max_samples(8_000, 1), 8_000 * 4 * 3600);
}

fn error_of(bytes: &[u8]) -> String {
    let err = detect_bytes(bytes, json!({})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs, "{err}");
    assert!(!err.message().contains('\n'));
    err.message().to_owned()
}

#[test]
fn bad_files_give_clean_errors() {
    // Pseudo-random bytes (a fixed LCG, so the test is repeatable).
    let mut x = 0x1234_5678u32;
    let garbage: Vec<u8> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect();
    assert!(error_of(&garbage).contains("not a recognised audio file"));
    assert!(error_of(b"").contains("is empty"));
    assert!(error_of(b"%PDF-1.7\n...").contains("a PDF document"));

    // A WAV header followed by garbage, and a WAV cut inside its header.
    let mut bad_wav = b"RIFF\x24\x00\x00\x00WAVE".to_vec();
    bad_wav.extend_from_slice(&garbage[..200]);
    let message = error_of(&bad_wav);
    assert!(
        message.contains("looks like wav but cannot be read"),
        "{message}"
    );
    let good = wav(RATE, &[sine(RATE, 100, 0.5)], false);
    let message = error_of(&good[..30]);
    assert!(message.contains("looks like wav"), "{message}");

    // A WAV cut in its data still reports what is there, to the last whole sample.
    let good = wav(RATE, &[sine(RATE, 1000, 0.5)], false);
    let out = detect(&good[..44 + 16_001], json!({}));
    assert_eq!(out["duration_ms"], 500);
    assert_eq!(
        out["warnings"],
        json!([
            "the file declares 1000 ms of audio but only 500 ms could be read; it is probably truncated"
        ])
    );

    // MP3 and Ogg headers followed by garbage.
    let mut bad_mp3 = b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec();
    bad_mp3.extend_from_slice(&garbage);
    let message = error_of(&bad_mp3);
    assert!(message.contains("mp3"), "{message}");
    let mut opus = b"OggS\x00\x02".to_vec();
    opus.extend_from_slice(&[0; 20]);
    opus.push(1);
    opus.push(19);
    opus.extend_from_slice(b"OpusHead");
    let message = error_of(&opus);
    assert!(message.contains("Ogg file with Opus audio"), "{message}");
}

#[test]
fn bad_arguments_name_the_field() {
    let bytes = wav(RATE, &[zeros(RATE, 100)], false);
    for (args, field) in [
        (json!({"threshold_db": 3}), "threshold_db"),
        (json!({"threshold_db": -200}), "threshold_db"),
        (json!({"frame_ms": 0}), "frame_ms"),
        (json!({"frame_ms": 2000}), "frame_ms"),
        (
            json!({"min_silence_ms": 99_999_999_999u64}),
            "min_silence_ms",
        ),
        (json!({"channel": "left"}), "channel"),
        (json!({"channel": -1}), "channel"),
        (json!({"bogus": 1}), "bogus"),
    ] {
        let err = detect_bytes(&bytes, args.clone()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgs, "{args}");
        assert!(err.message().contains(field), "{args}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let err = super::run(
        json!({"source": {"path": "missing.wav"}}),
        dir.path(),
        &OutDir::at(dir.path()),
    )
    .unwrap_err();
    assert!(err.message().contains("no such file"), "{err}");
    let err = super::run(
        json!({"source": {"path": "."}}),
        dir.path(),
        &OutDir::at(Path::new("/nonexistent")),
    )
    .unwrap_err();
    assert!(err.message().contains("directory"), "{err}");
}

#[test]
fn sniffs_containers() {
    assert_eq!(sniff(b"fLaC\0\0\0\x22"), Sniffed::Supported("flac"));
    assert_eq!(sniff(b"\xFF\xFB\x90\x64"), Sniffed::Supported("mp3"));
    assert!(matches!(sniff(b"\xFF\xF1\x50\x80"), Sniffed::Unsupported(s) if s.contains("AAC")));
    assert!(matches!(sniff(b"\0\0\0\x20ftypM4A "), Sniffed::Unsupported(s) if s.contains("M4A")));
    assert!(matches!(sniff(b"FORM\0\0\0\0AIFF"), Sniffed::Unsupported(s) if s.contains("AIFF")));
    assert_eq!(sniff(b"hello"), Sniffed::Unknown);
}

/// The analyser as it was before it summed a frame's stretch at a time from the decoder's
/// planes: one interleaved sample frame per step, every sum stored back each time. `push`
/// must give the same bits.
fn push_one_by_one(a: &mut super::Analyser, interleaved: &[f32]) {
    use super::ChannelMode;
    let channels = a.channels;
    for sample_frame in interleaved.chunks_exact(channels) {
        match a.mode {
            ChannelMode::Mix => {
                let mixed =
                    sample_frame.iter().map(|&s| f64::from(s)).sum::<f64>() / channels as f64;
                a.sums[0] += mixed * mixed;
            }
            ChannelMode::Index(i) => {
                let s = f64::from(sample_frame[i]);
                a.sums[0] += s * s;
            }
            ChannelMode::Loudest => {
                for (sum, &s) in a.sums.iter_mut().zip(sample_frame) {
                    let s = f64::from(s);
                    *sum += s * s;
                }
            }
        }
        a.in_frame += 1;
        a.samples += 1;
        if a.in_frame == a.frame_len {
            a.end_frame();
        }
    }
}

/// Everything an analyser has measured, floats by their bits.
type State = (
    u64,
    u64,
    Vec<u64>,
    u64,
    u64,
    u64,
    Option<u64>,
    Vec<(u64, u64)>,
);

fn state(a: &super::Analyser) -> State {
    (
        a.samples,
        a.in_frame,
        a.sums.iter().map(|s| s.to_bits()).collect(),
        a.total_sum.to_bits(),
        a.loudest.to_bits(),
        a.quietest.to_bits(),
        a.silence_start,
        a.silences.clone(),
    )
}

/// `interleaved` split into one `Vec` per channel.
fn planes_of<S: Copy>(interleaved: &[S], channels: usize) -> Vec<Vec<S>> {
    (0..channels)
        .map(|c| {
            interleaved
                .iter()
                .skip(c)
                .step_by(channels)
                .copied()
                .collect()
        })
        .collect()
}

#[test]
fn pushing_a_stretch_at_a_time_measures_exactly_as_sample_by_sample() {
    use super::{Analyser, ChannelMode, Settings};
    // Three channels of tones, silences and noise-like ramps, 0.7 s at 8 kHz (frames of 80).
    let rate = 8_000u32;
    let interleaved: Vec<f32> = (0..5_600u32 * 3)
        .map(|i| {
            let (t, c) = (i / 3, i % 3);
            let level = if (t / 700) % 2 == 0 { 0.6 } else { 0.001 };
            (level * (f64::from(t * (c + 2)) * 0.37).sin() + f64::from(c) * 1e-5) as f32
        })
        .collect();
    for channel in [
        ChannelMode::Mix,
        ChannelMode::Loudest,
        ChannelMode::Index(2),
    ] {
        let settings = Settings {
            threshold_db: -30.0,
            min_silence_ms: 20,
            frame_ms: 10,
            channel,
        };
        let new = || Analyser::new(rate, 3, &settings, "test").expect("valid settings");
        let mut reference = new();
        push_one_by_one(&mut reference, &interleaved);
        // Packets that end inside, at and across frame boundaries.
        for packet_frames in [1, 7, 80, 81, 1_000, 5_600] {
            let mut a = new();
            for packet in interleaved.chunks(packet_frames * 3) {
                let planes = planes_of(packet, 3);
                a.push(&planes.iter().map(Vec::as_slice).collect::<Vec<_>>());
            }
            assert_eq!(
                state(&a),
                state(&reference),
                "{channel:?}, packets of {packet_frames}"
            );
        }
        assert!(!reference.silences.is_empty(), "the signal has silences");
    }
}

/// Integer samples are read straight from the decoder's planes, each made `f32` by symphonia's
/// conversion: the sums are those of the interleaved `f32` copy a `SampleBuffer` makes, to
/// the bit, for every channel mode, one channel and two.
#[test]
fn reads_integer_planes_as_a_sample_buffer_of_f32_would() {
    use super::{Analyser, ChannelMode, Settings};
    use symphonia::core::audio::{
        AudioBuffer, AudioBufferRef, Channels, SampleBuffer, Signal as _, SignalSpec,
    };
    let rate = 8_000u32;
    let frames = 4_000usize;
    for (channels, layout) in [
        (1, Channels::FRONT_LEFT),
        (2, Channels::FRONT_LEFT | Channels::FRONT_RIGHT),
    ] {
        let spec = SignalSpec::new(rate, layout);
        let mut buf = AudioBuffer::<i16>::new(frames as u64, spec);
        buf.render_reserved(Some(frames));
        for c in 0..channels {
            for (t, s) in buf.chan_mut(c).iter_mut().enumerate() {
                let level = if (t / 700) % 2 == 0 { 12_000.0 } else { 9.0 };
                *s = (level * ((t * (c + 2)) as f64 * 0.37).sin()) as i16;
            }
        }
        buf.chan_mut(0)[5] = i16::MIN;
        buf.chan_mut(0)[6] = i16::MAX;
        let mut interleaved = SampleBuffer::<f32>::new(frames as u64, spec);
        interleaved.copy_interleaved_ref(AudioBufferRef::S16(std::borrow::Cow::Borrowed(&buf)));
        for channel in [
            ChannelMode::Mix,
            ChannelMode::Loudest,
            ChannelMode::Index(channels - 1),
        ] {
            let settings = Settings {
                threshold_db: -30.0,
                min_silence_ms: 20,
                frame_ms: 10,
                channel,
            };
            let new = || Analyser::new(rate, channels, &settings, "test").expect("valid settings");
            let mut reference = new();
            push_one_by_one(&mut reference, interleaved.samples());
            let mut a = new();
            a.push(buf.planes().planes());
            assert_eq!(
                state(&a),
                state(&reference),
                "{channels} channel(s), {channel:?}"
            );
            assert!(!reference.silences.is_empty(), "the signal has silences");
        }
    }
}

/// 16-bit little-endian PCM as the decoder gives it (`vendor/symphonia-codec-pcm` reads it in
/// one pass per channel): each sample is the frame's two bytes, shifted up when fewer bits are
/// coded; a trailing partial frame is dropped, and a packet longer than the buffer is cut at
/// its capacity, as the per-sample reader did.
#[test]
fn the_pcm_decoder_reads_16_bit_little_endian_frames_exactly() {
    use symphonia::core::audio::{AudioBufferRef, Channels};
    use symphonia::core::codecs::{CODEC_TYPE_PCM_S16LE, CodecParameters, DecoderOptions};
    use symphonia::core::formats::Packet;
    let samples: Vec<i16> = (0..300i32)
        .map(|i| ((i * 7919) % 65_536 - 32_768) as i16)
        .chain([i16::MIN, i16::MAX, -1, 0, 1, 2])
        .collect();
    let mut bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    for (channels, layout) in [
        (1usize, Channels::FRONT_LEFT),
        (2, Channels::FRONT_LEFT | Channels::FRONT_RIGHT),
        (
            3,
            Channels::FRONT_LEFT | Channels::FRONT_RIGHT | Channels::FRONT_CENTRE,
        ),
    ] {
        for (coded_bits, max_frames, extra) in
            [(16u32, 1_000u64, 0usize), (12, 1_000, 3), (16, 50, 1)]
        {
            bytes.truncate(samples.len() * 2);
            bytes.extend(std::iter::repeat_n(0xAB, extra));
            let mut params = CodecParameters::new();
            params
                .for_codec(CODEC_TYPE_PCM_S16LE)
                .with_sample_rate(8_000)
                .with_channels(layout)
                .with_bits_per_coded_sample(coded_bits)
                .with_max_frames_per_packet(max_frames);
            let mut decoder = symphonia::default::get_codecs()
                .make(&params, &DecoderOptions::default())
                .expect("a PCM decoder");
            let decoded = decoder
                .decode(&Packet::new_from_slice(0, 0, 0, &bytes))
                .expect("decodes");
            let AudioBufferRef::S16(buf) = decoded else {
                panic!("16-bit PCM decodes to i16 samples");
            };
            let all: Vec<i16> = bytes
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
            let frames = (all.len() / channels).min(max_frames as usize);
            let expected: Vec<Vec<i16>> = (0..channels)
                .map(|c| {
                    (0..frames)
                        .map(|f| all[f * channels + c] << (16 - coded_bits))
                        .collect()
                })
                .collect();
            let planes = buf.planes();
            let got: Vec<Vec<i16>> = planes.planes().iter().map(|p| p.to_vec()).collect();
            assert_eq!(
                got, expected,
                "{channels} channel(s), {coded_bits} bits, at most {max_frames} frames"
            );
        }
    }
}

/// The integer sum of 16-bit squares gives the generic loop's `f64`, to the bit: over every
/// 16-bit value, over runs of every length up to 40 of pseudo-random samples from sums that
/// are multiples of 2⁻³⁰, and from sums it leaves to the generic loop (not such a multiple,
/// too close to 2²³, negative zero with no samples).
#[test]
fn the_integer_square_sum_of_16_bit_samples_is_the_generic_one_to_the_bit() {
    use super::{Squares, square_sum};
    let check = |sum: f64, samples: &[i16]| {
        assert_eq!(
            <i16 as Squares>::square_sum(sum, samples).to_bits(),
            square_sum(sum, samples).to_bits(),
            "from {sum:e}, {} samples: {:?}",
            samples.len(),
            &samples[..samples.len().min(8)]
        );
    };
    let every: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    check(0.0, &every);
    check(0.25, &every);
    check(1e-3, &every);
    check(8_388_000.0, &every);
    let mut x = 0x2545_f491_u32;
    let random: Vec<i16> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as i16
        })
        .collect();
    for len in 0..=40 {
        for start in [0, 1, 7, 1000] {
            for sum in [0.0, 3.0 / 1024.0, 12.375, 0.1, -0.0] {
                check(sum, &random[start..start + len]);
            }
        }
    }
    check(-0.0, &[]);
    // A loud frame's sum: the integer path gives what adding its squares in order does.
    let loud = [i16::MIN; 441];
    assert_eq!(<i16 as Squares>::square_sum(0.0, &loud), 441.0);
}
