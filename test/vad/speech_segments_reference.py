#!/usr/bin/env python3
"""Reference segmentation of per-window speech probabilities.

A separate, plain-Python statement of silero-vad's get_speech_timestamps
rules, used to check izwi::audio::speech_segments on onnxruntime's
probabilities. Prints one "start end" line (samples) per segment.

    speech_segments_reference.py PROBS.txt TOTAL_SAMPLES [threshold min_speech_ms
        max_speech_s min_silence_ms speech_pad_ms]
"""
import math
import sys


def segments(probs, total, threshold=0.5, min_speech_ms=250, max_speech_s=math.inf,
             min_silence_ms=100, pad_ms=30, rate=16000, window=512):
    neg = max(threshold - 0.15, 0.01)
    min_speech = rate * min_speech_ms / 1000
    pad = rate * pad_ms / 1000
    max_speech = rate * max_speech_s - window - 2 * pad
    min_silence = rate * min_silence_ms / 1000
    cut_silence = rate * 98 / 1000

    found = []
    current = None          # start of the open segment
    temp_end = prev_end = next_start = 0
    for i, p in enumerate(probs):
        pos = i * window
        if p >= threshold and temp_end:
            temp_end = 0
            if next_start < prev_end:
                next_start = pos
        if p >= threshold and current is None:
            current = pos
            continue
        if current is not None and pos - current > max_speech:
            if prev_end:
                found.append([current, prev_end])
                current = None if next_start < prev_end else next_start
                prev_end = next_start = temp_end = 0
            else:
                found.append([current, pos])
                current = None
                prev_end = next_start = temp_end = 0
                continue
        if p < neg and current is not None:
            if not temp_end:
                temp_end = pos
            if pos - temp_end > cut_silence:
                prev_end = temp_end
            if pos - temp_end < min_silence:
                continue
            if temp_end - current > min_speech:
                found.append([current, temp_end])
            current = None
            prev_end = next_start = temp_end = 0
    if current is not None and total - current > min_speech:
        found.append([current, total])

    for i, seg in enumerate(found):
        if i == 0:
            seg[0] = int(max(0, seg[0] - pad))
        if i != len(found) - 1:
            gap = found[i + 1][0] - seg[1]
            if gap < 2 * pad:
                seg[1] += int(gap // 2)
                found[i + 1][0] = int(max(0, found[i + 1][0] - gap // 2))
            else:
                seg[1] = int(min(total, seg[1] + pad))
                found[i + 1][0] = int(max(0, found[i + 1][0] - pad))
        else:
            seg[1] = int(min(total, seg[1] + pad))
    return found


def main():
    probs = [float(line) for line in open(sys.argv[1]) if line.strip()]
    total = int(sys.argv[2])
    kwargs = {}
    if len(sys.argv) > 3:
        t, ms, mx, sil, pad = sys.argv[3:8]
        kwargs = dict(threshold=float(t), min_speech_ms=float(ms), max_speech_s=float(mx),
                      min_silence_ms=float(sil), pad_ms=float(pad))
    for start, end in segments(probs, total, **kwargs):
        print(start, end)


if __name__ == "__main__":
    main()
