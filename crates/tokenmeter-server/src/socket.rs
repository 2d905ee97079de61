//! The listening socket, with a fixed send buffer for every connection.
//!
//! Left to itself, Linux grows a connection's send buffer up to `net.ipv4.tcp_wmem`'s maximum
//! (4 MiB by default), so a client that stops reading would absorb some 20,000 token frames in
//! the server's kernel before the server felt any backpressure, and each would count as
//! delivered. A fixed `SO_SNDBUF`, which accepted connections inherit from the listener, keeps
//! that to a few dozen frames: the response body stops, the engine's bounded output queue
//! fills, and the request stalls on its own (and is cut at the stall limit).

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Listens on `addr`; each accepted connection gets a send buffer of `send_buffer` bytes (the
/// kernel doubles it for its bookkeeping).
pub(crate) fn bind(addr: SocketAddr, send_buffer: u32) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As `TcpListener::bind` does: a restarted server can take its port back at once.
    socket.set_reuseaddr(true)?;
    socket.set_send_buffer_size(send_buffer)?;
    socket.bind(addr)?;
    socket.listen(1024)
}
