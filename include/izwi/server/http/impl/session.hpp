#pragma once
// Session bodies. Included by izwi/server/http/session.hpp.

#include <cstdio>

#include "izwi/server/http/request_id.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace izwi::server::http {

inline Session::Session(tcp::socket&& socket, SessionHost& host)
    : stream_(std::move(socket)), host_(host), idle_timer_(stream_.get_executor()) {
  beast::error_code ec;
  const tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = remote.address().to_string() + ":" + std::to_string(remote.port());
  exchange_.remote = remote_;
}

inline Session::~Session() { host_.session_closed(this); }

inline void Session::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
}

inline void Session::start_rejected(Response response) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), response = std::move(response)]() mutable {
    self->rejected_ = true;
    self->in_flight_ = true;
    self->keep_alive_ = false;
    self->exchange_.start = std::chrono::steady_clock::now();
    self->exchange_.method = "-";
    self->exchange_.request_id = make_request_id();
    self->host_.exchange_started();
    self->respond(std::move(response));
  });
}

inline void Session::shutdown_soft() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->closing_ = true;
    if (!self->in_flight_ && !self->reading_request_) self->close();
  });
}

inline void Session::abort() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
}

// --- reading ------------------------------------------------------------------

inline void Session::wait_for_request() {
  if (closed_) return;
  if (closing_) return close();
  if (buffer_.size() > 0) return read_header();  // pipelined bytes already here
  arm_idle_timer();
  if (!read_pending_) start_read();
}

// One read serves two purposes: between requests it waits for the next one
// (under the idle timer); while a request is answered it watches for the
// client hanging up.
inline void Session::start_read() {
  read_pending_ = true;
  stream_.expires_never();
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_read_some(ec, n);
  });
}

inline void Session::on_read_some(beast::error_code ec, std::size_t n) {
  read_pending_ = false;
  if (closed_) return;
  if (ec) return close();  // the client went away (or a timeout closed the socket)
  buffer_.commit(n);
  if (draining_input_) {
    buffer_.consume(buffer_.size());
    return start_read();
  }
  if (in_flight_) return;  // pipelined data: it waits until the response is done
  ++idle_generation_;
  idle_timer_.cancel();
  read_header();
}

inline void Session::arm_idle_timer() {
  const std::uint64_t generation = ++idle_generation_;
  idle_timer_.expires_after(host_.limits().idle_timeout);
  idle_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->idle_generation_) return;
    if (!self->in_flight_ && !self->reading_request_) self->close();
  });
}

inline void Session::read_header() {
  reading_request_ = true;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(host_.limits().max_header_bytes));
  parser_->body_limit(host_.limits().max_body_bytes);
  stream_.expires_after(host_.limits().header_timeout);
  beast::http::async_read_header(stream_, buffer_, *parser_,
                                 [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                   self->on_header(ec);
                                 });
}

inline void Session::on_header(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    reading_request_ = false;
    if (ec == beast::http::error::header_limit)
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
    stream_.expires_after(host_.limits().write_timeout);
    net::async_write(stream_, net::buffer(continue_line.data(), continue_line.size()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->write_pending_ = false;
                       if (ec || self->closed_) return self->close();
                       self->read_body();
                     });
    return;
  }
  read_body();
}

inline void Session::read_body() {
  stream_.expires_after(host_.limits().body_timeout);
  beast::http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->on_body(ec);
  });
}

inline void Session::on_body(beast::error_code ec) {
  reading_request_ = false;
  if (closed_) return;
  if (ec) {
    if (ec == beast::http::error::body_limit)
      return fail_request(ApiError(413, "invalid_request_error",
                                   "Request body is over the limit of " +
                                       std::to_string(host_.limits().max_body_bytes) + " bytes."));
    if (ec == beast::error::timeout)
      return fail_request(ApiError(408, "invalid_request_error", "Request body not received in time."));
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
  stream_.expires_never();
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
  // Watch the connection while the request is answered (unless the client
  // already sent more: that is read after this response).
  if (!read_pending_ && buffer_.size() == 0) start_read();
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
  exchange_.status = response.result_int();
  exchange_.bytes = response.body().size();
  response_ = std::make_unique<Response>(std::move(response));
  write_pending_ = true;
  stream_.expires_after(host_.limits().write_timeout);
  beast::http::async_write(stream_, *response_,
                           [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                             self->on_response_written(ec, keep_alive);
                           });
}

inline void Session::on_response_written(beast::error_code ec, bool keep_alive) {
  write_pending_ = false;
  response_.reset();
  finish_exchange();
  if (ec || closed_) return close();
  if (rejected_ || !keep_alive) return graceful_close();
  next_request();
}

inline void Session::begin_stream(const Response& head) {
  if (closed_ || !in_flight_ || responded_) return;
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
    return [self, last](beast::error_code ec, std::size_t) { self->on_stream_written(ec, last); };
  };
  stream_.expires_after(host_.limits().write_timeout);
  if (!head_written_) {
    head_written_ = true;
    write_pending_ = true;
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
    net::async_write(stream_, net::buffer(writing_), done(false));
    return;
  }
  if (end_requested_ && !last_written_) {
    last_written_ = true;
    write_pending_ = true;
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
  write_pending_ = false;
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
  std::shared_ptr<PendingResponse> pending = std::move(pending_);
  finish_exchange();  // a request abandoned by its client counts as 499
  if (pending) pending->cancel();
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace izwi::server::http
