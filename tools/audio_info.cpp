// izwi-audio-info FILE...: what izwi's decoder (izwi/audio/decode.hpp:
// libsndfile, FFmpeg) reads from each audio file, one JSON line per file:
//   {"file", "format", "encoding", "sample_rate", "channels", "frames", "duration"}
// or {"file", "error"}; exits 1 when a file does not decode, 2 for a mistake
// on the command line (no FILE, an unknown option). The end-to-end speech
// tests check every response_format with it (no ffprobe needed).
//
//   izwi-audio-info FILE...
//   izwi-audio-info -- -FILE...   (a file whose name starts with '-')
//   izwi-audio-info --help
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "izwi/audio/decode.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

constexpr cli::Program program{"izwi-audio-info", "izwi-audio-info FILE...",
                               "what izwi's decoder reads from each audio file, one JSON line per file"};

/// The files named on the command line, or exit: 2 on a mistake, 0 after --help.
std::vector<std::string> parse(int argc, char** argv) {
  std::vector<std::string> files;
  po::options_description options("options");
  options.add_options()("help,h", "show this help");
  po::options_description hidden;  // the FILE... operands, not listed as an option
  hidden.add_options()("file", po::value(&files));
  po::positional_options_description operands;
  operands.add("file", -1);
  cli::read_command_line(argc, argv, program, options, hidden, operands);
  if (files.empty()) cli::usage_error(program, "no FILE given");
  return files;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

/// Prints the file's JSON line; false when it does not decode.
bool print_info(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    izwi::audio::DecodeOptions options;
    options.mono = false;
    const izwi::audio::DecodedAudio d = izwi::audio::decode(bytes, options);
    std::printf("{\"file\": %s, \"format\": %s, \"encoding\": %s, \"sample_rate\": %u, \"channels\": %u, "
                "\"frames\": %zu, \"duration\": %.6f}\n",
                quoted(file).c_str(), quoted(d.info.format).c_str(), quoted(d.info.encoding).c_str(),
                d.audio.sample_rate, d.audio.channels, d.audio.frames(), d.audio.duration_seconds());
    return true;
  } catch (const std::exception& e) {
    std::printf("{\"file\": %s, \"error\": %s}\n", quoted(file).c_str(), quoted(e.what()).c_str());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int status = 0;
  for (const std::string& file : parse(argc, argv))
    if (!print_info(file)) status = 1;
  return status;
}
