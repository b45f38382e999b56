/* The relayd client's system calls (contract in relayd_socket.h). Every
 * socket is non-blocking and every send passes MSG_DONTWAIT: a relayd that
 * is slow, stopped or gone fills the kernel's buffers and the caller's
 * queues, never the caller's time.
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL, SOCK_NONBLOCK */
#include "relayd_socket.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

uint64_t bmt_relayd_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bmt_relayd_sock_open(const struct sockaddr_storage *addr, socklen_t len)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, idle_s = 10, interval_s = 5, probes = 3;
    /* Commands are small and wait for their replies; packets go whole. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A relayd host that vanishes while the session is idle (nothing owed,
     * so no reply can be late) is noticed in about 25 s, not the kernel's
     * default two hours. */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    if (connect(fd, (const struct sockaddr *)addr, len) != 0 && errno != EINPROGRESS) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

int bmt_relayd_sock_connected(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -errno;
    return err ? -err : 1;
}

int bmt_relayd_sock_send(int fd, struct bmt_byteq *q)
{
    while (q->len > 0) {
        struct iovec iov[2];
        struct msghdr mh = {0};
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)bmt_byteq_iov(q, q->len, iov);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        bmt_byteq_drop(q, (size_t)n);
    }
    return 0;
}
