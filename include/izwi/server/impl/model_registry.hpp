#pragma once
// ModelRegistry bodies. Included by izwi/server/model_registry.hpp.

#include <algorithm>
#include <exception>
#include <sstream>
#include <unordered_map>

namespace izwi::server {

inline std::string_view to_string(ModelState state) noexcept {
  switch (state) {
    case ModelState::available: return "available";
    case ModelState::loading: return "loading";
    case ModelState::loaded: return "loaded";
    case ModelState::unloading: return "unloading";
    case ModelState::failed: return "failed";
  }
  return "unknown";
}

struct ModelRegistry::Slot {
  std::string id;
  std::filesystem::path path;
  ModelState state = ModelState::loading;
  std::shared_ptr<AnyEngine> engine;
  std::string error;
};

namespace detail {

/// A model's id from its path: the last component, without ".gguf" or
/// ".bin" (whisper.cpp's ggml files: "ggml-base.en.bin" is "ggml-base.en").
inline std::string model_id_of(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  if (!p.has_filename()) p = p.parent_path();  // "dir/"
  if (p.extension() == ".gguf" || p.extension() == ".bin") return p.stem().string();
  return p.filename().string();
}

/// `text` with every spelling of `dir` (as given, absolute, canonical)
/// replaced by `name`.
inline std::string hide_path(std::string text, const std::filesystem::path& dir, std::string_view name) {
  std::vector<std::string> spellings{dir.string()};
  std::error_code ec;
  if (auto absolute = std::filesystem::absolute(dir, ec); !ec) spellings.push_back(absolute.string());
  if (auto canonical = std::filesystem::weakly_canonical(dir, ec); !ec) spellings.push_back(canonical.string());
  // Longest first, so a shorter spelling never cuts into a longer one.
  std::sort(spellings.begin(), spellings.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (std::string spelling : spellings) {
    while (spelling.size() > 1 && spelling.back() == '/') spelling.pop_back();
    if (spelling.empty() || spelling == "/" || spelling == ".") continue;
    for (std::size_t at = text.find(spelling); at != std::string::npos; at = text.find(spelling, at + name.size()))
      text.replace(at, spelling.size(), name);
  }
  return text;
}

/// Whether a models-directory entry looks servable: a directory with a
/// config.json, a .gguf file or a ggml .bin file (whisper.cpp).
inline bool looks_like_model(const std::filesystem::directory_entry& entry) {
  std::error_code ec;
  if (entry.is_directory(ec)) return std::filesystem::is_regular_file(entry.path() / "config.json", ec);
  return entry.is_regular_file(ec) && (entry.path().extension() == ".gguf" || entry.path().extension() == ".bin");
}

/// Merges Prometheus texts of several engines into one exposition: each
/// metric family's HELP and TYPE once, followed by the samples of every
/// engine (they differ by their model_name label). Families keep the order
/// in which they first appear.
inline std::string merge_prometheus_texts(const std::vector<std::string>& texts) {
  struct Family {
    std::string header;            // HELP and TYPE lines, from the first text that has the family
    std::size_t header_from = 0;   // index of that text + 1 (0: none yet)
    std::string samples;
  };
  std::vector<std::string> order;
  std::unordered_map<std::string, Family> families;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    std::istringstream in(texts[t]);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
        const std::size_t end = line.find(' ', 7);
        current = line.substr(7, end == std::string::npos ? std::string::npos : end - 7);
        auto [it, inserted] = families.try_emplace(current);
        if (inserted) order.push_back(current);
        if (it->second.header_from == 0) it->second.header_from = t + 1;
        if (it->second.header_from == t + 1) it->second.header += line + '\n';
      } else if (!line.empty()) {
        families[current].samples += line + '\n';
      }
    }
  }
  std::string out;
  for (const std::string& name : order) out += families[name].header + families[name].samples;
  return out;
}

}  // namespace detail

inline ModelRegistry::ModelRegistry(Loader loader, std::optional<std::filesystem::path> models_dir)
    : loader_(std::move(loader)), models_dir_(std::move(models_dir)) {
  if (models_dir_ && !std::filesystem::is_directory(*models_dir_))
    throw invalid_argument("models_dir", models_dir_->string() + " is not a directory");
  worker_ = std::thread([this] { worker_loop(); });
}

inline ModelRegistry::~ModelRegistry() {
  {
    std::lock_guard lock(jobs_mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  jobs_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  shutdown(std::chrono::steady_clock::now());
}

inline void ModelRegistry::post(std::function<void()> job) {
  {
    std::lock_guard lock(jobs_mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
  }
  jobs_ready_.notify_one();
}

inline void ModelRegistry::worker_loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(jobs_mutex_);
      jobs_ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

inline std::filesystem::path ModelRegistry::resolve(std::string_view id) const {
  if (!models_dir_)
    throw ApiError::not_found("model '" + std::string(id) + "' is not loaded and the server has no --models-dir",
                              "model_not_found");
  const bool plain = !id.empty() && id.size() <= 255 && id.front() != '.' &&
                     id.find_first_of(std::string_view("/\\\0:", 4)) == std::string_view::npos;
  if (!plain)
    throw ApiError::bad_request("model id must be a plain name inside the models directory (no '/', '\\', ':' "
                                "or leading '.')",
                                "id");
  for (const std::filesystem::path& candidate : {*models_dir_ / std::string(id), *models_dir_ / (std::string(id) + ".gguf"),
                                                 *models_dir_ / (std::string(id) + ".bin")}) {
    std::error_code ec;
    const std::filesystem::directory_entry entry(candidate, ec);
    // One checkpoint, one id (the one the listing shows): "x.gguf" is "x",
    // never a second name that would load the same file twice.
    if (!ec && detail::looks_like_model(entry) && detail::model_id_of(candidate) == id) return candidate;
  }
  std::string hint;
  if (const std::string canonical = detail::model_id_of(std::filesystem::path(std::string(id))); canonical != id)
    hint = " (a .gguf or .bin file is served under its name without the extension: '" + canonical + "')";
  throw ApiError::not_found("no model '" + std::string(id) + "' in the models directory" + hint, "model_not_found");
}

inline void ModelRegistry::load_path(const std::filesystem::path& path, std::optional<std::string> id, Done done) {
  auto slot = std::make_shared<Slot>();
  slot->id = id ? *id : detail::model_id_of(path);
  slot->path = path;
  {
    std::lock_guard lock(mutex_);
    if (slots_.contains(slot->id))
      throw invalid_argument("model", "two models would be served as '" + slot->id + "'");
    slots_.emplace(slot->id, slot);
    ++startup_pending_;
  }
  post([this, slot, done = std::move(done)]() mutable { run_load(slot, /*startup=*/true, std::move(done)); });
}

inline void ModelRegistry::load(std::string_view id, Done done) {
  std::shared_ptr<Slot> slot;
  try {
    const std::filesystem::path path = resolve(id);
    std::lock_guard lock(mutex_);
    if (auto it = slots_.find(id); it != slots_.end()) {
      if (it->second->state != ModelState::failed) {
        ApiError e(409, "invalid_request_error",
                   "model '" + std::string(id) + "' is already " + std::string(to_string(it->second->state)),
                   std::string("id"), std::string("model_already_loaded"));
        throw e;
      }
      slots_.erase(it);
    }
    slot = std::make_shared<Slot>();
    slot->id = std::string(id);
    slot->path = path;
    slots_.emplace(slot->id, slot);
  } catch (const ApiError& e) {
    if (done) done(e);
    return;
  }
  post([this, slot, done = std::move(done)]() mutable { run_load(slot, /*startup=*/false, std::move(done)); });
}

inline void ModelRegistry::run_load(const std::shared_ptr<Slot>& slot, bool startup, Done done) {
  std::optional<ApiError> failure;
  std::shared_ptr<AnyEngine> engine;
  try {
    engine = loader_(slot->id, slot->path);
  } catch (const std::exception& e) {
    // Whoever asked for this model (operator or admin) is told why it failed,
    // in words that do not say where the server keeps its files: the models
    // directory is named "<models-dir>". A startup model's path is the one
    // the operator gave.
    std::string message = e.what();
    if (!startup && models_dir_) message = detail::hide_path(std::move(message), *models_dir_, "<models-dir>");
    failure = ApiError::bad_request("loading '" + slot->id + "' failed: " + message, "id");
  }
  {
    std::lock_guard lock(mutex_);
    if (engine) {
      slot->engine = std::move(engine);
      slot->state = ModelState::loaded;
    } else {
      slot->state = ModelState::failed;
      slot->error = failure->what();
    }
    if (startup) --startup_pending_;
  }
  if (done) done(std::move(failure));
}

inline void ModelRegistry::unload(std::string_view id, std::chrono::milliseconds grace, Done done) {
  std::shared_ptr<Slot> slot;
  std::string refusal;
  {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(id);
    if (it == slots_.end()) {
      refusal = "not loaded";
    } else if (it->second->state != ModelState::loaded) {
      refusal = std::string(to_string(it->second->state));
    } else {
      slot = it->second;
      slot->state = ModelState::unloading;  // find() stops returning it: new requests get 404
    }
  }
  if (!slot) {
    if (done) done(ApiError::not_found("model '" + std::string(id) + "' is " + refusal, "model_not_found"));
    return;
  }
  post([this, slot, grace, done = std::move(done)] {
    std::shared_ptr<AnyEngine> engine = slot->engine;
    engine->shutdown(std::chrono::steady_clock::now() + grace);
    {
      std::lock_guard lock(mutex_);
      slot->engine.reset();
      if (auto it = slots_.find(slot->id); it != slots_.end() && it->second == slot) slots_.erase(it);
    }
    // The memory goes with the last holder: this one, unless a response
    // that was just aborted still holds the model for its final chunk.
    engine.reset();
    if (done) done(std::nullopt);
  });
}

inline std::shared_ptr<AnyEngine> ModelRegistry::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end() || it->second->state != ModelState::loaded) return nullptr;
  return it->second->engine;
}

inline std::vector<std::shared_ptr<AnyEngine>> ModelRegistry::loaded() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<AnyEngine>> out;
  for (const auto& [id, slot] : slots_)
    if (slot->state == ModelState::loaded) out.push_back(slot->engine);
  return out;
}

inline std::vector<ModelEntry> ModelRegistry::entries() const {
  std::vector<ModelEntry> out;
  // The engines as they were under the lock: an unload resets slot->engine
  // under it, so the slot's member must not be read after.
  std::vector<std::shared_ptr<AnyEngine>> engines;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, slot] : slots_) {
      ModelEntry e;
      e.id = slot->id;
      e.state = slot->state;
      e.error = slot->error;
      if (slot->engine) e.info = slot->engine->info();
      out.push_back(std::move(e));
      engines.push_back(slot->state == ModelState::loaded ? slot->engine : nullptr);
    }
  }
  // Status outside the registry lock: it takes the engine's metrics lock.
  for (std::size_t i = 0; i < out.size(); ++i)
    if (engines[i]) out[i].status = engines[i]->status();
  if (models_dir_) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(*models_dir_, ec)) {
      if (!detail::looks_like_model(entry)) continue;
      const std::string id = detail::model_id_of(entry.path());
      if (std::any_of(out.begin(), out.end(), [&](const ModelEntry& e) { return e.id == id; })) continue;
      out.push_back({id, ModelState::available, std::nullopt, std::nullopt, {}});
    }
  }
  std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.id < b.id; });
  return out;
}

inline std::optional<ModelEntry> ModelRegistry::entry(std::string_view id) const {
  for (ModelEntry& e : entries())
    if (e.id == id) return std::move(e);
  return std::nullopt;
}

inline std::optional<ModelState> ModelRegistry::state(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  return it->second->state;
}

inline bool ModelRegistry::ready() const {
  std::lock_guard lock(mutex_);
  return startup_pending_ == 0;
}

inline bool ModelRegistry::empty() const {
  std::lock_guard lock(mutex_);
  return slots_.empty();
}

inline std::string ModelRegistry::metrics_text() const {
  std::vector<std::string> texts;
  for (const auto& engine : loaded()) texts.push_back(engine->metrics_text());
  return detail::merge_prometheus_texts(texts);
}

inline void ModelRegistry::shutdown(std::chrono::steady_clock::time_point deadline) {
  for (const auto& engine : loaded()) engine->shutdown(deadline);
}

}  // namespace izwi::server
