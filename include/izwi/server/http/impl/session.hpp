#pragma once
// Session bodies. Included by izwi/server/http/session.hpp.

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>

#include "izwi/server/http/request_id.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace izwi::server::http {

inline Session::Session(tcp::socket&& socket, SessionHost& host)
    : stream_(std::move(socket)),
      host_(host),
      buffer_(std::max(host.limits().max_buffered_bytes, host.limits().max_header_bytes + 1024)),
      idle_timer_(stream_.get_executor()),
      request_timer_(stream_.get_executor()),
      write_timer_(stream_.get_executor()),
      hangup_timer_(stream_.get_executor()),
      chunk_header_check_([max = host.limits().max_chunk_extension_bytes](std::uint64_t, beast::string_view extensions,
                                                                          beast::error_code& ec) {
        if (extensions.size() > max) ec = beast::http::error::bad_chunk_extension;
      }) {
  beast::error_code ec;
  const tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = remote.address().to_string() + ":" + std::to_string(remote.port());
  exchange_.remote = remote_;
}

inline Session::~Session() { host_.session_closed(this); }

inline void Session::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->run_guarded([&] { self->wait_for_request(); });
  });
}

inline void Session::start_rejected(Response response) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), response = std::move(response)]() mutable {
    self->run_guarded([&] { self->start_rejected_now(std::move(response)); });
  });
}

inline void Session::start_rejected_now(Response response) {
  rejected_ = true;
  in_flight_ = true;
  keep_alive_ = false;
  exchange_.start = std::chrono::steady_clock::now();
  exchange_.method = "-";
  exchange_.request_id = make_request_id();
  host_.exchange_started();
  respond(std::move(response));
}

inline void Session::shutdown_soft() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->run_guarded([&] {
      self->closing_ = true;
      if (!self->in_flight_ && !self->reading_request_) self->close();
    });
  });
}

inline void Session::abort() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
}

// --- reading ------------------------------------------------------------------

inline void Session::wait_for_request() {
  if (closed_) return;
  if (closing_) return close();
  if (buffer_.size() > 0) {
    // Pipelined bytes already here. The read that watched for a hang-up is
    // still out: cancel it first (one read at a time), then parse.
    if (!read_pending_) return read_header();
    parse_after_read_ = true;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    return;
  }
  if (peer_eof_) return close();                 // a half-closed client was answered everything it sent
  arm_idle_timer();
  if (!read_pending_) start_read();
}

// One read serves two purposes: between requests it waits for the next one
// (under the idle timer); while a request is answered it watches for the
// client hanging up, keeping what a pipelining client sends meanwhile (up to
// the buffer's limit; then the rest waits in the kernel).
inline void Session::start_read() {
  if (closed_ || read_pending_ || peer_eof_) return;
  const std::size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) return;
  read_pending_ = true;
  stream_.async_read_some(buffer_.prepare(std::min<std::size_t>(4096, room)),
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            self->run_guarded([&] { self->on_read_some(ec, n); });
                          });
}

inline void Session::on_read_some(beast::error_code ec, std::size_t n) {
  read_pending_ = false;
  if (closed_) return;
  if (parse_after_read_) {
    parse_after_read_ = false;
    if (ec == net::error::operation_aborted) ec = {};
    if (!ec) {
      buffer_.commit(n);
      return wait_for_request();
    }
  }
  if (ec == net::error::eof && in_flight_ && !draining_input_) return on_peer_eof();
  if (ec) return close();  // the client went away
  buffer_.commit(n);
  if (draining_input_) {
    buffer_.consume(buffer_.size());
    return start_read();
  }
  if (in_flight_) return start_read();  // pipelined: parsed after this response; keep watching
  ++idle_generation_;
  idle_timer_.cancel();
  read_header();
}

// The client shut its sending side while its request is answered: it may
// wait for the answer (a half-close) or be gone, and TCP tells the two apart
// only once something is sent. An HTTP/1.1 client must accept an interim
// 1xx response it did not ask for (RFC 9110 §15.2), so a "100 Continue" is
// sent; a gone client's kernel answers it with a reset, which the check
// below sees. Once a response has started, its own writes serve the same end.
inline void Session::on_peer_eof() {
  peer_eof_ = true;
  if (version_ < 11) return close();  // no interim responses for HTTP/1.0: treat it as gone
  if (!responded_ && !write_pending_) {
    static constexpr std::string_view probe = "HTTP/1.1 100 Continue\r\n\r\n";
    int flags = MSG_DONTWAIT;
#ifdef MSG_NOSIGNAL
    flags |= MSG_NOSIGNAL;
#endif
    if (::send(stream_.socket().native_handle(), probe.data(), probe.size(), flags) < 0) return close();
  }
  arm_hangup_check();
}

/// While a request of a client that sent end-of-file is answered: every
/// 100 ms, whether the connection was reset (the client is gone).
inline void Session::arm_hangup_check() {
  hangup_timer_.expires_after(std::chrono::milliseconds(100));
  hangup_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->closed_ || !self->in_flight_) return;
    self->run_guarded([&] {
      pollfd p{self->stream_.socket().native_handle(), 0, 0};
      if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0) return self->close();
      self->arm_hangup_check();
    });
  });
}

inline void Session::arm_idle_timer() {
  const std::uint64_t generation = ++idle_generation_;
  idle_timer_.expires_after(host_.limits().idle_timeout);
  idle_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->idle_generation_) return;
    if (!self->in_flight_ && !self->reading_request_) self->close();
  });
}

// The header or body deadline cancels the read rather than closing the
// socket, so the client can still be told 408.
inline void Session::arm_request_timer(std::chrono::milliseconds timeout) {
  const std::uint64_t generation = ++request_generation_;
  request_timed_out_ = false;
  request_timer_.expires_after(timeout);
  request_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->request_generation_ || self->closed_ || !self->reading_request_) return;
    self->request_timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

inline void Session::arm_write_timer() {
  const std::uint64_t generation = ++write_generation_;
  write_timer_.expires_after(host_.limits().write_timeout);
  write_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->write_generation_) return;
    self->close();  // the client stopped reading
  });
}

inline void Session::write_done() {
  write_pending_ = false;
  ++write_generation_;
  write_timer_.cancel();
}

inline void Session::read_header() {
  reading_request_ = true;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(host_.limits().max_header_bytes));
  parser_->body_limit(host_.limits().max_body_bytes);
  parser_->on_chunk_header(chunk_header_check_);  // the parser keeps a reference
  arm_request_timer(host_.limits().header_timeout);
  beast::http::async_read_header(stream_, buffer_, *parser_,
                                 [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                   self->run_guarded([&] { self->on_header(ec); });
                                 });
}

/// Framing this server will not guess at (RFC 9112 §6.1, §6.3, §3.2): the
/// request is answered 400 and the connection closed, so bytes after its
/// header are never taken for a request.
inline std::optional<ApiError> Session::framing_error() const {
  const auto& header = parser_->get();
  namespace field_names = beast::http;
  if (header.count(field_names::field::transfer_encoding) > 0) {
    if (header.version() < 11)
      return ApiError::bad_request("Transfer-Encoding is not allowed in an HTTP/1.0 request.");
    if (!parser_->chunked())
      return ApiError::bad_request(
          "Unsupported Transfer-Encoding: the last coding must be 'chunked' (the body's length is unknown).");
    if (header.count(field_names::field::content_length) > 0)
      return ApiError::bad_request("A request must not have both Transfer-Encoding and Content-Length.");
  }
  if (header.version() >= 11 && header.count(field_names::field::host) != 1)
    return ApiError::bad_request(header.count(field_names::field::host) == 0
                                     ? "An HTTP/1.1 request needs a Host header."
                                     : "A request must not have more than one Host header.");
  return std::nullopt;
}

inline void Session::on_header(beast::error_code ec) {
  ++request_generation_;
  request_timer_.cancel();
  if (closed_) return;
  if (ec) {
    reading_request_ = false;
    if (ec == net::error::operation_aborted && request_timed_out_)
      return fail_request(ApiError(408, "invalid_request_error", "Request headers not received in time."));
    if (ec == beast::http::error::header_limit || ec == beast::http::error::buffer_overflow)
      return fail_request(ApiError(431, "invalid_request_error", "Request headers are too large."));
    // The parser checks Content-Length against the body limit with the headers.
    if (ec == beast::http::error::body_limit)
      return fail_request(ApiError(413, "invalid_request_error",
                                   "Request body is over the limit of " +
                                       std::to_string(host_.limits().max_body_bytes) + " bytes."));
    // The client left (or was too slow) mid-header: nobody to answer.
    if (ec == beast::http::error::end_of_stream || ec == beast::http::error::partial_message ||
        ec == beast::error::timeout || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return close();
    return fail_request(ApiError::bad_request("Malformed HTTP request."));
  }
  const auto& header = parser_->get();
  version_ = header.version();
  head_request_ = header.method() == beast::http::verb::head;
  if (std::optional<ApiError> error = framing_error()) {
    reading_request_ = false;
    return fail_request(*error);
  }
  const auto length = parser_->content_length();
  if (length && *length > host_.limits().max_body_bytes) {
    reading_request_ = false;
    return fail_request(ApiError(413, "invalid_request_error",
                                 "Request body of " + std::to_string(*length) + " bytes is over the limit of " +
                                     std::to_string(host_.limits().max_body_bytes) + " bytes."));
  }
  if (parser_->is_done()) {
    reading_request_ = false;
    return dispatch();
  }
  if (beast::iequals(header[beast::http::field::expect], "100-continue") && version_ >= 11) {
    static constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
    write_pending_ = true;
    arm_write_timer();
    net::async_write(stream_, net::buffer(continue_line.data(), continue_line.size()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->run_guarded([&] {
                         self->write_done();
                         if (ec || self->closed_) return self->close();
                         self->read_body();
                       });
                     });
    return;
  }
  read_body();
}

inline void Session::read_body() {
  arm_request_timer(host_.limits().body_timeout);
  beast::http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->run_guarded([&] { self->on_body(ec); });
  });
}

inline void Session::on_body(beast::error_code ec) {
  ++request_generation_;
  request_timer_.cancel();
  reading_request_ = false;
  if (closed_) return;
  if (ec) {
    if (ec == beast::http::error::body_limit)
      return fail_request(ApiError(413, "invalid_request_error",
                                   "Request body is over the limit of " +
                                       std::to_string(host_.limits().max_body_bytes) + " bytes."));
    if (ec == net::error::operation_aborted && request_timed_out_)
      return fail_request(ApiError(408, "invalid_request_error", "Request body not received in time."));
    if (ec == beast::http::error::buffer_overflow || ec == beast::http::error::bad_chunk_extension)
      return fail_request(ApiError::bad_request(
          "A chunk-size line is too long (extensions over " +
          std::to_string(host_.limits().max_chunk_extension_bytes) + " bytes, or a line or trailer over " +
          std::to_string(buffer_.max_size()) + " bytes)."));
    if (ec == beast::http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return close();
    return fail_request(ApiError::bad_request("Malformed HTTP request body."));
  }
  dispatch();
}

/// An error found while reading: answer it and close (the rest of the
/// request, if any, is not read).
inline void Session::fail_request(const ApiError& error) {
  in_flight_ = true;
  responded_ = false;
  keep_alive_ = false;
  exchange_ = Exchange{};
  exchange_.remote = remote_;
  exchange_.start = std::chrono::steady_clock::now();
  if (parser_) {
    const auto& header = parser_->get();
    exchange_.method = std::string(header.method_string());
    exchange_.target = std::string(header.target());
  }
  exchange_.request_id = make_request_id();
  host_.exchange_started();
  respond(host_.error_response(error, version_));
}

inline void Session::dispatch() {
  Request request = parser_->release();
  parser_.reset();
  in_flight_ = true;
  responded_ = false;
  streaming_ = head_written_ = end_requested_ = last_written_ = false;
  keep_alive_ = request.keep_alive();
  version_ = request.version();
  exchange_ = Exchange{};
  exchange_.remote = remote_;
  exchange_.start = std::chrono::steady_clock::now();
  exchange_.method = std::string(request.method_string());
  exchange_.target = std::string(request.target());
  exchange_.request_id = request_id_for(request["X-Request-Id"]);
  host_.exchange_started();
  // Watch the connection while the request is answered (bytes of a next,
  // pipelined request are kept for after this response).
  if (peer_eof_) arm_hangup_check();
  else start_read();
  if (host_.draining()) {
    keep_alive_ = false;
    return respond(host_.error_response(ApiError::unavailable("The server is shutting down."), version_));
  }
  host_.handle(shared_from_this(), std::move(request));
}

// --- writing ------------------------------------------------------------------

inline void Session::respond(Response response) {
  if (closed_ || !in_flight_ || responded_) return;
  responded_ = true;
  const bool keep_alive = keep_alive_ && !closing_ && !host_.draining();
  response.version(version_);
  response.set(beast::http::field::server, "izwi");
  if (!exchange_.request_id.empty()) response.set("X-Request-Id", exchange_.request_id);
  response.keep_alive(keep_alive);
  response.prepare_payload();
  // A 304 has no content, and a Content-Length would have to be the one of
  // the 200 it stands for (RFC 9110 §8.6): none.
  if (response.result() == beast::http::status::not_modified) response.erase(beast::http::field::content_length);
  if (head_request_) {
    // HEAD: GET's headers (Content-Length included), never a body (RFC 9110 §9.3.2).
    const std::string length = std::to_string(response.body().size());
    response.body().clear();
    response.set(beast::http::field::content_length, length);
  }
  exchange_.status = response.result_int();
  exchange_.bytes = response.body().size();
  response_ = std::make_unique<Response>(std::move(response));
  write_pending_ = true;
  arm_write_timer();
  beast::http::async_write(stream_, *response_,
                           [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                             self->run_guarded([&] { self->on_response_written(ec, keep_alive); });
                           });
}

inline void Session::on_response_written(beast::error_code ec, bool keep_alive) {
  write_done();
  response_.reset();
  finish_exchange();
  if (ec || closed_) return close();
  if (rejected_ || !keep_alive) return graceful_close();
  next_request();
}

inline void Session::begin_stream(const Response& head) {
  if (closed_ || !in_flight_ || responded_) return;
  if (head_request_) {
    // HEAD to a streaming route: the head only; the work behind it is not wanted.
    Response only_head{head.result(), version_};
    for (const auto& field : head) only_head.set(field.name_string(), field.value());
    std::shared_ptr<PendingResponse> pending = std::move(pending_);
    if (pending) pending->cancel();
    return respond(std::move(only_head));
  }
  responded_ = true;
  streaming_ = true;
  stream_head_ = std::make_unique<beast::http::response<beast::http::empty_body>>(head.result(), version_);
  for (const auto& field : head) stream_head_->set(field.name_string(), field.value());
  stream_head_->set(beast::http::field::server, "izwi");
  if (!exchange_.request_id.empty()) stream_head_->set("X-Request-Id", exchange_.request_id);
  keep_alive_ = keep_alive_ && !closing_ && !host_.draining() && version_ >= 11;
  stream_head_->keep_alive(keep_alive_);
  if (version_ >= 11) stream_head_->chunked(true);
  exchange_.status = stream_head_->result_int();
  stream_serializer_ = std::make_unique<beast::http::response_serializer<beast::http::empty_body>>(*stream_head_);
  flush();
}

inline void Session::stream_write(std::string_view data) {
  if (closed_ || !streaming_ || end_requested_ || data.empty()) return;
  outbox_.append(data);
  exchange_.bytes += data.size();
  flush();
}

inline void Session::end_stream() {
  if (closed_ || !streaming_) return;
  end_requested_ = true;
  flush();
}

inline void Session::flush() {
  if (write_pending_ || closed_ || !streaming_) return;
  auto done = [self = shared_from_this()](bool last) {
    return [self, last](beast::error_code ec, std::size_t) {
      self->run_guarded([&] { self->on_stream_written(ec, last); });
    };
  };
  if (!head_written_) {
    head_written_ = true;
    write_pending_ = true;
    arm_write_timer();
    beast::http::async_write_header(stream_, *stream_serializer_, done(false));
    return;
  }
  const bool chunked = version_ >= 11;
  if (!outbox_.empty()) {
    writing_.clear();
    if (chunked) {
      char size[24];
      const int n = std::snprintf(size, sizeof size, "%zx\r\n", outbox_.size());
      writing_.append(size, static_cast<std::size_t>(n));
    }
    writing_.append(outbox_);
    if (chunked) writing_.append("\r\n");
    outbox_.clear();
    write_pending_ = true;
    arm_write_timer();
    net::async_write(stream_, net::buffer(writing_), done(false));
    return;
  }
  if (end_requested_ && !last_written_) {
    last_written_ = true;
    write_pending_ = true;
    arm_write_timer();
    static constexpr std::string_view last_chunk = "0\r\n\r\n";
    if (chunked) {
      net::async_write(stream_, net::buffer(last_chunk.data(), last_chunk.size()), done(true));
    } else {
      // HTTP/1.0: the body ends when the connection does.
      net::post(stream_.get_executor(), [fn = done(true)]() mutable { fn({}, 0); });
    }
  }
}

inline void Session::on_stream_written(beast::error_code ec, bool last) {
  write_done();
  if (closed_) return;
  if (ec) return close();
  if (last) {
    stream_head_.reset();
    stream_serializer_.reset();
    streaming_ = false;
    finish_exchange();
    if (!keep_alive_ || closing_ || version_ < 11) return graceful_close();
    return next_request();
  }
  if (pending_) pending_->resume();
  flush();
}

inline void Session::attach(std::shared_ptr<PendingResponse> pending) {
  if (closed_ || !in_flight_) {
    if (pending) pending->cancel();
    return;
  }
  pending_ = std::move(pending);
}

inline void Session::finish_exchange() {
  if (!in_flight_) return;
  in_flight_ = false;
  head_request_ = false;
  hangup_timer_.cancel();
  pending_.reset();
  if (exchange_.status == 0) exchange_.status = 499;
  host_.exchange_finished(exchange_);
}

inline void Session::next_request() {
  if (closing_ || host_.draining()) return graceful_close();
  wait_for_request();
}

// Half-close and read what the client still sends for a moment before closing:
// closing with unread data would reset the connection and could destroy the
// response before the client reads it (a 413 sent before the body was read).
inline void Session::graceful_close() {
  if (closed_) return;
  if (peer_eof_) return close();  // nothing more will come
  draining_input_ = true;
  closing_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  const std::uint64_t generation = ++idle_generation_;
  idle_timer_.expires_after(std::chrono::seconds(2));
  idle_timer_.async_wait([self = shared_from_this(), generation](beast::error_code e) {
    if (!e && generation == self->idle_generation_) self->close();
  });
  if (!read_pending_) start_read();
}

inline void Session::close() {
  if (closed_) return;
  closed_ = true;
  ++idle_generation_;
  beast::error_code ec;
  idle_timer_.cancel();
  request_timer_.cancel();
  write_timer_.cancel();
  hangup_timer_.cancel();
  std::shared_ptr<PendingResponse> pending = std::move(pending_);
  finish_exchange();  // a request abandoned by its client counts as 499
  if (pending) pending->cancel();
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

inline void Session::fail_unexpectedly(const char* what) noexcept {
  try {
    host_.session_failed(exchange_.request_id, what);
  } catch (...) {
  }
  try {
    close();
  } catch (...) {
    closed_ = true;
  }
}

}  // namespace izwi::server::http
