#pragma once
// ModelRegistry: the models a server holds, by id, and their life cycle.
//
// Models come from two places: --model PATH at startup (repeatable; served under the
// directory's or file's name) and --models-dir DIR, whose entries an admin
// can load and unload by id at run time. An id resolves only to a direct
// entry of the models directory: no separators, no "..", no absolute path —
// a request can never make the server open a file outside it.
//
// Loading takes seconds and runs on the registry's own worker thread; the
// callers (HTTP handlers) get a callback and never block an I/O thread.
// A model in use is held by shared_ptr: unloading removes it from the table
// at once (new requests get 404), lets its in-flight requests finish until a
// deadline, aborts the rest, and its memory goes when the last response
// holding it ends.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "izwi/server/any_engine.hpp"
#include "izwi/server/api_error.hpp"

namespace izwi::server {

enum class ModelState : std::uint8_t { available, loading, loaded, unloading, failed };
std::string_view to_string(ModelState state) noexcept;

/// One row of the admin view.
struct ModelEntry {
  std::string id;
  ModelState state = ModelState::available;
  /// Set while loaded.
  std::optional<ModelInfo> info;
  std::optional<EngineStatus> status;
  /// Why the last load failed (for the operator: the admin view and the log).
  std::string error;
};

class ModelRegistry {
 public:
  /// Builds a served model from a path; throws on failure (the message is
  /// shown to the admin who asked). Called on the registry's worker thread.
  using Loader = std::function<std::unique_ptr<AnyEngine>(const std::string& id, const std::filesystem::path& path)>;
  /// Called when a load or unload ends: nullopt on success. A request refused
  /// at once (bad id, not loaded) calls it on the caller's thread before
  /// load()/unload() returns; otherwise it runs on the registry's worker.
  using Done = std::function<void(std::optional<ApiError>)>;

  ModelRegistry(Loader loader, std::optional<std::filesystem::path> models_dir = std::nullopt);
  /// Shuts every model down (now) and joins the worker.
  ~ModelRegistry();
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  /// Queues the load of a startup model (--model PATH); its id is the last
  /// path component without a .gguf or .bin extension unless `id` is given.
  void load_path(const std::filesystem::path& path, std::optional<std::string> id = std::nullopt, Done done = {});
  /// Admin: loads `id` from the models directory. Fails through `done` with
  /// 404 (no such entry / no models directory), 400 (an id that is not a
  /// plain name) or 409 (code model_already_loaded) when loaded or loading.
  void load(std::string_view id, Done done);
  /// Admin: unloads `id`, letting in-flight requests finish until `grace`
  /// has passed, then aborting them. 404 when not loaded.
  void unload(std::string_view id, std::chrono::milliseconds grace, Done done);

  /// The loaded model with this id, or nullptr.
  std::shared_ptr<AnyEngine> find(std::string_view id) const;
  /// Loaded models, in id order (/v1/models).
  std::vector<std::shared_ptr<AnyEngine>> loaded() const;
  /// Every model the registry knows: loaded, loading, failed, and the
  /// entries of the models directory not loaded (admin view).
  std::vector<ModelEntry> entries() const;
  std::optional<ModelEntry> entry(std::string_view id) const;
  /// The state of a model the registry holds (loading, loaded, unloading,
  /// failed); nullopt for an id it does not hold. Cheap: no directory scan —
  /// a handler that found no engine asks it to tell 503 (on its way) from 404.
  std::optional<ModelState> state(std::string_view id) const;

  /// False while a startup model is still loading (/health answers 503).
  bool ready() const;
  /// True when nothing is loaded or loading (tells a client why it got 404).
  bool empty() const;
  /// Concatenated Prometheus text of every loaded model's engine.
  std::string metrics_text() const;

  /// Graceful stop of every model (SIGTERM): finish until `deadline`, then abort.
  void shutdown(std::chrono::steady_clock::time_point deadline);

  /// The models-directory entry for `id`, or an ApiError (400 malformed id,
  /// 404 no such entry). Exposed for tests of the path rules.
  std::filesystem::path resolve(std::string_view id) const;

 private:
  struct Slot;
  void post(std::function<void()> job);
  /// The worker's half of a load: runs the loader, records the outcome, tells `done`.
  void run_load(const std::shared_ptr<Slot>& slot, bool startup, Done done);
  void worker_loop();

  Loader loader_;
  std::optional<std::filesystem::path> models_dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>, std::less<>> slots_;
  std::size_t startup_pending_ = 0;

  std::mutex jobs_mutex_;
  std::condition_variable jobs_ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace izwi::server

#include "izwi/server/impl/model_registry.hpp"
