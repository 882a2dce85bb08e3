// libFuzzer target for izwi::audio::decode, the entry point for uploaded
// bytes. The contract under test: any input either decodes or throws
// DecodeError; anything else (a crash, a sanitizer report, another
// exception, a leak, a hang, unbounded memory) is a bug.
//
// Built with clang++ by izwi_add_fuzz_test (cmake/izwiFuzz.cmake). When
// IZWI_FUZZ_SEED_DIR is set, LLVMFuzzerInitialize first writes seeds that only
// izwi's own encoders can make here (Ogg Opus, streamed FLAC, mp3 with and
// without its Info frame, ADTS AAC), and the containers FFmpeg's muxers make
// (M4A/AAC, fragmented MP4, WebM/Opus, live WebM, Matroska/FLAC, MPEG-PS/MP2,
// through test/audio_io/av_mux_support.hpp), beside the ones make_seeds.py
// cuts from the fixtures; libFuzzer reads corpus folders after Initialize.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>

#include "../av_mux_support.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/audio/encode.hpp"

namespace {

void write_seed(const std::string& dir, const std::string& name, std::span<const std::byte> bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_encoded_seeds(const std::string& dir) {
  using namespace izwi::audio;
  std::vector<float> tone(1600);
  for (std::size_t i = 0; i < tone.size(); ++i) tone[i] = 0.3f * static_cast<float>((i * 37) % 200) / 200.0f;
  for (AudioFormat f : {AudioFormat::flac, AudioFormat::opus, AudioFormat::mp3, AudioFormat::aac}) {
    write_seed(dir, "izwi-" + std::string(to_string(f)), encode(tone, 16000, 1, f));
    StreamingEncoder enc(f, 8000, 1);
    auto bytes = enc.push(tone);
    auto tail = enc.finish();
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    write_seed(dir, "izwi-streamed-" + std::string(to_string(f)), bytes);
  }
  std::vector<float> stereo(2 * 800, 0.1f);
  write_seed(dir, "izwi-stereo.opus", encode(stereo, 48000, 2, AudioFormat::opus));

  using izwi::audio::test::mux_audio;
  using izwi::audio::test::mux_spec;
  const struct {
    const char* name;
    mux_spec spec;
  } containers[] = {
      {"ffmpeg.m4a", {"ipod", "aac"}},
      {"ffmpeg-fragmented.mp4", {"mp4", "aac", true, "movflags=frag_keyframe+empty_moov"}},
      {"ffmpeg.webm", {"webm", "libopus"}},
      {"ffmpeg-live.webm", {"webm", "libopus", false}},
      {"ffmpeg-flac.mkv", {"matroska", "flac"}},
      {"ffmpeg.mpeg", {"mpeg", "mp2"}},
  };
  for (const auto& c : containers) write_seed(dir, c.name, mux_audio(c.spec, tone, 16000));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  av_log_set_level(AV_LOG_QUIET);  // FFmpeg would report every malformed input on stderr
  if (const char* dir = std::getenv("IZWI_FUZZ_SEED_DIR")) write_encoded_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  izwi::audio::DecodeOptions options;
  options.max_duration_seconds = 20.0;  // keeps each run short; the bound itself is under test
  // Let the first byte pick mono/interleaved and resampling, to reach both paths.
  if (size > 0) {
    options.mono = (data[0] & 1) != 0;
    options.target_sample_rate = (data[0] & 2) != 0 ? 16000 : 0;
  }
  try {
    izwi::audio::decode(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size),
                        options);
  } catch (const izwi::audio::DecodeError&) {
    // The expected outcome for malformed input.
  }
  return 0;
}
