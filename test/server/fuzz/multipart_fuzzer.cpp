// libFuzzer target for the multipart/form-data parser.
// Input: the first line is the Content-Type header value, the rest the body.
// Contract: parse_form_data either throws ApiError 400 or returns at most
// Limits::max_parts parts, each with a non-empty name and a body that lies
// inside the input; re-encoding the parts with a fresh boundary parses back
// to the same parts.

#include <izwi/server/multipart.hpp>

#include "../multipart_test_support.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace {

void write_seed(const std::string& dir, const std::string& name, const std::string& content) {
  std::ofstream(dir + "/" + name, std::ios::binary) << content;
}

void write_seeds(const std::string& dir) {
  using izwi_multipart_test::encode;
  const std::string ct = "multipart/form-data; boundary=XyZ\n";
  write_seed(dir, "upload", ct + encode("XyZ", {{"file", "a.wav", "audio/wav", std::string("RIFF\0\0WAVE\r\n--X", 16)},
                                                {"model", std::nullopt, std::nullopt, "whisper-1"},
                                                {"timestamp_granularities[]", std::nullopt, std::nullopt, "word"}}));
  write_seed(dir, "quoted", "multipart/form-data; boundary=\"a b\"\npreamble\r\n" +
                                encode("a b", {{"x", "q\\\"uote", std::nullopt, ""}}) + "epilogue");
  write_seed(dir, "empty", ct + "--XyZ--\r\n");
  write_seed(dir, "truncated", ct + "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nval");
  write_seed(dir, "no_disposition", ct + "--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("IZWI_FUZZ_SEED_DIR")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace izwi::server;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view content_type = input.substr(0, newline);
  const std::string_view body = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  multipart::Limits limits;
  limits.max_parts = 16;
  limits.max_header_bytes = 256;
  try {
    const multipart::FormData form = multipart::parse_form_data(content_type, body, limits);
    if (form.parts.size() > limits.max_parts) std::abort();
    std::vector<izwi_multipart_test::Field> fields;
    for (const multipart::Part& part : form.parts) {
      if (part.name.empty()) std::abort();
      if (part.body.data() < body.data() || part.body.data() + part.body.size() > body.data() + body.size())
        std::abort();
      fields.push_back({part.name, part.filename, part.content_type, std::string(part.body)});
    }
    // Re-encode with a boundary that no part holds, and names and filenames
    // the writer can quote as they are (no '"', '\\', CR or LF).
    bool writable = true;
    for (const auto& f : fields)
      for (const std::string* s : {&f.name, f.filename ? &*f.filename : &f.name, &f.content_type.value()})
        if (s->find_first_of("\"\\\r\n") != std::string::npos) writable = false;
    const std::string boundary = "izwi-fuzz-boundary-7f3a";
    for (const auto& f : fields)
      if (f.content.find(boundary) != std::string::npos) writable = false;
    if (writable) {
      const std::string again = izwi_multipart_test::encode(boundary, fields);
      multipart::Limits roomy;
      roomy.max_header_bytes = 64 * 1024;
      const multipart::FormData back = multipart::parse(again, boundary, roomy);
      if (back.parts.size() != form.parts.size()) std::abort();
      for (std::size_t i = 0; i < back.parts.size(); ++i)
        if (back.parts[i].name != form.parts[i].name || back.parts[i].filename != form.parts[i].filename ||
            back.parts[i].body != form.parts[i].body)
          std::abort();
    }
  } catch (const ApiError& e) {
    if (e.status != 400) std::abort();
  }
  return 0;
}
