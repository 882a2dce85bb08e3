#pragma once
// Session: one client connection of izwi-server, on its own strand.
//
// Life of a connection:
//
//   wait for bytes (idle timeout) ─▶ read header (header timeout) ─▶ read body
//   (body timeout, size limit) ─▶ host.handle() ─▶ respond(...) or a stream
//   of chunks ─▶ keep-alive: wait again, else close.
//
// Slow clients cannot hold the server: the header and body each have a
// deadline, counted from the request's first byte (408, then close), and an
// idle connection is closed. What a client may make the session buffer is
// bounded (Limits::max_buffered_bytes): pipelined requests, a chunk-size line.
//
// Framing the server cannot trust is refused with 400 and the connection
// closed, never read on (RFC 9112 §6.3, §3.2): a Transfer-Encoding whose last
// coding is not chunked, Transfer-Encoding with Content-Length, an HTTP/1.1
// request without exactly one Host. HEAD is answered like GET without a body.
//
// While a request is being answered the session keeps a read open (bytes of
// pipelined requests are kept for later), so a client that hangs up is
// noticed and the work it asked for is cancelled (PendingResponse::cancel),
// even before anything was written. A client that only shut its sending side
// (a half-close) still gets its answer: on end-of-file the session sends an
// interim "100 Continue", which a gone client answers with a reset, and
// watches the socket for that reset.
//
// No exception leaves a completion handler: one closes that connection only,
// and the host is told (SessionHost::session_failed).
//
// Every member function runs on the session's strand: handlers are called
// there, and work finishing elsewhere (an engine thread) must net::post back
// to get_executor() before touching the session. One write is in flight at a
// time; a streamed response queues its data and the session asks for more
// (PendingResponse::resume) when the previous write is done, so a client that
// reads slowly slows its own generation down and nothing else.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>

#include "izwi/server/api_error.hpp"
#include "izwi/server/http/limits.hpp"

namespace izwi::server::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using Request = beast::http::request<beast::http::string_body>;
using Response = beast::http::response<beast::http::string_body>;

/// What the access log and the metrics record of one request.
struct Exchange {
  std::string method;
  std::string target;
  std::string request_id;
  /// The matched route's pattern; "unmatched" when none did.
  std::string route = "unmatched";
  /// Status sent; 499 when the client went away before any response.
  unsigned status = 0;
  /// Body bytes written.
  std::uint64_t bytes = 0;
  std::chrono::steady_clock::time_point start;
  std::string remote;
};

/// Work a handler left running for a request (a generation).
class PendingResponse {
 public:
  virtual ~PendingResponse() = default;
  /// The client went away or the server dropped the connection: stop and free
  /// everything. On the session's strand; the session is closed already.
  virtual void cancel() noexcept = 0;
  /// A streamed write finished: more may be sent. On the session's strand.
  virtual void resume() {}
};

class Session;

/// What a session needs from the server that owns it.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual const Limits& limits() const noexcept = 0;
  /// True once shutdown began: requests get 503 and connections close.
  virtual bool draining() const noexcept = 0;
  /// Answers `request`: at once (session->respond) or later (attach a
  /// PendingResponse, respond or stream from the strand). On the strand.
  virtual void handle(const std::shared_ptr<Session>& session, Request&& request) = 0;
  /// An error response in OpenAI's envelope (the session's own 400/413/431/503).
  virtual Response error_response(const ApiError& error, unsigned version) = 0;
  /// A request was read and is being answered.
  virtual void exchange_started() noexcept = 0;
  /// One request ended (answered, or abandoned by its client): log and count it.
  virtual void exchange_finished(const Exchange& exchange) noexcept = 0;
  /// The session is gone (its destructor).
  virtual void session_closed(Session* session) noexcept = 0;
  /// An exception escaped work on the session's strand; the connection is
  /// being closed. For the log and the metrics.
  virtual void session_failed(std::string_view /*request_id*/, std::string_view /*what*/) noexcept {}
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, SessionHost& host);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Starts reading requests (posts onto the strand).
  void start();
  /// Answers `response` (503 over the connection limit) without reading
  /// anything, then closes.
  void start_rejected(Response response);

  net::any_io_executor get_executor() { return stream_.get_executor(); }

  // --- on the strand, for the request being answered ---
  /// The request's record (route label, request id).
  Exchange& exchange() noexcept { return exchange_; }
  /// Sends a complete response (Content-Length). Ignored after the first.
  void respond(Response response);
  /// Starts a streamed response (chunked transfer coding) with `head`'s
  /// status and headers (its body is ignored).
  void begin_stream(const Response& head);
  /// Queues data of the streamed response; it goes out as one chunk with
  /// whatever else is queued when the previous write finishes.
  void stream_write(std::string_view data);
  /// Ends the streamed response once the queue is written.
  void end_stream();
  /// True while a write is in flight or data waits to be written.
  bool stream_busy() const noexcept { return write_pending_ || !outbox_.empty(); }
  /// Binds work to the request: cancelled if the connection goes first,
  /// released when the response is complete.
  void attach(std::shared_ptr<PendingResponse> pending);
  bool closed() const noexcept { return closed_; }
  /// Runs `work` (on the strand); an exception it throws closes this
  /// connection only and is reported to the host. For work posted to the
  /// strand from elsewhere (an engine's output, a finished load).
  template <class Work>
  void run_guarded(Work&& work) noexcept {
    try {
      std::forward<Work>(work)();
    } catch (const std::exception& e) {
      fail_unexpectedly(e.what());
    } catch (...) {
      fail_unexpectedly("unknown exception");
    }
  }

  // --- from any thread ---
  /// Server shutdown, first step: close if idle, else after the current response.
  void shutdown_soft();
  /// Server shutdown, last step: close now (cancels the pending work).
  void abort();

 private:
  void start_rejected_now(Response response);
  void wait_for_request();
  void start_read();
  void on_read_some(beast::error_code ec, std::size_t n);
  void on_peer_eof();
  void arm_hangup_check();
  void arm_idle_timer();
  void arm_request_timer(std::chrono::milliseconds timeout);
  void arm_write_timer();
  void write_done();
  std::optional<ApiError> framing_error() const;
  void read_header();
  void on_header(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch();
  void fail_request(const ApiError& error);
  void on_response_written(beast::error_code ec, bool keep_alive);
  void flush();
  void on_stream_written(beast::error_code ec, bool last);
  void finish_exchange();
  void next_request();
  void graceful_close();
  void close();
  void fail_unexpectedly(const char* what) noexcept;

  beast::tcp_stream stream_;
  SessionHost& host_;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
  net::steady_timer idle_timer_;
  std::uint64_t idle_generation_ = 0;
  // Header/body deadline: cancels the read, so a 408 can still be sent.
  net::steady_timer request_timer_;
  std::uint64_t request_generation_ = 0;
  bool request_timed_out_ = false;
  // One write's deadline (the stream's own expiry is never set: it would
  // apply to the hang-up watch read too).
  net::steady_timer write_timer_;
  std::uint64_t write_generation_ = 0;
  // After the client's end-of-file: polls for the reset of a gone client.
  net::steady_timer hangup_timer_;
  bool peer_eof_ = false;
  std::function<void(std::uint64_t, beast::string_view, beast::error_code&)> chunk_header_check_;
  bool parse_after_read_ = false;  // the watch read was cancelled to parse a pipelined request
  bool head_request_ = false;

  std::string remote_;
  Exchange exchange_;
  bool in_flight_ = false;        // a request was dispatched and is not finished
  bool reading_request_ = false;  // header or body being read
  bool read_pending_ = false;     // an async_read_some is outstanding
  bool write_pending_ = false;
  bool responded_ = false;
  bool keep_alive_ = false;
  bool closing_ = false;  // server shutdown: no further requests
  bool closed_ = false;
  bool rejected_ = false;
  bool draining_input_ = false;  // half-closed: reading only to let the client finish
  unsigned version_ = 11;
  std::shared_ptr<PendingResponse> pending_;

  std::unique_ptr<Response> response_;
  // Streamed response.
  std::unique_ptr<beast::http::response<beast::http::empty_body>> stream_head_;
  std::unique_ptr<beast::http::response_serializer<beast::http::empty_body>> stream_serializer_;
  bool streaming_ = false;
  bool head_written_ = false;
  bool end_requested_ = false;
  bool last_written_ = false;
  std::string outbox_;
  std::string writing_;
};

}  // namespace izwi::server::http

#include "izwi/server/http/impl/session.hpp"
