// libFuzzer target for the JSON reader and the config layer on top of it.
// Contract: any input parses or throws json_error; a parsed document either
// reads as a TransformerConfig / GenerationConfig or throws config_error.

#include "seeds.hpp"

#include <izwi/io/config.hpp>
#include <izwi/io/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("IZWI_FUZZ_SEED_DIR")) izwi_io_fuzz::write_json_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace izwi::io;
  try {
    const JsonValue doc = parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    // A parsed document re-serialises its strings as valid JSON.
    if (const auto text = json_string(doc); text && parse_json(json_quote(*text)).as_string() != *text) std::abort();
    try {
      const ConfigView view(doc, "fuzz.json");
      (void)TransformerConfig::from(view);
    } catch (const config_error&) {
    }
    try {
      (void)GenerationConfig::from(ConfigView(doc, "fuzz.json"));
    } catch (const config_error&) {
    }
  } catch (const json_error&) {
    // The expected outcome for malformed input.
  }
  return 0;
}
