#!/usr/bin/env python3
"""Writes a small seed corpus for the audio decoder fuzzer.

usage: make_seeds.py FIXTURES_AUDIO_DIR OUT_DIR

Seeds: hand-built WAVs of every sample format (u8, s16, s24, s32, float,
A-law, mu-law, stereo, streamed with 0xFFFFFFFF sizes), cut-down prefixes of
the jfk fixtures (wav, mp3, flac), then truncated and byte-corrupted variants
of each (seeded, so the corpus is the same on every run). All small (< 24 KiB),
so the fuzzer spends its time mutating rather than decoding long files.
"""
import os
import random
import struct
import sys


def wav(rate, channels, bits, tag, data, data_size=None):
    data_size = len(data) if data_size is None else data_size
    fmt = struct.pack('<HHIIHH', tag, channels, rate, rate * channels * bits // 8,
                      channels * bits // 8, bits)
    body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmt)) + fmt + b'data' + struct.pack('<I', data_size) + data
    return b'RIFF' + struct.pack('<I', min(len(body), 0xFFFFFFFF)) + body


def main():
    fixtures, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(5)
    seeds = {}

    ramp16 = b''.join(struct.pack('<h', (i * 731) % 65536 - 32768) for i in range(400))
    seeds['u8.wav'] = wav(8000, 1, 8, 1, bytes((i * 7) % 256 for i in range(400)))
    seeds['s16.wav'] = wav(16000, 1, 16, 1, ramp16)
    seeds['s16-stereo.wav'] = wav(44100, 2, 16, 1, ramp16)
    seeds['s24.wav'] = wav(48000, 1, 24, 1, bytes(rng.randrange(256) for _ in range(600)))
    seeds['s32.wav'] = wav(16000, 1, 32, 1, bytes(rng.randrange(256) for _ in range(800)))
    seeds['float.wav'] = wav(16000, 1, 32, 3, b''.join(struct.pack('<f', ((i % 50) - 25) / 25.0) for i in range(200)))
    seeds['alaw.wav'] = wav(8000, 1, 8, 6, bytes(rng.randrange(256) for _ in range(300)))
    seeds['ulaw.wav'] = wav(8000, 1, 8, 7, bytes(rng.randrange(256) for _ in range(300)))
    seeds['streamed.wav'] = wav(24000, 1, 16, 1, ramp16, data_size=0xFFFFFFFF)

    def fixture(name, size):
        path = os.path.join(fixtures, name)
        if os.path.exists(path):
            with open(path, 'rb') as f:
                return f.read(size)
        return None

    jfk_wav = fixture('jfk.wav', 44 + 200 + 4000)
    if jfk_wav:
        # Keep the header (with its LIST chunk), fix the sizes to the cut length.
        data_at = jfk_wav.find(b'data')
        cut = bytearray(jfk_wav)
        struct.pack_into('<I', cut, 4, len(cut) - 8)
        struct.pack_into('<I', cut, data_at + 4, len(cut) - data_at - 8)
        seeds['jfk-cut.wav'] = bytes(cut)
    for name, size in (('jfk.mp3', 6000), ('jfk.flac', 20000)):
        data = fixture(name, size)
        if data:
            seeds['jfk-cut.' + name.split('.')[1]] = data

    # Headers alone and magic numbers alone.
    for magic in (b'RIFF', b'fLaC', b'OggS', b'ID3\x04\x00\x00\x00\x00\x00\x00', b'\xff\xfb\x90\x00', b'FORM'):
        seeds['magic-' + magic[:4].hex()] = magic

    variants = {}
    for name, data in seeds.items():
        for cut in (len(data) // 2, len(data) * 9 // 10, 64):
            if 0 < cut < len(data):
                variants['%s.trunc%d' % (name, cut)] = data[:cut]
        for k in range(2):
            b = bytearray(data)
            for _ in range(max(1, len(b) // 200)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            variants['%s.flip%d' % (name, k)] = bytes(b)
    seeds.update(variants)

    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print('wrote %d seeds to %s' % (len(seeds), out))


if __name__ == '__main__':
    main()
