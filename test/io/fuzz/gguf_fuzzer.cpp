// libFuzzer target for the GGUF reader (GgufFile::from_bytes). Contract: any
// input either opens, and then every accessor works on it, or is refused with
// format_error; a crash, a sanitizer report, another exception, a leak, a
// hang or unbounded memory is a bug. Seeds come from izwi's GGUF writer.

#include "seeds.hpp"

#include <izwi/io/gguf.hpp>
#include <izwi/io/gguf_qwen3.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("IZWI_FUZZ_SEED_DIR")) izwi_io_fuzz::write_gguf_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace izwi::io;
  const auto* first = reinterpret_cast<const std::byte*>(data);
  try {
    const GgufFile file = GgufFile::from_bytes(std::vector<std::byte>(first, first + size), "fuzz.gguf");
    for (const auto& entry : file.metadata()) {
      (void)entry.value.describe();
      (void)entry.value.size();
    }
    for (const auto& tensor : file.tensors()) {
      const std::vector<float> values = file.to_f32(tensor.name);
      if (values.size() != tensor.element_count()) std::abort();
      if (file.bytes(tensor).size() != tensor.byte_size) std::abort();
      (void)qwen3_hf_tensor_name(tensor.name);
    }
    try {
      (void)qwen3_config_from_gguf(file);
    } catch (const format_error&) {
      // Missing or mistyped qwen3 keys: expected for most inputs.
    }
  } catch (const format_error&) {
    // The expected outcome for malformed input.
  }
  return 0;
}
