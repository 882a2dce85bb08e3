// The whisper.cpp side of izwi's Whisper goldens (built by
// test/reference/whisper_cpp_build.sh against whisper.cpp's own library, never
// by CI). Given a ggml model and a log-mel [n_mels][3000] f32 file, it prints
// one JSON object:
//   encoder:  every 997th value of the encoder output ([1500][d] row-major), its mean and rms
//   prompt_logits: logits after <|startoftranscript|><|en|><|transcribe|><|notimestamps|>,
//             every 101st id plus the top 5
//   greedy:   pure argmax decoding from that prompt (no suppression) to <|endoftext|> or 224 tokens
//   language: the most probable language token after <|startoftranscript|> and its probability
// whisper.cpp computes the mel itself in whisper-cli; here it takes izwi's,
// so the comparison is of the model alone.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "whisper.h"

extern "C" int izwi_reference_encoder_output(struct whisper_context* ctx, float* out, size_t n);

static void print_sample(const char* name, const std::vector<float>& v, size_t stride) {
  std::printf("  \"%s_stride\": %zu,\n  \"%s\": [", name, stride, name);
  for (size_t i = 0, k = 0; i < v.size(); i += stride, ++k) std::printf("%s%.9g", k ? ", " : "", v[i]);
  std::printf("],\n");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: reference_driver model.bin mel.f32 [threads]\n");
    return 2;
  }
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  whisper_context_params cparams = whisper_context_default_params();
  cparams.use_gpu = false;
  cparams.flash_attn = false;
  whisper_context* ctx = whisper_init_from_file_with_params(argv[1], cparams);
  if (!ctx) return 1;
  const int n_mels = whisper_model_n_mels(ctx), n_frames = 3000;
  std::vector<float> mel(static_cast<size_t>(n_mels) * n_frames);
  std::ifstream(argv[2], std::ios::binary).read(reinterpret_cast<char*>(mel.data()), mel.size() * 4);
  if (whisper_set_mel(ctx, mel.data(), n_frames, n_mels) != 0 || whisper_encode(ctx, 0, threads) != 0) return 1;

  const size_t n_state = whisper_model_n_audio_state(ctx), n_ctx = whisper_model_n_audio_ctx(ctx);
  std::vector<float> enc(n_state * n_ctx);
  if (izwi_reference_encoder_output(ctx, enc.data(), enc.size()) != 0) return 1;
  double sum = 0, sq = 0;
  for (float x : enc) sum += x, sq += double(x) * x;
  std::printf("{\n  \"encoder_mean\": %.9g,\n  \"encoder_rms\": %.9g,\n", sum / enc.size(), std::sqrt(sq / enc.size()));
  print_sample("encoder", enc, 997);

  const int n_vocab = whisper_n_vocab(ctx);
  std::vector<whisper_token> prompt = {whisper_token_sot(ctx), whisper_token_lang(ctx, whisper_lang_id("en")),
                                       whisper_token_transcribe(ctx), whisper_token_not(ctx)};
  std::printf("  \"prompt\": [%d, %d, %d, %d],\n", prompt[0], prompt[1], prompt[2], prompt[3]);
  if (whisper_decode(ctx, prompt.data(), (int)prompt.size(), 0, threads) != 0) return 1;
  // whisper_get_logits holds a row per batch token; only the last is computed.
  const float* last_row = whisper_get_logits(ctx) + (prompt.size() - 1) * n_vocab;
  std::vector<float> logits(last_row, last_row + n_vocab);
  print_sample("prompt_logits", logits, 101);

  std::vector<whisper_token> out;
  int n_past = (int)prompt.size();
  for (int step = 0; step < 224; ++step) {
    const float* l = step == 0 ? last_row : whisper_get_logits(ctx);
    whisper_token best = 0;
    for (int i = 1; i < n_vocab; ++i)
      if (l[i] > l[best]) best = i;
    out.push_back(best);
    if (best == whisper_token_eot(ctx)) break;
    if (whisper_decode(ctx, &best, 1, n_past++, threads) != 0) return 1;
  }
  std::printf("  \"greedy\": [");
  for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? ", " : "", out[i]);
  std::printf("],\n");

  std::vector<float> probs(whisper_lang_max_id() + 1);
  const int lang = whisper_lang_auto_detect(ctx, 0, threads, probs.data());
  std::printf("  \"language\": \"%s\",\n  \"language_token\": %d,\n  \"language_probability\": %.9g\n}\n",
              whisper_lang_str(lang), whisper_token_lang(ctx, lang), probs[lang]);
  whisper_free(ctx);
  return 0;
}
