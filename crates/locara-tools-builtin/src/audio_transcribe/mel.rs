//! Whisper's log-mel spectrogram, single-threaded (candle's own spawns threads).
//!
//! Matches `whisper.audio.log_mel_spectrogram`: a 400-point STFT with a periodic Hann window,
//! hop 160, centred frames (reflect padding), power spectrum, the 80-band Slaney mel filter
//! bank of librosa (`librosa.filters.mel(sr=16000, n_fft=400, n_mels=80)`, which is what
//! Whisper's `mel_filters.npz` holds), `log10` clamped at 1e-10, floored at the maximum
//! minus 8, then `(x + 4) / 4`.

/// Samples per second Whisper expects.
pub(crate) const SAMPLE_RATE: usize = 16_000;
/// FFT size (25 ms).
pub(crate) const N_FFT: usize = 400;
/// Hop between frames (10 ms).
pub(crate) const HOP: usize = 160;

type Complex = (f32, f32);

/// A complex FFT of one fixed size, radix 2 down to odd sizes, which get a plain DFT.
#[derive(Debug, Clone)]
pub(crate) struct Fft {
    /// `exp(-2πik/n)` for `k` in `0..n`.
    twiddles: Vec<Complex>,
}

impl Fft {
    pub(crate) fn new(n: usize) -> Fft {
        let twiddles = (0..n)
            .map(|k| {
                let angle = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                (angle.cos() as f32, angle.sin() as f32)
            })
            .collect();
        Fft { twiddles }
    }

    /// The DFT of `input` (length `n`).
    pub(crate) fn run(&self, input: &[Complex]) -> Vec<Complex> {
        debug_assert_eq!(input.len(), self.twiddles.len());
        let mut out = vec![(0.0, 0.0); input.len()];
        self.rec(input, 1, &mut out);
        out
    }

    /// DFT of `x` (a subsequence of length n/`step`), using every `step`-th twiddle.
    fn rec(&self, x: &[Complex], step: usize, out: &mut [Complex]) {
        let n = x.len();
        if n % 2 == 1 {
            for (k, o) in out.iter_mut().enumerate() {
                let mut acc = (0.0f32, 0.0f32);
                for (j, &(re, im)) in x.iter().enumerate() {
                    let (wr, wi) = self.twiddles[(j * k % n) * step];
                    acc.0 += re * wr - im * wi;
                    acc.1 += re * wi + im * wr;
                }
                *o = acc;
            }
            return;
        }
        let half = n / 2;
        let even: Vec<Complex> = x.iter().step_by(2).copied().collect();
        let odd: Vec<Complex> = x.iter().skip(1).step_by(2).copied().collect();
        let mut e = vec![(0.0, 0.0); half];
        let mut o = vec![(0.0, 0.0); half];
        self.rec(&even, step * 2, &mut e);
        self.rec(&odd, step * 2, &mut o);
        for k in 0..half {
            let (wr, wi) = self.twiddles[k * step];
            let (or, oi) = o[k];
            let t = (or * wr - oi * wi, or * wi + oi * wr);
            out[k] = (e[k].0 + t.0, e[k].1 + t.1);
            out[k + half] = (e[k].0 - t.0, e[k].1 - t.1);
        }
    }
}

fn hz_to_mel(hz: f64) -> f64 {
    // Slaney's scale: linear below 1 kHz, logarithmic above.
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / logstep
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (logstep * (mel - min_log_mel)).exp()
    } else {
        mel * f_sp
    }
}

/// librosa's mel filter bank (Slaney scale and normalisation), `n_mels × (n_fft/2 + 1)`.
pub(crate) fn mel_filters(sample_rate: usize, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let n_freqs = n_fft / 2 + 1;
    let fft_freqs: Vec<f64> = (0..n_freqs)
        .map(|k| k as f64 * sample_rate as f64 / n_fft as f64)
        .collect();
    let (lo, hi) = (hz_to_mel(0.0), hz_to_mel(sample_rate as f64 / 2.0));
    let mel_f: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(lo + (hi - lo) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut weights = vec![0.0f32; n_mels * n_freqs];
    for m in 0..n_mels {
        let norm = 2.0 / (mel_f[m + 2] - mel_f[m]);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - mel_f[m]) / (mel_f[m + 1] - mel_f[m]);
            let upper = (mel_f[m + 2] - f) / (mel_f[m + 2] - mel_f[m + 1]);
            weights[m * n_freqs + k] = (lower.min(upper).max(0.0) * norm) as f32;
        }
    }
    weights
}

/// The log-mel spectrogram of 16 kHz mono `samples`, as `n_mels` rows of `frames` values
/// (row-major), with `frames = samples.len() / HOP`.
pub(crate) fn log_mel(samples: &[f32], n_mels: usize) -> (Vec<f32>, usize) {
    let filters = mel_filters(SAMPLE_RATE, N_FFT, n_mels);
    let n_freqs = N_FFT / 2 + 1;
    let window: Vec<f32> = (0..N_FFT)
        .map(|i| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / N_FFT as f64).cos()) as f32)
        .collect();
    // torch.stft(center=True) yields 1 + len/HOP frames; Whisper drops the last.
    let frames = samples.len() / HOP;
    let pad = N_FFT / 2;
    let at = |i: isize| -> f32 {
        // Reflect padding (the edge sample is not repeated).
        let n = samples.len() as isize;
        if n == 0 {
            return 0.0;
        }
        let mut i = i;
        if i < 0 {
            i = -i;
        }
        if i >= n {
            i = 2 * (n - 1) - i;
        }
        samples
            .get(i.clamp(0, n - 1) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let fft = Fft::new(N_FFT);
    let mut mel = vec![0.0f32; n_mels * frames];
    let mut buf = vec![(0.0f32, 0.0f32); N_FFT];
    let mut power = vec![0.0f32; n_freqs];
    for t in 0..frames {
        let start = (t * HOP) as isize - pad as isize;
        for (j, b) in buf.iter_mut().enumerate() {
            *b = (at(start + j as isize) * window[j], 0.0);
        }
        let spectrum = fft.run(&buf);
        for (p, &(re, im)) in power.iter_mut().zip(&spectrum) {
            *p = re * re + im * im;
        }
        for m in 0..n_mels {
            let row = &filters[m * n_freqs..(m + 1) * n_freqs];
            let energy: f32 = row.iter().zip(&power).map(|(w, p)| w * p).sum();
            mel[m * frames + t] = energy.max(1e-10).log10();
        }
    }
    let max = mel.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in &mut mel {
        *v = (v.max(max - 8.0) + 4.0) / 4.0;
    }
    (mel, frames)
}
