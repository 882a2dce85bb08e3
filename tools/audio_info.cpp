// izwi-audio-info FILE...: what izwi's decoder (izwi/audio/decode.hpp:
// libsndfile, FFmpeg) reads from each audio file, one JSON line per file:
//   {"file", "format", "encoding", "sample_rate", "channels", "frames", "duration"}
// or {"file", "error"}; exits 1 when a file does not decode. The end-to-end
// speech tests check every response_format with it (no ffprobe needed).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "izwi/audio/decode.hpp"

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: izwi-audio-info FILE...\n");
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      izwi::audio::DecodeOptions options;
      options.mono = false;
      const izwi::audio::DecodedAudio d = izwi::audio::decode(bytes, options);
      std::printf("{\"file\": %s, \"format\": %s, \"encoding\": %s, \"sample_rate\": %u, \"channels\": %u, "
                  "\"frames\": %zu, \"duration\": %.6f}\n",
                  quoted(argv[i]).c_str(), quoted(d.info.format).c_str(), quoted(d.info.encoding).c_str(),
                  d.audio.sample_rate, d.audio.channels, d.audio.frames(), d.audio.duration_seconds());
    } catch (const std::exception& e) {
      std::printf("{\"file\": %s, \"error\": %s}\n", quoted(argv[i]).c_str(), quoted(e.what()).c_str());
      status = 1;
    }
  }
  return status;
}
