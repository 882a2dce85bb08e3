#pragma once
// The access log: one line per request on stderr, written with a single
// fwrite so lines from several I/O threads never interleave.
//
//   2026-11-22T03:17:39.123Z 127.0.0.1:51234 "POST /v1/chat/completions" 200 1834B 412.7ms id=6f0c...

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include "izwi/server/http/session.hpp"

namespace izwi::server::http {

/// The access-log line of `exchange` (with the trailing newline).
inline std::string access_log_line(const Exchange& exchange) {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  const double elapsed_ms = duration<double, std::milli>(steady_clock::now() - exchange.start).count();
  // The target is the client's: cut it and drop control characters so a
  // request cannot forge log lines.
  std::string target;
  for (char c : exchange.target.substr(0, 256)) target += (c < ' ' || c == 127 || c == '"') ? '?' : c;
  std::string method;
  for (char c : exchange.method.substr(0, 16)) method += (c < ' ' || c == 127 || c == '"') ? '?' : c;
  char tail[96];
  std::snprintf(tail, sizeof tail, "\" %u %lluB %.1fms id=", exchange.status,
                static_cast<unsigned long long>(exchange.bytes), elapsed_ms);
  std::string line;
  line.reserve(128 + target.size());
  line += stamp;
  line += ' ';
  line += exchange.remote.empty() ? "-" : exchange.remote;
  line += " \"";
  line += method;
  line += ' ';
  line += target;
  line += tail;
  line += exchange.request_id;
  line += '\n';
  return line;
}

inline void write_access_log(const Exchange& exchange) {
  const std::string line = access_log_line(exchange);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace izwi::server::http
