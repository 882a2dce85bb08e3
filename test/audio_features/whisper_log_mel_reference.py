#!/usr/bin/env python3
"""Independent numpy reference for izwi's Whisper log-mel frontend tests.

Written from the published description of Whisper's frontend (openai/whisper
audio.py: pad_or_trim, torch.stft with a periodic Hann window, center=True and
reflect padding, last frame dropped, |X|^2, mel filters, log10 clamp, (x+4)/4),
in float64 with numpy.fft.rfft. The mel filters are Whisper's own published
matrices (mel_filters.npz), so this shares no code or constants with izwi's C++
filterbank.

Commands (all arrays are raw little-endian float32 files):
  filters NPZ OUT_DIR             write OUT_DIR/mel_80.f32 and mel_128.f32 (row-major n_mels x 201)
  log_mel NPZ IN N_MELS MODE OUT  log-mel of the samples in IN; MODE is pad_or_trim_30s or none;
                                  writes n_mels x n_frames row-major to OUT
"""
import os
import sys

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
CHUNK_SAMPLES = 30 * SAMPLE_RATE


def write_f32(path, array):
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


def periodic_hann(n):
    k = np.arange(n, dtype=np.float64)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * k / n)


def log_mel(samples, filters, mode):
    x = samples.astype(np.float64)
    if mode == "pad_or_trim_30s":
        x = x[:CHUNK_SAMPLES]
        x = np.pad(x, (0, CHUNK_SAMPLES - x.shape[0]))
    elif mode != "none":
        raise SystemExit("unknown mode " + mode)
    n_frames_kept = x.shape[0] // HOP  # 1 + n // hop frames, minus the dropped last one
    if n_frames_kept == 0:
        return np.zeros((filters.shape[0], 0), dtype=np.float32)
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    starts = np.arange(n_frames_kept) * HOP
    frames = padded[starts[:, None] + np.arange(N_FFT)[None, :]]
    spectrum = np.fft.rfft(frames * periodic_hann(N_FFT)[None, :], axis=1)
    power = spectrum.real ** 2 + spectrum.imag ** 2  # (frames, 201)
    mel = filters.astype(np.float64) @ power.T  # (n_mels, frames)
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)


def main(argv):
    if len(argv) >= 3 and argv[0] == "filters":
        with np.load(argv[1]) as npz:
            for name in ("mel_80", "mel_128"):
                write_f32(os.path.join(argv[2], name + ".f32"), npz[name])
        return 0
    if len(argv) == 6 and argv[0] == "log_mel":
        npz_path, in_path, n_mels, mode, out_path = argv[1:]
        with np.load(npz_path) as npz:
            filters = npz["mel_" + n_mels]
        samples = np.fromfile(in_path, dtype="<f4")
        write_f32(out_path, log_mel(samples, filters, mode))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
