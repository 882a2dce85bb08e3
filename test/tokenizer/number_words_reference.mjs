// Independent reference for izwi's number words (izwi/text/speech_normalizer.hpp):
// npm number-to-words, pinned in test/reference/package.json.
//   node number_words_reference.mjs NODE_MODULES IN OUT
// IN: one decimal integer per line (< 2^53). OUT: "cardinal\tordinal" per line.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [nodeModules, inPath, outPath] = process.argv.slice(2);
const require = createRequire(path.join(nodeModules, "noop.js"));
const words = require("number-to-words");
const lines = readFileSync(inPath, "utf8").split("\n").filter((l) => l.length > 0);
const out = lines.map((l) => {
  const n = Number(l);
  if (!Number.isSafeInteger(n)) throw new Error(`not a safe integer: ${l}`);
  return `${words.toWords(n)}\t${words.toWordsOrdinal(n)}`;
});
writeFileSync(outPath, out.join("\n") + "\n");
