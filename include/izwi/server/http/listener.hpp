#pragma once
// Listener: accepts TCP connections and hands each socket, on a strand of
// its own, to a callback (the server decides whether to serve or refuse it).
// Accepting survives transient errors (out of file descriptors) by pausing
// briefly instead of spinning.

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>

namespace izwi::server::http {

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
      // EMFILE/ENFILE/ENOBUFS: let connections close, then try again.
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
