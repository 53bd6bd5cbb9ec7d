//! Decoding WAV files to 16 kHz mono `f32` samples.
//!
//! Handles RIFF/WAVE with integer PCM (8, 16, 24 or 32 bits), IEEE float (32 or 64 bits) and
//! `WAVE_FORMAT_EXTENSIBLE` wrapping either. Channels are averaged; other sample rates are
//! resampled to 16 kHz by linear interpolation (after a moving-average low-pass when
//! downsampling), which is plenty for speech recognition.

/// Decoded audio: mono samples in [-1, 1] at `sample_rate`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Audio {
    pub(crate) samples: Vec<f32>,
    pub(crate) sample_rate: u32,
}

const FORMAT_PCM: u16 = 1;
const FORMAT_FLOAT: u16 = 3;
const FORMAT_EXTENSIBLE: u16 = 0xfffe;

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Decodes a WAV file.
///
/// # Errors
/// A message saying why the bytes are not a WAV file this decoder handles.
pub(crate) fn decode(bytes: &[u8]) -> Result<Audio, String> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(
            "it is not a WAV file (no RIFF/WAVE header); convert it to WAV first (e.g. 16 kHz mono 16-bit PCM)"
                .to_owned(),
        );
    }
    let mut pos = 12;
    let mut format: Option<(u16, u16, u32, u16)> = None;
    let mut data: Option<&[u8]> = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let declared = u32_at(bytes, pos + 4) as usize;
        let body_start = pos + 8;
        // Streamed WAVs may declare a size past the end (or 0xFFFFFFFF): take what is there.
        let body_end = body_start.saturating_add(declared).min(bytes.len());
        let body = &bytes[body_start..body_end];
        match id {
            b"fmt " => {
                if body.len() < 16 {
                    return Err("the WAV fmt chunk is truncated".to_owned());
                }
                let mut tag = u16_at(body, 0);
                let channels = u16_at(body, 2);
                let rate = u32_at(body, 4);
                let bits = u16_at(body, 14);
                if tag == FORMAT_EXTENSIBLE {
                    if body.len() < 26 {
                        return Err("the WAV extensible fmt chunk is truncated".to_owned());
                    }
                    // The sub-format GUID starts with the plain format tag.
                    tag = u16_at(body, 24);
                }
                format = Some((tag, channels, rate, bits));
            }
            b"data" => {
                data = Some(body);
                if format.is_some() {
                    break;
                }
            }
            _ => {}
        }
        pos = body_start
            .saturating_add(declared)
            .saturating_add(declared & 1);
    }
    let (tag, channels, rate, bits) =
        format.ok_or_else(|| "the WAV file has no fmt chunk".to_owned())?;
    let data = data.ok_or_else(|| "the WAV file has no data chunk".to_owned())?;
    if channels == 0 || rate == 0 {
        return Err(format!(
            "the WAV header is invalid ({channels} channels at {rate} Hz)"
        ));
    }
    let sample: fn(&[u8]) -> f32 = match (tag, bits) {
        (FORMAT_PCM, 8) => |b| (f32::from(b[0]) - 128.0) / 128.0,
        (FORMAT_PCM, 16) => |b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0,
        (FORMAT_PCM, 24) => {
            |b| (i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as f32 / 8_388_608.0
        }
        (FORMAT_PCM, 32) => {
            |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0
        }
        (FORMAT_FLOAT, 32) => |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        (FORMAT_FLOAT, 64) => {
            |b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
        }
        _ => {
            return Err(format!(
                "the WAV encoding (format tag {tag}, {bits} bits per sample) is not supported; use PCM (8, 16, 24 or 32-bit) or 32/64-bit float"
            ));
        }
    };
    let width = usize::from(bits / 8);
    let frame = width * usize::from(channels);
    let samples = data
        .chunks_exact(frame)
        .map(|f| {
            let sum: f32 = f.chunks_exact(width).map(sample).sum();
            sum / f32::from(channels)
        })
        .collect();
    Ok(Audio {
        samples,
        sample_rate: rate,
    })
}

/// Resamples mono audio to `to` Hz by linear interpolation; when downsampling, a moving
/// average over one output period first removes most of what would alias.
pub(crate) fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() {
        return samples.to_vec();
    }
    let ratio = f64::from(from) / f64::from(to);
    let smoothed;
    let input = if ratio > 1.0 {
        let width = ratio.round() as usize;
        if width > 1 {
            let mut acc = 0.0f64;
            let mut out = Vec::with_capacity(samples.len());
            for (i, &s) in samples.iter().enumerate() {
                acc += f64::from(s);
                if i >= width {
                    acc -= f64::from(samples[i - width]);
                }
                out.push((acc / (i + 1).min(width) as f64) as f32);
            }
            smoothed = out;
            &smoothed[..]
        } else {
            samples
        }
    } else {
        samples
    };
    let n_out = ((input.len() as f64) / ratio).floor() as usize;
    (0..n_out)
        .map(|i| {
            let x = i as f64 * ratio;
            let j = x.floor() as usize;
            let frac = (x - j as f64) as f32;
            let a = input[j.min(input.len() - 1)];
            let b = input[(j + 1).min(input.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}
