// Loads GGUF files with llama.cpp (node-llama-cpp, CPU only) and prints, per
// file, one line of JSON: the ids llama.cpp's tokenizer gives "hello", and 5
// greedily generated ids. Used by gguf_llama_cpp_test.cpp to check that the
// files izwi's GgufWriter writes are files llama.cpp accepts.
//
//   node llama_cpp_load.mjs <node_modules dir> <file.gguf>...
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
const { getLlama } = await import(pathToFileURL(join(modules, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
for (const file of files) {
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 64 });
  const tokens = model.tokenize("hello");
  const generated = [];
  for await (const token of context.getSequence().evaluate(tokens, { temperature: 0 })) {
    generated.push(token);
    if (generated.length >= 5) break;
  }
  console.log(JSON.stringify({ file, tokens, generated, trainContextSize: model.trainContextSize }));
  await context.dispose();
  await model.dispose();
}
