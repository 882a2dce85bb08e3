// libFuzzer target for the safetensors reader (SafetensorsFile::from_bytes).
// Contract: any input either opens, and then every tensor converts, or is
// refused with format_error; anything else is a bug.

#include "seeds.hpp"

#include <izwi/io/safetensors.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("IZWI_FUZZ_SEED_DIR")) izwi_io_fuzz::write_safetensors_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace izwi::io;
  const auto* first = reinterpret_cast<const std::byte*>(data);
  try {
    const SafetensorsFile file = SafetensorsFile::from_bytes(std::vector<std::byte>(first, first + size), "fuzz.safetensors");
    for (const auto& tensor : file.tensors()) {
      const std::vector<float> values = file.to_f32(tensor.name);
      if (values.size() != tensor.element_count()) std::abort();
      if (file.bytes(tensor).size() != tensor.byte_size()) std::abort();
    }
  } catch (const format_error&) {
    // The expected outcome for malformed input.
  }
  return 0;
}
