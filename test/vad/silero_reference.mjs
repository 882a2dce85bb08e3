// Reference Silero VAD probabilities from onnxruntime-node on the original
// ONNX graph, window by window the way silero-vad's Python wrapper feeds it:
// 512-sample windows (the last one zero-padded), each preceded by the last 64
// samples of the previous window (zeros for the first), state (2, 1, 128)
// carried from "stateN" to "state", sr = 16000.
//
//   node test/vad/silero_reference.mjs MODEL.onnx AUDIO.wav OUT.txt
//
// AUDIO must be 16 kHz mono 16-bit PCM WAV (the fixtures are). Writes one
// probability per line.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';

const require = createRequire(new URL('../reference/package.json', import.meta.url));
const ort = require('onnxruntime-node');

function readPcm16Wav(path) {
  const buf = readFileSync(path);
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path}: not a WAV file`);
  let pos = 12, format = null;
  while (pos + 8 <= buf.length) {
    const id = buf.toString('ascii', pos, pos + 4);
    const size = buf.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ') {
      format = { tag: buf.readUInt16LE(body), channels: buf.readUInt16LE(body + 2), rate: buf.readUInt32LE(body + 4), bits: buf.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!format || format.tag !== 1 || format.channels !== 1 || format.rate !== 16000 || format.bits !== 16)
        throw new Error(`${path}: expected 16 kHz mono PCM16, got ${JSON.stringify(format)}`);
      const n = Math.floor(Math.min(size, buf.length - body) / 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; ++i) samples[i] = buf.readInt16LE(body + 2 * i) / 32768;
      return samples;
    }
    pos = body + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

const [modelPath, wavPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node silero_reference.mjs MODEL.onnx AUDIO.wav OUT.txt');
  process.exit(2);
}
const audio = readPcm16Wav(wavPath);
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
const window = 512, context = 64;
let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
let previous = new Float32Array(context);
const lines = [];
for (let start = 0; start < audio.length; start += window) {
  const input = new Float32Array(context + window);
  input.set(previous, 0);
  input.set(audio.subarray(start, Math.min(start + window, audio.length)), context);
  const result = await session.run({ input: new ort.Tensor('float32', input, [1, context + window]), state, sr });
  lines.push(result.output.data[0].toPrecision(9));
  state = result.stateN;
  previous = input.slice(input.length - context);
}
writeFileSync(outPath, lines.join('\n') + '\n');
