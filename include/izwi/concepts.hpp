#pragma once
// All policy contracts: scheduler, KV cache, executor, model family, backend ops, stream notifier.
#include "izwi/concepts/backend_ops.hpp"
#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/model_family.hpp"
#include "izwi/concepts/scheduler.hpp"
#include "izwi/concepts/stream_notifier.hpp"
#include "izwi/concepts/tags.hpp"
