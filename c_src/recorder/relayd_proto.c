/* lttng-relayd's wire format (contract and sources in relayd_proto.h). */
#include "relayd_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

void bmt_relayd_put_cmd_header(uint8_t *out, enum bmt_relayd_cmd cmd, uint64_t payload_bytes)
{
    put_be64(out, 0);                  /* circuit_id: unused */
    put_be64(out + 8, payload_bytes);
    put_be32(out + 16, (uint32_t)cmd);
    put_be32(out + 20, 0);             /* cmd_version */
}

void bmt_relayd_put_data_header(uint8_t *out, uint64_t handle, uint64_t net_seq_num,
                                uint32_t data_bytes, uint32_t padding_bytes)
{
    put_be64(out, 0);
    put_be64(out + 8, handle);
    put_be64(out + 16, net_seq_num);
    put_be32(out + 24, data_bytes);
    put_be32(out + 28, padding_bytes);
}

size_t bmt_relayd_encode_version(uint8_t *out, uint32_t major, uint32_t minor)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_VERSION, 8);
    put_be32(out + 24, major);
    put_be32(out + 28, minor);
    return 32;
}

int bmt_relayd_name_ok(const char *name, size_t max)
{
    size_t len = strlen(name);
    return len > 0 && len < max && name[0] != '.' && !strchr(name, '/');
}

long bmt_relayd_encode_create_session(uint8_t *out, size_t cap,
                                      const struct bmt_relayd_session_args *a)
{
    static const uint8_t nil[16];
    if (!bmt_relayd_name_ok(a->session_name, BMT_RELAYD_NAME_MAX) ||
        !bmt_relayd_name_ok(a->hostname, BMT_RELAYD_HOST_NAME_MAX) ||
        memcmp(a->sessiond_uuid, nil, sizeof nil) == 0 || strstr(a->base_path, "../"))
        return -EINVAL;
    /* The three names go with their NULs; an empty base path as one NUL,
     * as lttng-sessiond sends it. */
    size_t name = strlen(a->session_name) + 1, host = strlen(a->hostname) + 1,
           base = strlen(a->base_path) + 1;
    if (base > BMT_RELAYD_PATH_MAX)
        return -ENAMETOOLONG;
    size_t payload = BMT_RELAYD_CREATE_SESSION_BYTES + name + host + base;
    if (BMT_RELAYD_CMD_HEADER_BYTES + payload > cap)
        return -ENOSPC;
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_CREATE_SESSION, payload);
    uint8_t *p = out + BMT_RELAYD_CMD_HEADER_BYTES;
    put_be32(p, (uint32_t)name);
    put_be32(p + 4, (uint32_t)host);
    put_be32(p + 8, (uint32_t)base);
    put_be32(p + 12, a->live_timer_us);
    p[16] = 0;                                    /* snapshot */
    p[17] = a->name_contains_creation_time ? 1 : 0;
    memcpy(p + 18, a->sessiond_uuid, 16);
    put_be64(p + 34, a->session_id);
    put_be64(p + 42, a->creation_time_s);
    p[50] = 0;                                    /* current_chunk_id.is_set */
    put_be64(p + 51, 0);                          /* current_chunk_id.value */
    p += BMT_RELAYD_CREATE_SESSION_BYTES;
    memcpy(p, a->session_name, name);
    memcpy(p + name, a->hostname, host);
    memcpy(p + name + host, a->base_path, base);
    return (long)(BMT_RELAYD_CMD_HEADER_BYTES + payload);
}

size_t bmt_relayd_encode_create_chunk(uint8_t *out, uint64_t chunk_id, uint64_t creation_time_s)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_CREATE_TRACE_CHUNK, 20);
    put_be64(out + 24, chunk_id);
    put_be64(out + 32, creation_time_s);
    put_be32(out + 40, 0); /* override_name_length: the relayd names it */
    return 44;
}

size_t bmt_relayd_encode_close_chunk(uint8_t *out, uint64_t chunk_id, uint64_t close_time_s)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_CLOSE_TRACE_CHUNK, 21);
    put_be64(out + 24, chunk_id);
    put_be64(out + 32, close_time_s);
    out[40] = 0;           /* close_command.is_set: no rotation command */
    put_be32(out + 41, 0); /* close_command.value */
    return 45;
}

long bmt_relayd_encode_add_stream(uint8_t *out, size_t cap, const char *channel, const char *path,
                                  uint64_t chunk_id)
{
    size_t chan = strlen(channel) + 1, dir = strlen(path) + 1;
    if (chan == 1 || strchr(channel, '/') || strstr(path, "../"))
        return -EINVAL;
    if (chan > BMT_RELAYD_CHANNEL_NAME_MAX || dir > BMT_RELAYD_PATH_MAX)
        return -ENAMETOOLONG;
    size_t payload = BMT_RELAYD_ADD_STREAM_BYTES + chan + dir;
    if (BMT_RELAYD_CMD_HEADER_BYTES + payload > cap)
        return -ENOSPC;
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_ADD_STREAM, payload);
    uint8_t *p = out + BMT_RELAYD_CMD_HEADER_BYTES;
    put_be32(p, (uint32_t)chan);
    put_be32(p + 4, (uint32_t)dir);
    put_be64(p + 8, 0);  /* tracefile_size: one file per stream */
    put_be64(p + 16, 0); /* tracefile_count */
    put_be64(p + 24, chunk_id);
    memcpy(p + 32, channel, chan);
    memcpy(p + 32 + chan, path, dir);
    return (long)(BMT_RELAYD_CMD_HEADER_BYTES + payload);
}

size_t bmt_relayd_encode_streams_sent(uint8_t *out)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_STREAMS_SENT, 0);
    return 24;
}

size_t bmt_relayd_encode_metadata_header(uint8_t *out, uint64_t handle, uint64_t bytes)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_SEND_METADATA,
                              BMT_RELAYD_METADATA_HEADER_BYTES + bytes);
    put_be64(out + 24, handle);
    put_be32(out + 32, 0); /* padding: none */
    return 36;
}

size_t bmt_relayd_encode_index(uint8_t *out, const struct bmt_relayd_index *ix)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_SEND_INDEX, BMT_RELAYD_INDEX_BYTES);
    uint8_t *p = out + BMT_RELAYD_CMD_HEADER_BYTES;
    put_be64(p, ix->relay_stream);
    put_be64(p + 8, ix->net_seq_num);
    put_be64(p + 16, ix->packet_size_bits);
    put_be64(p + 24, ix->content_size_bits);
    put_be64(p + 32, ix->timestamp_begin);
    put_be64(p + 40, ix->timestamp_end);
    put_be64(p + 48, ix->events_discarded);
    put_be64(p + 56, ix->stream_class_id);
    put_be64(p + 64, ix->stream_instance_id);
    put_be64(p + 72, ix->packet_seq_num);
    return BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES;
}

size_t bmt_relayd_encode_close_stream(uint8_t *out, uint64_t handle, uint64_t last_net_seq_num)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_CLOSE_STREAM, 16);
    put_be64(out + 24, handle);
    put_be64(out + 32, last_net_seq_num);
    return 40;
}

size_t bmt_relayd_encode_data_pending(uint8_t *out, uint64_t handle, uint64_t last_net_seq_num)
{
    bmt_relayd_put_cmd_header(out, BMT_RELAYD_DATA_PENDING, 16);
    put_be64(out + 24, handle);
    put_be64(out + 32, last_net_seq_num);
    return 40;
}

/* ---- the URL ---- */

static int url_fail(char *why, size_t size, const char *text, const char *what)
{
    snprintf(why, size, "bad relayd URL \"%s\": %s; expected net://HOST[:CONTROL_PORT[:DATA_PORT]]"
                        "[/PATH] as lttng create --set-url takes it",
             text, what);
    return -EINVAL;
}

/* Reads a port (1..65535) at *p, moving *p past it. */
static int read_port(const char **p, uint16_t *port)
{
    char *end;
    if (**p < '0' || **p > '9')
        return -1;
    unsigned long v = strtoul(*p, &end, 10);
    if (v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    *p = end;
    return 0;
}

int bmt_relayd_url_parse(const char *text, struct bmt_relayd_url *url, char *why, size_t why_size)
{
    memset(url, 0, sizeof *url);
    if (strlen(text) >= sizeof url->text)
        return url_fail(why, why_size, "...", "too long");
    strcpy(url->text, text);
    url->control_port = BMT_RELAYD_CONTROL_PORT;
    url->data_port = BMT_RELAYD_DATA_PORT;
    const char *p;
    if (strncmp(text, "net://", 6) == 0) {
        p = text + 6;
    } else if (strncmp(text, "net6://", 7) == 0) {
        p = text + 7;
        url->ipv6 = 1;
    } else {
        return url_fail(why, why_size, text, "the scheme must be net:// or net6://");
    }
    size_t host_len;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (!close)
            return url_fail(why, why_size, text, "no ']' after the IPv6 address");
        host_len = (size_t)(close - p - 1);
        if (host_len == 0 || host_len >= sizeof url->host)
            return url_fail(why, why_size, text, "the host is empty or too long");
        memcpy(url->host, p + 1, host_len);
        url->ipv6 = 1;
        p = close + 1;
    } else {
        host_len = strcspn(p, ":/");
        if (host_len == 0 || host_len >= sizeof url->host)
            return url_fail(why, why_size, text, "the host is empty or too long");
        memcpy(url->host, p, host_len);
        p += host_len;
    }
    url->host[host_len] = '\0';
    if (*p == ':') {
        p++;
        if (read_port(&p, &url->control_port) != 0)
            return url_fail(why, why_size, text, "the control port is not 1..65535");
        if (*p == ':') {
            p++;
            if (read_port(&p, &url->data_port) != 0)
                return url_fail(why, why_size, text, "the data port is not 1..65535");
        }
        /* A control port alone leaves data on the default port, as lttng's
         * uri.c has it. */
    }
    if (*p == '/') {
        while (*p == '/')
            p++;
        size_t len = strlen(p);
        while (len > 0 && p[len - 1] == '/')
            len--;
        if (len >= sizeof url->base_path)
            return url_fail(why, why_size, text, "the path is too long");
        memcpy(url->base_path, p, len);
        url->base_path[len] = '\0';
        if (strstr(url->base_path, "..") || strchr(url->base_path, '\\'))
            return url_fail(why, why_size, text, "the path may not go up (\"..\")");
    } else if (*p != '\0') {
        return url_fail(why, why_size, text, "unexpected text after the host");
    }
    if (url->control_port == url->data_port)
        return url_fail(why, why_size, text, "the control and data ports must differ");
    return 0;
}
