#pragma once
// Listener: accepts TCP connections and hands each socket, on a strand of
// its own, to a callback (the server decides whether to serve or refuse it).
// Accepting survives transient errors (out of file descriptors) by pausing
// briefly instead of spinning.

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>

namespace izwi::server::http {

/// The process's soft limit on open files (`ulimit -n`); a large number when unlimited.
inline std::uint64_t open_file_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::uint64_t{1} << 32;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

/// Raises the soft open-file limit to the hard one (the usual soft limit,
/// 1024, is what the default --max-connections alone would use up).
/// Returns the soft limit in force afterwards. A server program calls it at
/// start-up; a library host decides for itself.
inline std::uint64_t raise_open_file_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
#ifdef __APPLE__
      // macOS refuses more than OPEN_MAX for an "unlimited" hard limit.
      raised.rlim_cur = limit.rlim_cur > 10240 ? limit.rlim_cur : 10240;
      ::setrlimit(RLIMIT_NOFILE, &raised);
#endif
    }
  }
  return open_file_limit();
}

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  using OnAccept = std::function<void(boost::asio::ip::tcp::socket&&)>;

  /// Binds and listens at once; throws boost::system::system_error when the
  /// address cannot be bound (in use, no permission).
  Listener(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint, OnAccept on_accept);

  /// The bound port (the kernel's choice when the endpoint asked for 0).
  unsigned short port() const noexcept { return port_; }
  /// Starts accepting.
  void run();
  /// Stops accepting and closes the listening socket (thread-safe).
  void stop();

 private:
  void accept();

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  OnAccept on_accept_;
  unsigned short port_ = 0;
  bool stopped_ = false;
};

inline Listener::Listener(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint,
                          OnAccept on_accept)
    : ioc_(ioc),
      acceptor_(boost::asio::make_strand(ioc)),
      retry_timer_(acceptor_.get_executor()),
      on_accept_(std::move(on_accept)) {
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(boost::asio::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
}

inline void Listener::run() {
  boost::asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] { self->accept(); });
}

inline void Listener::stop() {
  boost::asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
    self->stopped_ = true;
    boost::beast::error_code ec;
    self->retry_timer_.cancel();
    self->acceptor_.close(ec);
  });
}

inline void Listener::accept() {
  if (stopped_) return;
  acceptor_.async_accept(boost::asio::make_strand(ioc_), [self = shared_from_this()](
                                                              boost::beast::error_code ec,
                                                              boost::asio::ip::tcp::socket socket) {
    if (self->stopped_ || ec == boost::asio::error::operation_aborted) return;
    if (ec) {
      // EMFILE/ENFILE/ENOBUFS: let connections close, then try again. The
      // server keeps its connection limit below the open-file limit
      // (connection_limit_for), so this is the rare case of descriptors
      // taken by something else.
      self->retry_timer_.expires_after(std::chrono::milliseconds(50));
      self->retry_timer_.async_wait([self](boost::beast::error_code e) {
        if (!e) self->accept();
      });
      return;
    }
    self->on_accept_(std::move(socket));
    self->accept();
  });
}

}  // namespace izwi::server::http
