/* Packet header and context encoding (layout in ctf.h). Reentrant. */
#include "ctf.h"
#include "event.h"

#include <string.h>

void bmt_ctf_packet_open(uint8_t *pkt, const uint8_t uuid[BMT_CTF_UUID_BYTES],
                         uint64_t stream_instance, uint64_t ts_begin_ns)
{
    bmt_put_u32(pkt + BMT_PKT_MAGIC, BMT_CTF_MAGIC);
    memcpy(pkt + BMT_PKT_UUID, uuid, BMT_CTF_UUID_BYTES);
    bmt_put_u32(pkt + BMT_PKT_STREAM_ID, 0);
    bmt_put_u64(pkt + BMT_PKT_STREAM_INSTANCE_ID, stream_instance);
    bmt_put_u64(pkt + BMT_PKT_TS_BEGIN, ts_begin_ns);
    /* cpu_id: the recording thread's stream number; a thread is not pinned
     * to a CPU, so this is the closest stable identity. */
    bmt_put_u32(pkt + BMT_PKT_CPU_ID, (uint32_t)stream_instance);
}

void bmt_ctf_packet_close(uint8_t *pkt, uint64_t ts_end_ns, size_t content_bytes,
                          uint64_t seq_num, uint64_t events_discarded)
{
    bmt_put_u64(pkt + BMT_PKT_TS_END, ts_end_ns);
    bmt_put_u64(pkt + BMT_PKT_CONTENT_SIZE, (uint64_t)content_bytes * 8u);
    bmt_put_u64(pkt + BMT_PKT_PACKET_SIZE, (uint64_t)content_bytes * 8u);
    bmt_put_u64(pkt + BMT_PKT_SEQ_NUM, seq_num);
    bmt_put_u64(pkt + BMT_PKT_EVENTS_DISCARDED, events_discarded);
}
