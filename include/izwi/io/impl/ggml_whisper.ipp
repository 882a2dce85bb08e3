#pragma once
// GgmlWhisperFile: parsing and validation; write_ggml_whisper.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <izwi/core/error.hpp>
#include <izwi/io/detail/safetensors_storage.hpp>

#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

namespace izwi::io {

namespace detail {

/// Reads the file front to back; every read checks the bytes are there.
class GgmlCursor {
 public:
  GgmlCursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  bool at_end() const noexcept { return offset_ == bytes_.size(); }
  std::size_t remaining() const noexcept { return bytes_.size() - offset_; }

  std::span<const std::byte> take(std::size_t n, std::string_view what) {
    if (n > remaining())
      throw format_error(file_, "", "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                                        " bytes at offset " + std::to_string(offset_) + ", " +
                                        std::to_string(remaining()) + " left");
    auto out = bytes_.subspan(offset_, n);
    offset_ += n;
    return out;
  }
  std::int32_t i32(std::string_view what) {
    std::int32_t v;
    std::memcpy(&v, take(4, what).data(), 4);
    return v;
  }
  /// A count or length: a non-negative i32 no larger than `limit`.
  std::size_t count(std::string_view what, std::size_t limit) {
    const std::int32_t v = i32(what);
    if (v < 0 || static_cast<std::size_t>(v) > limit)
      throw format_error(file_, "", std::string(what) + " is " + std::to_string(v) + ", outside [0, " +
                                        std::to_string(limit) + "]");
    return static_cast<std::size_t>(v);
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  std::size_t offset_ = 0;
};

IZWI_DECL std::uint64_t ggml_tensor_bytes(DType dtype, std::uint64_t elements) {
  return dtype == DType::q8_0 ? elements / 32 * 34 : elements * dtype_size(dtype);
}

}  // namespace detail

IZWI_DECL std::uint64_t GgmlWhisperTensor::element_count() const noexcept {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

IZWI_DECL std::string ggml_type_name(std::int32_t type) {
  static constexpr std::array<const char*, 31> names = {
      "f32",    "f16",   "q4_0",  "q4_1",   "q4_2 (removed)", "q4_3 (removed)", "q5_0",  "q5_1",
      "q8_0",   "q8_1",  "q2_K",  "q3_K",   "q4_K",           "q5_K",           "q6_K",  "q8_K",
      "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl",      "iq3_s",          "iq2_s", "iq4_xs",
      "i8",     "i16",   "i32",   "i64",    "f64",            "iq1_m",          "bf16"};
  if (type >= 0 && static_cast<std::size_t>(type) < names.size()) return names[static_cast<std::size_t>(type)];
  return "type " + std::to_string(type);
}

IZWI_DECL GgmlWhisperFile GgmlWhisperFile::open(const std::filesystem::path& path) {
  GgmlWhisperFile file;
  file.storage_ = detail::SafetensorsStorage::map_file(path);
  file.name_ = path.string();
  file.parse();
  return file;
}

IZWI_DECL GgmlWhisperFile GgmlWhisperFile::from_bytes(std::vector<std::byte> bytes, std::string display_name) {
  GgmlWhisperFile file;
  file.storage_ = detail::SafetensorsStorage::own(std::move(bytes));
  file.name_ = std::move(display_name);
  file.parse();
  return file;
}

IZWI_DECL GgmlWhisperFile::GgmlWhisperFile(GgmlWhisperFile&&) noexcept = default;
IZWI_DECL GgmlWhisperFile& GgmlWhisperFile::operator=(GgmlWhisperFile&&) noexcept = default;
IZWI_DECL GgmlWhisperFile::~GgmlWhisperFile() = default;

IZWI_DECL void GgmlWhisperFile::parse() {
  detail::GgmlCursor in(storage_->bytes(), name_);
  std::uint32_t magic;
  std::memcpy(&magic, in.take(4, "magic").data(), 4);
  if (magic != ggml_whisper_magic)
    throw format_error(name_, "", "not a ggml-whisper file (magic " + std::to_string(magic) + ", expected 0x67676d6c)");
  std::int32_t* fields[] = {&hparams_.n_vocab,      &hparams_.n_audio_ctx,  &hparams_.n_audio_state,
                            &hparams_.n_audio_head, &hparams_.n_audio_layer, &hparams_.n_text_ctx,
                            &hparams_.n_text_state, &hparams_.n_text_head,  &hparams_.n_text_layer,
                            &hparams_.n_mels,       &hparams_.ftype};
  for (std::int32_t* f : fields) *f = in.i32("hparams");

  mel_bins_ = in.count("mel filter count", 1024);
  mel_fft_bins_ = in.count("mel filter width", 1 << 16);
  mel_filters_.resize(mel_bins_ * mel_fft_bins_);
  auto filters = in.take(mel_filters_.size() * sizeof(float), "mel filters");
  std::memcpy(mel_filters_.data(), filters.data(), filters.size());

  const std::size_t vocab_count = in.count("vocabulary size", 1 << 20);
  vocabulary_.reserve(vocab_count);
  for (std::size_t i = 0; i < vocab_count; ++i) {
    const std::size_t len = in.count("token length", 1 << 16);
    auto text = in.take(len, "token text");
    vocabulary_.emplace_back(reinterpret_cast<const char*>(text.data()), len);
  }

  while (!in.at_end()) {
    const std::size_t n_dims = in.count("tensor dimension count", 4);
    const std::size_t name_len = in.count("tensor name length", 4096);
    const std::int32_t type = in.i32("tensor type");
    std::vector<std::uint64_t> ne(n_dims);
    for (auto& d : ne) d = in.count("tensor dimension", std::numeric_limits<std::int32_t>::max());
    auto name_bytes = in.take(name_len, "tensor name");
    GgmlWhisperTensor t;
    t.name.assign(reinterpret_cast<const char*>(name_bytes.data()), name_len);
    switch (type) {
      case 0: t.dtype = DType::f32; break;
      case 1: t.dtype = DType::f16; break;
      case 8: t.dtype = DType::q8_0; break;
      default:
        throw format_error(name_, t.name, "ggml type " + ggml_type_name(type) +
                                              " is not supported (izwi reads f32, f16 and q8_0 whisper files)");
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    const std::uint64_t elements = t.element_count();
    if (t.dtype == DType::q8_0 && (ne.empty() || ne[0] % 32 != 0))
      throw format_error(name_, t.name, "q8_0 tensor rows must be a multiple of 32 values");
    t.bytes = in.take(detail::ggml_tensor_bytes(t.dtype, elements), "tensor data");
    if (!index_.emplace(t.name, tensors_.size()).second) throw format_error(name_, t.name, "tensor appears twice");
    tensors_.push_back(std::move(t));
  }
}

IZWI_DECL const GgmlWhisperTensor* GgmlWhisperFile::find(std::string_view tensor_name) const noexcept {
  auto it = index_.find(tensor_name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

IZWI_DECL const GgmlWhisperTensor& GgmlWhisperFile::at(std::string_view tensor_name) const {
  if (const auto* t = find(tensor_name)) return *t;
  throw format_error(name_, std::string(tensor_name), "missing tensor");
}

IZWI_DECL void write_ggml_whisper(const std::filesystem::path& path, const GgmlWhisperHparams& h,
                               std::span<const float> mel_filters, std::size_t mel_bins, std::size_t mel_fft_bins,
                               std::span<const std::string> vocabulary, std::span<const GgmlTensorToWrite> tensors) {
  if (mel_filters.size() != mel_bins * mel_fft_bins) throw izwi::error("write_ggml_whisper: mel filter size mismatch");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw izwi::error(path.string() + ": cannot write");
  auto put_i32 = [&](std::int64_t v) {
    const auto x = static_cast<std::int32_t>(v);
    out.write(reinterpret_cast<const char*>(&x), 4);
  };
  put_i32(static_cast<std::int32_t>(ggml_whisper_magic));
  for (std::int32_t v : {h.n_vocab, h.n_audio_ctx, h.n_audio_state, h.n_audio_head, h.n_audio_layer, h.n_text_ctx,
                         h.n_text_state, h.n_text_head, h.n_text_layer, h.n_mels, h.ftype})
    put_i32(v);
  put_i32(static_cast<std::int64_t>(mel_bins));
  put_i32(static_cast<std::int64_t>(mel_fft_bins));
  out.write(reinterpret_cast<const char*>(mel_filters.data()), static_cast<std::streamsize>(mel_filters.size_bytes()));
  put_i32(static_cast<std::int64_t>(vocabulary.size()));
  for (const std::string& token : vocabulary) {
    put_i32(static_cast<std::int64_t>(token.size()));
    out.write(token.data(), static_cast<std::streamsize>(token.size()));
  }
  for (const GgmlTensorToWrite& t : tensors) {
    std::uint64_t elements = 1;
    for (auto d : t.shape) elements *= d;
    if (detail::ggml_tensor_bytes(t.dtype, elements) != t.data.size())
      throw izwi::error("write_ggml_whisper: " + t.name + ": data size does not match its shape");
    const std::int32_t type = t.dtype == DType::f32 ? 0 : t.dtype == DType::f16 ? 1 : t.dtype == DType::q8_0 ? 8 : -1;
    if (type < 0) throw izwi::error("write_ggml_whisper: " + t.name + ": only f32, f16 and q8_0 can be written");
    put_i32(static_cast<std::int64_t>(t.shape.size()));
    put_i32(static_cast<std::int64_t>(t.name.size()));
    put_i32(type);
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put_i32(static_cast<std::int64_t>(*it));
    out.write(t.name.data(), static_cast<std::streamsize>(t.name.size()));
    out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
  }
  if (!out) throw izwi::error(path.string() + ": write failed");
}

}  // namespace izwi::io
