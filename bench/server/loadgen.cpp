// izwi-loadgen: a bounded load generator for OpenAI-compatible servers on the
// loopback interface (izwi-server, llama.cpp's llama-server, vLLM).
//
// N workers, each with one keep-alive connection, send streaming
// /v1/chat/completions (or /v1/completions) requests back to back until a
// request count or a duration is reached; a hard wall-clock cap closes every
// connection if a server stops answering. Everything runs on one Asio thread
// (C++20 coroutines), so the client costs little next to the server under test.
//
// What is measured, per request (clock: steady_clock on the client, read when
// a socket read returns; every SSE event in that read gets that time):
//   TTFT   send of the request -> first SSE event carrying non-empty content
//          (delta.content or delta.reasoning_content for chat, text for
//          completions);
//   ITL    gaps between consecutive content-carrying events. A server may
//          put several tokens in one event (or hold bytes of an incomplete
//          UTF-8 character), so this is the gap between chunks, not strictly
//          between tokens; "tokens/chunk" in the report shows how far apart
//          the two are;
//   TPOT   (last content event - first content event) / (output tokens - 1),
//          per request: the per-token figure independent of chunking;
//   E2E    send -> end of the response.
// Output tokens come from the usage object of the stream (requested with
// stream_options.include_usage) and fall back to the number of content events
// when a server sends none; the report says how many requests had usage.
// Requests ask for temperature 0, max_tokens and "ignore_eos": true (llama.cpp
// and vLLM honour it; --no-ignore-eos leaves it out) so both servers generate
// the same number of tokens.
//
// Each worker keeps its connection alive between requests; a connection the
// server closed after its last response (llama-server does, unannounced) is
// replaced and the request sent again, timed from the new send ("reconnects").
//
// Run `izwi-loadgen --self-test` to check the client against a small mock SSE
// server it starts on 127.0.0.1 itself.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace po = boost::program_options;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using net::awaitable;
using net::use_awaitable;
constexpr auto as_tuple_awaitable = net::as_tuple(use_awaitable);

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// --- options ------------------------------------------------------------------

struct Options {
  std::string url = "http://127.0.0.1:8080";
  std::string model;  // empty: the first id of GET /v1/models
  int concurrency = 1;
  long requests = 0;    // total measured requests; 0 = not bounded by count
  double duration = 0;  // seconds of issuing requests; 0 = not bounded by time
  int max_tokens = 128;
  int prompt_tokens = 32;
  std::uint64_t seed = 1;
  std::string api_key;
  bool json_output = false;
  bool completions = false;
  bool ignore_eos = true;
  int warmup = 0;             // unmeasured requests before the measured run
  double max_seconds = 0;     // hard cap on the whole run; 0 = derived
  double request_timeout = 300;  // no byte for this long fails a request
  bool self_test = false;
};

// The parsed --url: a loopback address, never a name to resolve.
struct Target {
  std::string host;  // as given (for the Host header)
  net::ip::address address;
  unsigned short port = 80;
  std::string base_path;  // "" or "/something" without a trailing slash
};

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message + " (see --help)");
}

// The options table: --help prints it, parse_args reads argv through it.
po::options_description option_table(Options& o) {
  po::options_description options("options");
  options.add_options()
      ("url", po::value(&o.url)->value_name("URL"), "server base URL; the host must be 127.0.0.1, localhost or ::1")
      ("model", po::value(&o.model)->value_name("ID"), "model field of the requests (default: first id of GET /v1/models)")
      ("concurrency", po::value(&o.concurrency)->value_name("N"), "requests in flight at once, one connection each (default 1)")
      ("requests", po::value(&o.requests)->value_name("N"), "total measured requests (bounded)")
      ("duration", po::value(&o.duration)->value_name("S"),
       "issue requests for S seconds, then let those in flight finish (at least one of --requests/--duration; "
       "both: whichever ends first)")
      ("max-tokens", po::value(&o.max_tokens)->value_name("N"), "tokens to generate per request (default 128)")
      ("prompt-tokens", po::value(&o.prompt_tokens)->value_name("N"), "approximate prompt length in tokens (default 32)")
      ("seed", po::value(&o.seed)->value_name("N"), "seed for the prompt words (default 1)")
      ("api-key", po::value(&o.api_key)->value_name("KEY"), "sent as Authorization: Bearer KEY")
      ("completions", po::bool_switch(&o.completions), "POST /v1/completions instead of /v1/chat/completions")
      ("no-ignore-eos", po::bool_switch(), "do not send \"ignore_eos\": true")
      ("warmup", po::value(&o.warmup)->value_name("N"), "unmeasured requests before the run (default 0)")
      ("max-seconds", po::value(&o.max_seconds)->value_name("S"),
       "hard wall-clock cap for the whole run (default: derived, at most 900)")
      ("request-timeout", po::value(&o.request_timeout)->value_name("S"),
       "a request that receives nothing for S seconds fails (default 300)")
      ("json", po::bool_switch(&o.json_output), "print one JSON object instead of the text report")
      ("self-test", po::bool_switch(&o.self_test), "run against a mock server started on 127.0.0.1, then exit")
      ("help,h", "show this help");
  return options;
}

void print_help(const po::options_description& options) {
  std::cout << "izwi-loadgen: bounded streaming load on an OpenAI-compatible server on this machine.\n\n"
               "  izwi-loadgen --url http://127.0.0.1:8080 --concurrency 8 --requests 64 --max-tokens 128\n\n"
            << options;
}

Target parse_url(const std::string& url) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    usage_error("only plain http:// URLs are supported: " + url);
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = authority.size() < rest.size() ? rest.substr(authority.size()) : std::string_view{};
  Target t;
  std::string_view host, port;
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) usage_error("bad IPv6 literal in " + url);
    host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    if (after.starts_with(':')) port = after.substr(1);
    else if (!after.empty()) usage_error("bad authority in " + url);
    t.host = "[" + std::string(host) + "]";
  } else {
    auto colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    t.host = std::string(host);
  }
  // Loopback only: the literal addresses and the name localhost, which is
  // mapped here rather than resolved (no DNS, no /etc/hosts surprises).
  if (host == "127.0.0.1" || host == "localhost") {
    t.address = net::ip::make_address_v4("127.0.0.1");
  } else if (host == "::1") {
    t.address = net::ip::make_address_v6("::1");
  } else {
    usage_error("refusing host '" + std::string(host) + "': izwi-loadgen only talks to 127.0.0.1, localhost or ::1");
  }
  if (!port.empty()) {
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
      usage_error("bad port in " + url);
    }
    t.port = static_cast<unsigned short>(value);
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  t.base_path = std::string(path);
  return t;
}

// "/v1" is added unless the URL already ends with it.
std::string endpoint(const Target& t, std::string_view route) {
  std::string base = t.base_path;
  if (!base.ends_with("/v1")) base += "/v1";
  return base + std::string(route);
}

Options parse_args(int argc, char** argv) {
  Options o;
  const po::options_description options = option_table(o);
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(e.what());
  }
  if (vm.count("help")) {
    print_help(options);
    std::exit(0);
  }
  o.ignore_eos = !vm["no-ignore-eos"].as<bool>();
  if (o.self_test) return o;
  if (o.concurrency < 1 || o.concurrency > 4096) usage_error("--concurrency must be 1..4096");
  if (o.requests < 0 || o.duration < 0) usage_error("--requests and --duration must not be negative");
  if (o.requests == 0 && o.duration == 0) usage_error("give --requests N or --duration S: the run must be bounded");
  if (o.max_tokens < 1 || o.prompt_tokens < 0 || o.warmup < 0) usage_error("bad --max-tokens, --prompt-tokens or --warmup");
  if (o.duration > 3600) usage_error("--duration is capped at 3600 s");
  if (o.request_timeout <= 0) usage_error("--request-timeout must be positive");
  if (o.max_seconds <= 0) {
    o.max_seconds = o.duration > 0 ? o.duration + std::min(o.request_timeout, 300.0) : 900;
  }
  return o;
}

// --- prompts ------------------------------------------------------------------

// Common English words; with a leading space each is one token in the GPT-2 /
// Qwen byte-level BPE vocabularies, so n words make a prompt of about n tokens.
constexpr std::array<std::string_view, 96> kWords = {
    "the",    "of",    "and",   "to",     "in",    "is",    "that",   "for",   "it",    "as",    "was",
    "with",   "be",    "by",    "on",     "not",   "he",    "this",   "are",   "or",    "his",   "from",
    "at",     "which", "but",   "have",   "an",    "had",   "they",   "you",   "were",  "their", "one",
    "all",    "we",    "can",   "her",    "has",   "there", "been",   "if",    "more",  "when",  "will",
    "would",  "who",   "so",    "no",     "time",  "people", "year",  "way",   "day",   "man",   "thing",
    "woman",  "life",  "child", "world",  "school", "state", "family", "group", "hand",  "part",  "place",
    "case",   "week",  "work",  "number", "night", "point", "home",   "water", "room",  "mother", "area",
    "money",  "story", "fact",  "month",  "lot",   "right", "study",  "book",  "eye",   "job",   "word",
    "business", "issue", "side", "kind",  "head",  "house", "service", "friend"};

std::string make_prompt(std::uint64_t seed, long index, int tokens) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(index));
  // A distinct opening per request keeps servers' prefix caches from sharing
  // more than the chat template between requests.
  std::string text = "Request " + std::to_string(index) + ":";
  int words = std::max(0, tokens - 3);
  std::uniform_int_distribution<std::size_t> pick(0, kWords.size() - 1);
  for (int i = 0; i < words; ++i) {
    text += ' ';
    text += kWords[pick(rng)];
  }
  return text;
}

std::string make_body(const Options& o, const std::string& model, long index) {
  json::object body;
  if (!model.empty()) body["model"] = model;
  std::string prompt = make_prompt(o.seed, index, o.prompt_tokens);
  if (o.completions) {
    body["prompt"] = prompt;
  } else {
    body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt}}};
  }
  body["max_tokens"] = o.max_tokens;
  body["temperature"] = 0;
  body["stream"] = true;
  body["stream_options"] = json::object{{"include_usage", true}};
  if (o.ignore_eos) body["ignore_eos"] = true;
  return json::serialize(body);
}

// --- one request ----------------------------------------------------------------

struct Sample {
  bool ok = false;
  std::string error;
  double ttft = 0, e2e = 0, tpot = -1;
  std::vector<double> itl;
  long chunks = 0;
  long output_tokens = 0;
  long prompt_tokens = -1;
  bool usage_seen = false;
  int reconnects = 0;  // stale keep-alive connections replaced before the request was answered
};

// Server-sent events, fed with raw body bytes; events are dispatched on the
// blank line that ends them (and once more at the end of the stream).
class SseReader {
 public:
  explicit SseReader(bool completions) : completions_(completions) {}

  // Returns false when an event could not be understood (sample.error set).
  bool feed(std::string_view bytes, Clock::time_point now, Clock::time_point sent, Sample& s) {
    pending_.append(bytes);
    std::size_t start = 0;
    for (;;) {
      auto nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(pending_.data() + start, nl - start);
      start = nl + 1;
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (line.empty()) {
        if (!dispatch(now, sent, s)) return false;
      } else if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        if (has_data_) data_ += '\n';
        data_.append(line);
        has_data_ = true;
      }  // comments (":") and other fields are ignored
    }
    pending_.erase(0, start);
    return true;
  }
  bool finish(Clock::time_point now, Clock::time_point sent, Sample& s) { return dispatch(now, sent, s); }
  bool done() const { return done_; }

 private:
  bool dispatch(Clock::time_point now, Clock::time_point sent, Sample& s) {
    if (!has_data_) return true;
    has_data_ = false;
    std::string data = std::move(data_);
    data_.clear();
    if (data == "[DONE]") {
      done_ = true;
      return true;
    }
    boost::system::error_code ec;
    json::value v = json::parse(data, ec);
    if (ec || !v.is_object()) {
      s.error = "unparsable SSE event: " + data.substr(0, 200);
      return false;
    }
    const auto& obj = v.get_object();
    if (auto* err = obj.if_contains("error")) {
      s.error = "error event: " + json::serialize(*err).substr(0, 300);
      return false;
    }
    bool content = false;
    if (auto* choices = obj.if_contains("choices"); choices && choices->is_array()) {
      for (const auto& c : choices->get_array()) {
        if (!c.is_object()) continue;
        const auto& co = c.get_object();
        auto non_empty = [](const json::value* p) { return p && p->is_string() && !p->get_string().empty(); };
        if (completions_) {
          content = content || non_empty(co.if_contains("text"));
        } else if (auto* delta = co.if_contains("delta"); delta && delta->is_object()) {
          content = content || non_empty(delta->get_object().if_contains("content")) ||
                    non_empty(delta->get_object().if_contains("reasoning_content"));
        }
      }
    }
    if (auto* u = obj.if_contains("usage"); u && u->is_object()) {
      const auto& uo = u->get_object();
      if (auto* ct = uo.if_contains("completion_tokens"); ct && ct->is_int64()) {
        s.output_tokens = ct->get_int64();
        s.usage_seen = true;
      }
      if (auto* pt = uo.if_contains("prompt_tokens"); pt && pt->is_int64()) s.prompt_tokens = pt->get_int64();
    }
    if (content) {
      if (s.chunks == 0) {
        s.ttft = seconds(now - sent);
      } else {
        s.itl.push_back(seconds(now - last_content_));
      }
      if (s.chunks == 0) first_content_ = now;
      last_content_ = now;
      ++s.chunks;
    }
    return true;
  }

 public:
  Clock::time_point first_content_{}, last_content_{};

 private:
  bool completions_;
  bool done_ = false;
  bool has_data_ = false;
  std::string pending_, data_;
};

struct Connection {
  explicit Connection(net::any_io_executor ex) : stream(std::move(ex)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool open = false;
};

struct Run;  // shared state of one run, below

awaitable<void> ensure_open(Connection& c, const Target& t, double timeout) {
  if (c.open) co_return;
  c.buffer.clear();
  c.stream.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout)));
  co_await c.stream.async_connect(tcp::endpoint(t.address, t.port), use_awaitable);
  c.stream.socket().set_option(tcp::no_delay(true));
  c.open = true;
}

void close(Connection& c) {
  boost::system::error_code ignored;
  c.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  c.stream.socket().close(ignored);
  c.open = false;
}

awaitable<Sample> one_request(Connection& c, const Options& o, const Target& t, const std::string& model,
                              long index) {
  Sample s;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.request_timeout));
  try {
    http::request<http::string_body> req{http::verb::post,
                                         endpoint(t, o.completions ? "/completions" : "/chat/completions"), 11};
    req.set(http::field::host, t.host + ":" + std::to_string(t.port));
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    req.set(http::field::user_agent, "izwi-loadgen");
    if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
    req.keep_alive(true);
    req.body() = make_body(o, model, index);
    req.prepare_payload();

    Clock::time_point sent;
    std::optional<http::response_parser<http::buffer_body>> fresh;
    for (int attempt = 0;; ++attempt) {
      const bool reused = c.open;
      co_await ensure_open(c, t, o.request_timeout);
      fresh.emplace();
      fresh->body_limit(std::numeric_limits<std::uint64_t>::max());
      sent = Clock::now();
      c.stream.expires_after(timeout);
      auto [ec, written] = co_await http::async_write(c.stream, req, as_tuple_awaitable);
      if (!ec) {
        c.stream.expires_after(timeout);
        auto [read_ec, read] = co_await http::async_read_header(c.stream, c.buffer, *fresh, as_tuple_awaitable);
        ec = read_ec;
      }
      if (!ec) break;
      // A kept-alive connection that the server closed after its previous
      // response (llama-server does so after a stream, without saying
      // "Connection: close") fails before any byte of the answer: the server
      // never saw this request, so it is sent once more on a new connection,
      // timed from the new send.
      const bool stale = ec == http::error::end_of_stream || ec == net::error::eof ||
                         ec == net::error::connection_reset || ec == net::error::broken_pipe;
      if (reused && attempt == 0 && stale) {
        close(c);
        ++s.reconnects;
        continue;
      }
      throw boost::system::system_error(ec);
    }
    auto& parser = *fresh;
    const auto status = parser.get().result_int();
    std::string error_body;
    SseReader sse(o.completions);
    std::array<char, 16384> chunk;
    bool bad = false;
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      c.stream.expires_after(timeout);
      auto [ec, n] = co_await http::async_read_some(c.stream, c.buffer, parser, as_tuple_awaitable);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw boost::system::system_error(ec);
      const auto now = Clock::now();
      std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
      if (status != 200) {
        if (error_body.size() < 1000) error_body.append(got.substr(0, 1000 - error_body.size()));
      } else if (!bad && !sse.feed(got, now, sent, s)) {
        bad = true;  // keep reading so the connection stays usable
      }
    }
    const auto end = Clock::now();
    if (status == 200 && !bad) bad = !sse.finish(end, sent, s);
    if (!parser.get().keep_alive()) close(c);
    s.e2e = seconds(end - sent);
    if (status != 200) {
      s.error = "HTTP " + std::to_string(status) + ": " + error_body;
    } else if (!bad && !sse.done()) {
      s.error = "stream ended without data: [DONE]";
    } else if (!bad && s.chunks == 0) {
      s.error = "no content in the stream";
    } else if (!bad) {
      s.ok = true;
      if (!s.usage_seen) s.output_tokens = s.chunks;
      if (s.output_tokens > 1) {
        s.tpot = seconds(sse.last_content_ - sse.first_content_) / static_cast<double>(s.output_tokens - 1);
      }
    }
  } catch (const boost::system::system_error& e) {
    close(c);
    s.ok = false;
    s.error = e.code() == beast::error::timeout ? "timed out" : e.code().message();
  }
  co_return s;
}

// --- a run ------------------------------------------------------------------------

struct Run {
  Run(const Options& options, const Target& target, std::string model_id)
      : o(options), t(target), model(std::move(model_id)) {}
  const Options& o;
  const Target& t;
  std::string model;
  long limit = 0;          // requests to issue; 0 = unbounded (duration decides)
  double duration = 0;     // seconds; 0 = no time bound
  bool record = true;
  long issued = 0;
  bool stopping = false;   // set by the hard cap
  Clock::time_point start{}, last_end{};
  std::vector<Sample> samples;
  std::vector<Connection*> connections;

  std::optional<long> next() {
    if (stopping) return std::nullopt;
    if (limit > 0 && issued >= limit) return std::nullopt;
    if (duration > 0 && seconds(Clock::now() - start) >= duration) return std::nullopt;
    return issued++;
  }
};

awaitable<void> worker(Run& run, long offset) {
  Connection c(co_await net::this_coro::executor);
  run.connections.push_back(&c);
  while (auto index = run.next()) {
    Sample s = co_await one_request(c, run.o, run.t, run.model, offset + *index);
    run.last_end = Clock::now();
    if (run.record) run.samples.push_back(std::move(s));
  }
  close(c);
  std::erase(run.connections, &c);
}

// Runs `workers` workers until run.next() says stop or the cap closes them.
// Returns false when the hard cap fired.
bool execute(net::io_context& ioc, Run& run, int workers, long offset, Clock::time_point hard_deadline) {
  bool capped = false;
  net::steady_timer cap(ioc);
  cap.expires_at(hard_deadline);
  cap.async_wait([&](boost::system::error_code ec) {
    if (ec) return;
    capped = true;
    run.stopping = true;
    for (auto* c : run.connections) {
      boost::system::error_code ignored;
      c->stream.socket().close(ignored);
    }
  });
  run.start = Clock::now();
  run.last_end = run.start;
  int live = workers;
  for (int w = 0; w < workers; ++w) {
    net::co_spawn(ioc, worker(run, offset), [&](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
      if (--live == 0) {
        cap.cancel();
        ioc.stop();  // other work on this io_context (the self-test's mock server) may go on
      }
    });
  }
  ioc.restart();
  ioc.run();
  return !capped;
}

awaitable<std::string> first_model_id(const Target& t, const Options& o) {
  Connection c(co_await net::this_coro::executor);
  co_await ensure_open(c, t, 10);
  http::request<http::empty_body> req{http::verb::get, endpoint(t, "/models"), 11};
  req.set(http::field::host, t.host + ":" + std::to_string(t.port));
  if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
  c.stream.expires_after(std::chrono::seconds(30));
  co_await http::async_write(c.stream, req, use_awaitable);
  http::response<http::string_body> res;
  co_await http::async_read(c.stream, c.buffer, res, use_awaitable);
  close(c);
  boost::system::error_code ec;
  auto v = json::parse(res.body(), ec);
  if (!ec && v.is_object()) {
    if (auto* data = v.get_object().if_contains("data"); data && data->is_array() && !data->get_array().empty()) {
      const auto& first = data->get_array().front();
      if (first.is_object()) {
        if (auto* id = first.get_object().if_contains("id"); id && id->is_string()) {
          co_return std::string(id->get_string());
        }
      }
    }
  }
  co_return std::string{};
}

// --- statistics and report ------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);  // linear interpolation, as numpy
  auto lo = static_cast<std::size_t>(std::floor(rank));
  auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

struct Report {
  long requests = 0, ok = 0, errors = 0, usage = 0;
  long output_tokens = 0, chunks = 0, reconnects = 0;
  double prompt_tokens_mean = std::nan(""), output_tokens_mean = 0;
  double wall = 0, rps = 0, tps = 0;
  double ttft_p50 = 0, ttft_p99 = 0, ttft_mean = 0, itl_p50 = 0, itl_p99 = 0, tpot_p50 = 0, tpot_p99 = 0,
         e2e_p50 = 0, e2e_p99 = 0;
  bool capped = false;
  std::map<std::string, long> error_kinds;
};

Report summarize(const Run& run, bool capped) {
  Report r;
  r.capped = capped;
  r.wall = seconds(run.last_end - run.start);
  std::vector<double> ttft, itl, tpot, e2e;
  double prompt_sum = 0;
  long prompt_n = 0;
  for (const auto& s : run.samples) {
    ++r.requests;
    r.reconnects += s.reconnects;
    if (!s.ok) {
      ++r.errors;
      ++r.error_kinds[s.error.substr(0, 160)];
      continue;
    }
    ++r.ok;
    r.usage += s.usage_seen;
    r.output_tokens += s.output_tokens;
    r.chunks += s.chunks;
    ttft.push_back(s.ttft);
    e2e.push_back(s.e2e);
    if (s.tpot >= 0) tpot.push_back(s.tpot);
    itl.insert(itl.end(), s.itl.begin(), s.itl.end());
    if (s.prompt_tokens >= 0) {
      prompt_sum += static_cast<double>(s.prompt_tokens);
      ++prompt_n;
    }
  }
  if (prompt_n) r.prompt_tokens_mean = prompt_sum / static_cast<double>(prompt_n);
  if (r.ok) r.output_tokens_mean = static_cast<double>(r.output_tokens) / static_cast<double>(r.ok);
  if (r.wall > 0) {
    r.rps = static_cast<double>(r.ok) / r.wall;
    r.tps = static_cast<double>(r.output_tokens) / r.wall;
  }
  for (double x : ttft) r.ttft_mean += x / static_cast<double>(ttft.size());
  r.ttft_p50 = percentile(ttft, 50);
  r.ttft_p99 = percentile(ttft, 99);
  r.itl_p50 = percentile(itl, 50);
  r.itl_p99 = percentile(itl, 99);
  r.tpot_p50 = percentile(tpot, 50);
  r.tpot_p99 = percentile(tpot, 99);
  r.e2e_p50 = percentile(e2e, 50);
  r.e2e_p99 = percentile(e2e, 99);
  return r;
}

json::value number_or_null(double x) { return std::isfinite(x) ? json::value(x) : json::value(nullptr); }

void print_report(const Options& o, const std::string& model, const Report& r) {
  if (o.json_output) {
    json::object errors;
    for (const auto& [k, n] : r.error_kinds) errors[k] = n;
    json::object out{
        {"url", o.url},
        {"model", model},
        {"endpoint", o.completions ? "/v1/completions" : "/v1/chat/completions"},
        {"concurrency", o.concurrency},
        {"max_tokens", o.max_tokens},
        {"prompt_tokens_requested", o.prompt_tokens},
        {"ignore_eos", o.ignore_eos},
        {"requests", r.requests},
        {"completed", r.ok},
        {"errors", r.errors},
        {"error_kinds", errors},
        {"capped", r.capped},
        {"wall_s", r.wall},
        {"requests_per_s", r.rps},
        {"output_tokens_per_s", r.tps},
        {"output_tokens", r.output_tokens},
        {"output_tokens_mean", r.output_tokens_mean},
        {"prompt_tokens_mean", number_or_null(r.prompt_tokens_mean)},
        {"requests_with_usage", r.usage},
        {"content_chunks", r.chunks},
        {"reconnects", r.reconnects},
        {"ttft_ms", json::object{{"mean", number_or_null(r.ttft_mean * 1e3)},
                                 {"p50", number_or_null(r.ttft_p50 * 1e3)},
                                 {"p99", number_or_null(r.ttft_p99 * 1e3)}}},
        {"itl_ms", json::object{{"p50", number_or_null(r.itl_p50 * 1e3)}, {"p99", number_or_null(r.itl_p99 * 1e3)}}},
        {"tpot_ms",
         json::object{{"p50", number_or_null(r.tpot_p50 * 1e3)}, {"p99", number_or_null(r.tpot_p99 * 1e3)}}},
        {"e2e_ms", json::object{{"p50", number_or_null(r.e2e_p50 * 1e3)}, {"p99", number_or_null(r.e2e_p99 * 1e3)}}},
    };
    std::cout << json::serialize(out) << "\n";
    return;
  }
  auto ms = [](double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", s * 1e3);
    return std::string(buf);
  };
  std::printf("%s %s, model '%s', concurrency %d, max_tokens %d, ~%d prompt tokens%s\n", o.url.c_str(),
              o.completions ? "/v1/completions" : "/v1/chat/completions", model.c_str(), o.concurrency,
              o.max_tokens, o.prompt_tokens, r.capped ? "  [HARD CAP REACHED]" : "");
  std::printf("requests      %ld completed, %ld errors, %.2f s, %ld stale connections replaced\n", r.ok, r.errors,
              r.wall, r.reconnects);
  std::printf("throughput    %.3f requests/s, %.2f output tokens/s\n", r.rps, r.tps);
  std::printf("tokens        %.1f out / %.1f prompt per request (usage on %ld of %ld), %.2f tokens/chunk\n",
              r.output_tokens_mean, r.prompt_tokens_mean, r.usage, r.ok,
              r.chunks ? static_cast<double>(r.output_tokens) / static_cast<double>(r.chunks) : 0.0);
  std::printf("TTFT ms       p50 %s  p99 %s  mean %s\n", ms(r.ttft_p50).c_str(), ms(r.ttft_p99).c_str(),
              ms(r.ttft_mean).c_str());
  std::printf("ITL ms        p50 %s  p99 %s  (between content chunks)\n", ms(r.itl_p50).c_str(),
              ms(r.itl_p99).c_str());
  std::printf("TPOT ms       p50 %s  p99 %s  (per request, after the first token)\n", ms(r.tpot_p50).c_str(),
              ms(r.tpot_p99).c_str());
  std::printf("E2E ms        p50 %s  p99 %s\n", ms(r.e2e_p50).c_str(), ms(r.e2e_p99).c_str());
  for (const auto& [k, n] : r.error_kinds) std::printf("error x%ld: %s\n", n, k.c_str());
}

// Runs warm-up and the measured run; returns the report.
Report run_load(net::io_context& ioc, const Options& o, const Target& t, std::string& model) {
  const auto hard_deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.max_seconds));
  if (model.empty()) {
    std::optional<std::string> found;
    net::co_spawn(ioc, first_model_id(t, o), [&](std::exception_ptr e, std::string id) {
      if (!e) found = std::move(id);
      ioc.stop();
    });
    ioc.restart();
    ioc.run_for(std::chrono::seconds(30));
    if (found) model = *found;
  }
  // Warm-up requests use indices past any measured one, so their prompts differ.
  constexpr long kWarmupOffset = 1'000'000'000;
  if (o.warmup > 0) {
    Run warm{o, t, model};
    warm.limit = o.warmup;
    warm.record = false;
    if (!execute(ioc, warm, std::min(o.concurrency, o.warmup), kWarmupOffset, hard_deadline)) {
      Run empty{o, t, model};
      return summarize(empty, true);
    }
  }
  Run run{o, t, model};
  run.limit = o.requests;
  run.duration = o.duration;
  int workers = o.concurrency;
  if (o.requests > 0) workers = static_cast<int>(std::min<long>(workers, o.requests));
  bool completed = execute(ioc, run, workers, 0, hard_deadline);
  return summarize(run, !completed);
}

// --- self-test: a mock OpenAI streaming server on 127.0.0.1 ----------------------------

json::value make_role_event() {
  return json::object{{"choices", json::array{json::object{{"index", 0}, {"delta", json::object{{"role", "assistant"}}}}}}};
}
json::value make_token_event(bool chat, std::string_view piece) {
  json::object choice{{"index", 0}};
  if (chat) choice["delta"] = json::object{{"content", piece}};
  else choice["text"] = piece;
  return json::object{{"choices", json::array{choice}}};
}
json::value make_usage_event(std::int64_t completion_tokens) {
  return json::object{{"choices", json::array{}},
                      {"usage", json::object{{"prompt_tokens", 7},
                                             {"completion_tokens", completion_tokens},
                                             {"total_tokens", completion_tokens + 7}}}};
}

awaitable<void> mock_session(tcp::socket socket) {
  socket.set_option(tcp::no_delay(true));  // each event in its own segment, as a streaming server sends it
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  net::steady_timer timer(stream.get_executor());
  for (;;) {
    http::request<http::string_body> req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, as_tuple_awaitable);
    if (ec) co_return;
    if (req.method() == http::verb::get && req.target() == "/v1/models") {
      http::response<http::string_body> res{http::status::ok, 11};
      res.set(http::field::content_type, "application/json");
      res.body() = R"({"object":"list","data":[{"id":"mock-model","object":"model"}]})";
      res.prepare_payload();
      res.keep_alive(req.keep_alive());
      co_await http::async_write(stream, res, use_awaitable);
      continue;
    }
    boost::system::error_code parse_error;
    auto parsed = json::parse(req.body(), parse_error);
    const json::object empty;
    const auto& body = !parse_error && parsed.is_object() ? parsed.get_object() : empty;
    const bool chat = req.target().ends_with("/v1/chat/completions");
    auto field = [&](std::string_view key) -> json::value { auto* p = body.if_contains(key); return p ? *p : json::value(); };
    const std::int64_t max_tokens = field("max_tokens").is_int64() ? field("max_tokens").get_int64() : 16;
    if (field("model") != json::value("mock-model") || field("ignore_eos") != json::value(true)) {
      http::response<http::string_body> res{http::status::bad_request, 11};
      res.body() = R"({"error":{"message":"bad request","type":"invalid_request_error"}})";
      res.prepare_payload();
      co_await http::async_write(stream, res, use_awaitable);
      continue;
    }
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/event-stream");
    res.chunked(true);
    res.keep_alive(req.keep_alive());
    http::response_serializer<http::empty_body> sr{res};
    co_await http::async_write_header(stream, sr, use_awaitable);
    // Events are built before each co_await: GCC 12 rejects initializer lists
    // inside a co_await expression ("array used as initializer").
    auto send_event = [&](const json::value& v) -> awaitable<void> {
      std::string text = "data: " + json::serialize(v) + "\n\n";
      co_await net::async_write(stream, http::make_chunk(net::buffer(text)), use_awaitable);
    };
    // A role-only first chunk, then tokens; every third event carries two
    // tokens, as servers that coalesce do.
    if (chat) {
      json::value role = make_role_event();
      co_await send_event(role);
    }
    std::int64_t sent = 0;
    while (sent < max_tokens) {
      timer.expires_after(std::chrono::milliseconds(2));
      co_await timer.async_wait(use_awaitable);
      std::int64_t k = (sent % 3 == 2 && sent + 2 <= max_tokens) ? 2 : 1;
      sent += k;
      json::value event = make_token_event(chat, k == 2 ? " ab cd" : " ef");
      co_await send_event(event);
    }
    json::value usage = make_usage_event(max_tokens);
    co_await send_event(usage);
    std::string done = "data: [DONE]\n\n";
    co_await net::async_write(stream, http::make_chunk(net::buffer(done)), use_awaitable);
    co_await net::async_write(stream, http::make_chunk_last(), use_awaitable);
    // Under /closing the mock drops the connection after each stream without
    // announcing it, as llama-server does.
    if (!req.keep_alive() || req.target().starts_with("/closing")) co_return;
  }
}

awaitable<void> mock_accept(tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(as_tuple_awaitable);
    if (ec) co_return;
    net::co_spawn(acceptor.get_executor(), mock_session(std::move(socket)), net::detached);
  }
}

int self_test() {
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += !ok;
  };
  for (const char* bad : {"http://10.0.0.1:8080", "http://example.com", "http://127.0.0.2:80", "https://127.0.0.1:1"}) {
    bool refused = false;
    try {
      parse_url(bad);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    check(refused, std::string("refuses ") + bad);
  }
  check(parse_url("http://localhost:9/v1").base_path == "/v1" && parse_url("http://[::1]:9").port == 9,
        "parses loopback URLs");

  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address_v4("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  net::co_spawn(ioc, mock_accept(acceptor), net::detached);
  for (bool completions : {false, true}) {
    Options o;
    o.url = "http://127.0.0.1:" + std::to_string(port);
    o.concurrency = 4;
    o.requests = 12;
    o.max_tokens = 20;
    o.warmup = 2;
    o.max_seconds = 30;
    o.request_timeout = 10;
    o.completions = completions;
    Target t = parse_url(o.url);
    std::string model;
    Report r = run_load(ioc, o, t, model);
    print_report(o, model, r);
    std::string what = completions ? "completions" : "chat";
    check(model == "mock-model", what + ": model id from /v1/models");
    check(r.ok == 12 && r.errors == 0 && !r.capped, what + ": 12 requests, no error");
    check(r.output_tokens == 12 * 20 && r.usage == 12, what + ": output tokens from usage");
    long events = 0;  // the mock's chunking, replayed
    for (long sent = 0; sent < 20; ++events) sent += (sent % 3 == 2 && sent + 2 <= 20) ? 2 : 1;
    check(r.chunks == 12 * events, what + ": content chunks counted (" + std::to_string(r.chunks) + ")");
    check(r.ttft_p50 > 0.001 && r.itl_p50 > 0.001 && r.tpot_p50 > 0.0005, what + ": latencies measured");
  }
  {  // a server that silently closes kept-alive connections after each stream
    Options o;
    o.url = "http://127.0.0.1:" + std::to_string(port) + "/closing";
    o.requests = 4;
    o.max_tokens = 5;
    o.max_seconds = 30;
    o.request_timeout = 10;
    Target t = parse_url(o.url);
    std::string model = "mock-model";
    Report r = run_load(ioc, o, t, model);
    check(r.ok == 4 && r.errors == 0 && r.reconnects == 3, "stale keep-alive connections replaced (" +
                                                              std::to_string(r.reconnects) + ")");
  }
  {  // errors are counted, not fatal: the mock rejects a request without ignore_eos
    Options o;
    o.url = "http://127.0.0.1:" + std::to_string(port);
    o.requests = 3;
    o.ignore_eos = false;
    o.max_seconds = 30;
    o.request_timeout = 10;
    Target t = parse_url(o.url);
    std::string model = "mock-model";
    Report r = run_load(ioc, o, t, model);
    check(r.errors == 3 && r.ok == 0 && r.error_kinds.begin()->first.starts_with("HTTP 400"), "HTTP errors counted");
  }
  {  // the hard cap ends a run against a server that never answers
    tcp::acceptor silent(ioc, tcp::endpoint(net::ip::make_address_v4("127.0.0.1"), 0));
    silent.listen();
    Options o;
    o.url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
    o.requests = 2;
    o.max_seconds = 0.5;
    Target t = parse_url(o.url);
    std::string model = "mock-model";
    auto begin = Clock::now();
    Report r = run_load(ioc, o, t, model);
    print_report(o, model, r);
    check(r.capped && seconds(Clock::now() - begin) < 5, "hard cap stops a silent server's run");
  }
  acceptor.close();
  std::printf("%s\n", failures ? "self-test FAILED" : "self-test passed");
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse_args(argc, argv);
    if (o.self_test) return self_test();
    Target t = parse_url(o.url);
    net::io_context ioc;
    std::string model = o.model;
    Report r = run_load(ioc, o, t, model);
    print_report(o, model, r);
    if (r.capped) return 3;
    return r.errors ? 2 : 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "izwi-loadgen: " << e.what() << "\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "izwi-loadgen: " << e.what() << "\n";
    return 1;
  }
}
