// SSE framing: events as OpenAI streams them, and payloads that try to break
// the framing (line breaks of every kind) read back intact by a client that
// follows the WHATWG event-stream parsing rules.

#include <catch2/catch.hpp>

#include <izwi/server/sse.hpp>

#include <string>
#include <string_view>
#include <vector>

using namespace izwi::server;

namespace {

struct Event {
  std::string type = "message";
  std::string data;
};

/// The event-stream interpretation of the HTML standard: lines end at CRLF,
/// LF or CR; an empty line dispatches; "data" lines join with "\n"; lines
/// starting with ':' are comments; one space after the colon is dropped.
std::vector<Event> parse_event_stream(std::string_view stream) {
  std::vector<Event> events;
  Event current;
  bool has_data = false;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::size_t end = pos;
    while (end < stream.size() && stream[end] != '\r' && stream[end] != '\n') ++end;
    if (end == stream.size()) break;  // an unterminated line is never processed
    const std::string_view line = stream.substr(pos, end - pos);
    pos = end + ((stream[end] == '\r' && end + 1 < stream.size() && stream[end + 1] == '\n') ? 2 : 1);
    if (line.empty()) {
      if (has_data) events.push_back(current);
      current = Event{};
      has_data = false;
      continue;
    }
    if (line[0] == ':') continue;
    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data) current.data += '\n';
      current.data += value;
      has_data = true;
    } else if (field == "event") {
      current.type = value;
    }
  }
  return events;
}

}  // namespace

TEST_CASE("sse: OpenAI's framing", "[server][sse]") {
  CHECK(sse::data(R"({"a":1})") == "data: {\"a\":1}\n\n");
  CHECK(sse::done == "data: [DONE]\n\n");
  CHECK(sse::keep_alive == ": ping\n\n");
  CHECK(sse::content_type == "text/event-stream");
  CHECK(sse::comment("ping") == ": ping\n\n");
  CHECK(sse::event("error", "{}") == "event: error\ndata: {}\n\n");

  std::string out = "x";
  sse::append_data(out, "y");
  CHECK(out == "xdata: y\n\n");
}

TEST_CASE("sse: a stream of chunks reads back in order, comments are skipped", "[server][sse]") {
  std::string stream;
  stream += sse::data(R"({"n":1})");
  stream += sse::keep_alive;
  stream += sse::data(R"({"n":2})");
  stream += sse::done;
  const auto events = parse_event_stream(stream);
  REQUIRE(events.size() == 3);
  CHECK(events[0].data == R"({"n":1})");
  CHECK(events[1].data == R"({"n":2})");
  CHECK(events[2].data == "[DONE]");
}

TEST_CASE("sse: payloads with line breaks cannot break framing", "[server][sse]") {
  const std::vector<std::string> hostile = {
      "line1\nline2",
      "a\n\ndata: [DONE]\n\nb",           // tries to end the event and inject [DONE]
      "a\r\n\r\nevent: evil\r\ndata: x",  // CRLF variant, tries to inject an event type
      "a\rb\r\rc",                        // bare CRs end lines too
      "\n",
      "",
      "trailing\n",
      ": not a comment\nid: 7",
  };
  std::string stream;
  for (const auto& payload : hostile) stream += sse::data(payload);
  stream += sse::done;
  const auto events = parse_event_stream(stream);
  REQUIRE(events.size() == hostile.size() + 1);
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    INFO(i);
    CHECK(events[i].type == "message");
    // A conforming client sees the payload with every line break as "\n".
    std::string expected;
    for (std::size_t j = 0; j < hostile[i].size(); ++j) {
      if (hostile[i][j] == '\r') {
        expected += '\n';
        if (j + 1 < hostile[i].size() && hostile[i][j + 1] == '\n') ++j;
      } else {
        expected += hostile[i][j];
      }
    }
    CHECK(events[i].data == expected);
  }
  CHECK(events.back().data == "[DONE]");

  // Names and comments are kept on one line.
  const auto named = parse_event_stream(sse::event("a\nevent: b", "x") + sse::comment("c\n\ndata: y"));
  REQUIRE(named.size() == 1);
  CHECK(named[0].type == "a event: b");
  CHECK(named[0].data == "x");
}
