#!/usr/bin/env python3
"""A misbehaving lttng-relayd, for the client's failure paths.

Usage: fake_relayd.py MODE CONTROL_PORT DATA_PORT
  old      answers VERSION with 2.4 (a relayd too old for protocol 2.11)
  closes   closes the control connection as soon as VERSION arrives
  silent   accepts both connections and never answers
  refuses  answers VERSION with 2.13, then refuses CREATE_SESSION
Prints "ready" once both ports listen; serves one client, then exits.
"""
import socket
import struct
import sys

HEADER = struct.Struct(">QQII")  # circuit_id, data_size, cmd, cmd_version
LTTNG_ERR_FATAL = 12


def listen(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(4)
    return s


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def command(conn):
    _, size, cmd, _ = HEADER.unpack(recv_exact(conn, HEADER.size))
    return cmd, recv_exact(conn, size)


def main():
    mode, ctl_port, data_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctl, data = listen(ctl_port), listen(data_port)
    print("ready", flush=True)
    conn, _ = ctl.accept()
    data_conn, _ = data.accept()
    try:
        cmd, _ = command(conn)
        if mode == "old":
            conn.sendall(struct.pack(">II", 2, 4))
        elif mode == "closes":
            conn.close()
            return
        elif mode == "silent":
            conn.settimeout(30)
            while conn.recv(4096):
                pass
        elif mode == "refuses":
            conn.sendall(struct.pack(">II", 2, 13))
            cmd, _ = command(conn)
            # CREATE_SESSION's 2.11 reply: session id, ret code, path length.
            conn.sendall(struct.pack(">QII", 0, LTTNG_ERR_FATAL, 0))
        conn.settimeout(10)
        while conn.recv(4096):
            pass
    except (EOFError, OSError, socket.timeout):
        pass
    finally:
        conn.close()
        data_conn.close()


if __name__ == "__main__":
    main()
