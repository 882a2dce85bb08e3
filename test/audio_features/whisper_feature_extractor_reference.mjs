// Reference for izwi's Whisper log-mel tests: Hugging Face transformers.js's
// WhisperFeatureExtractor (npm @huggingface/transformers, installed under
// test/reference with `npm ci --ignore-scripts`). It computes its own Slaney
// filterbank and FFT in JavaScript, and always pads or trims to 30 s.
//
// usage: node whisper_feature_extractor_reference.mjs NODE_MODULES IN.f32 N_MELS OUT.f32
//   IN: raw little-endian float32 samples (16 kHz mono)
//   OUT: raw float32, N_MELS x 3000 row-major
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, inPath, nMelsText, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node whisper_feature_extractor_reference.mjs NODE_MODULES IN.f32 N_MELS OUT.f32');
  process.exit(2);
}
// Load the package's Node ESM entry from the reference folder (this script
// lives outside it, so a bare import would not resolve). The entry also loads
// sharp, whose native binary is an optional dependency that an
// `npm ci --ignore-scripts` install may lack; the feature extractor itself is
// plain JavaScript, so fall back to the package's own source module for it.
const packageDir = join(nodeModules, '@huggingface', 'transformers');
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const entry = manifest.exports?.node?.import?.default ?? manifest.main;
let WhisperFeatureExtractor;
try {
  ({ WhisperFeatureExtractor } = await import(pathToFileURL(join(packageDir, entry)).href));
} catch (error) {
  const source = join(packageDir, 'src', 'models', 'whisper', 'feature_extraction_whisper.js');
  console.error(`transformers.js entry failed to load (${String(error).split('\n')[0]}); using ${source}`);
  ({ WhisperFeatureExtractor } = await import(pathToFileURL(source).href));
}

const bytes = readFileSync(inPath);
const samples = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
const nMels = Number(nMelsText);
// Whisper's preprocessor_config.json values (openai/whisper-* on the hub).
const extractor = new WhisperFeatureExtractor({
  feature_size: nMels,
  sampling_rate: 16000,
  hop_length: 160,
  chunk_length: 30,
  n_fft: 400,
  n_samples: 480000,
  nb_max_frames: 3000,
  padding_value: 0.0,
  return_attention_mask: false,
});
const { input_features } = await extractor(samples);
if (input_features.dims[1] !== nMels || input_features.dims[2] !== 3000) {
  console.error('unexpected feature shape ' + JSON.stringify(input_features.dims));
  process.exit(1);
}
const data = Float32Array.from(input_features.data);
writeFileSync(outPath, Buffer.from(data.buffer));
