/* The relayd client's system calls (relayd_socket.c): non-blocking TCP
 * sockets to the relayd, sending a byte queue as far as the socket takes
 * it, and the monotonic clock the client's timeouts run on. Nothing here
 * ever waits. One thread per socket (the client's driver).
 */
#ifndef BMT_RELAYD_SOCKET_H
#define BMT_RELAYD_SOCKET_H

#include "relayd_queue.h"

#include <stdint.h>
#include <sys/socket.h>

/* CLOCK_MONOTONIC, ns. */
uint64_t bmt_relayd_mono_ns(void);

/* Opens a non-blocking TCP socket (TCP_NODELAY, keepalive noticing a
 * vanished peer in about 25 s) and starts connecting it to `addr` (`len`
 * bytes). Returns the descriptor, the caller's to close, or a negative
 * errno. */
int bmt_relayd_sock_open(const struct sockaddr_storage *addr, socklen_t len);

/* 1 when fd's connect finished, 0 while in progress, a negative errno when
 * it failed. */
int bmt_relayd_sock_connected(int fd);

/* Sends the oldest bytes of `q` on `fd` while the socket takes them,
 * dropping them from q. Returns 0 (all sent, or the socket is full), or a
 * negative errno when the connection failed. */
int bmt_relayd_sock_send(int fd, struct bmt_byteq *q);

#endif
