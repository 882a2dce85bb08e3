#pragma once

namespace izwi {

inline std::string_view to_string(Task task) noexcept {
  switch (task) {
    case Task::chat: return "chat";
    case Task::completion: return "completion";
    case Task::tts: return "tts";
    case Task::asr: return "asr";
    case Task::translation: return "translation";
  }
  return "unknown";
}

inline std::string_view to_string(RequestStatus status) noexcept {
  switch (status) {
    case RequestStatus::waiting: return "waiting";
    case RequestStatus::running: return "running";
    case RequestStatus::preempted: return "preempted";
    case RequestStatus::finished: return "finished";
  }
  return "unknown";
}

inline std::string_view to_string(FinishReason reason) noexcept {
  switch (reason) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::error: return "error";
  }
  return "unknown";
}

}  // namespace izwi
