/*
 * rmqlab._records: the loops of the CommitLog reader and encoder that NumPy cannot express.
 *
 *   walk          follow the TOTALSIZE chain of one CommitLog file (each record's position
 *                 depends on the previous record's size: a sequential loop)
 *   walk_entries  the same for a DLedger CommitLog file (entries around the records)
 *   crc32_spans   CRC32 (zlib's polynomial, as java.util.zip.CRC32) of many byte ranges
 *   copy_spans    copy many byte ranges from one buffer to another (gather and scatter of the
 *                 variable-length parts: bodies, topics, properties)
 *   encode_records  write whole message records from column arrays (the encoder's one pass)
 *   find_props    check property blocks (`name\x01value\x02`...) and locate chosen properties
 *   decode_records  check every message record's field lengths and decode its fixed fields,
 *                 host keys and the spans of its variable-length fields, at positions given
 *   check_record  which field check a record fails, with the values that say why (the damage's
 *                 wording)
 *   span_objects  the bytes or str object of each of many byte ranges (pandas object columns)
 *   gather_spans  many byte ranges concatenated, with their offsets (Arrow binary/string columns)
 *   records_at    which of a file's sorted CommitLog offsets a broker's getData reads a record at
 *                 (4 readable bytes, a TOTALSIZE within the file; the query's first offset also
 *                 one MessageDecoder decodes), and a view of each such record
 *   walk_checked  walk_decode's walk and field checks without its outputs (where good records end)
 *   walk_decode   the walk, decode_records, find_props, the text copies and the dictionary codes
 *                 of topic, tags and hosts in one pass, into Arrow's layout (read_columns'
 *                 default; decode_records and find_props serve reads of positions given: read_at,
 *                 the CRC checks, one message)
 *
 * A record's layout and checks are written once (layout_record, put_fixed, host_key) and a
 * property block's scan once (scan_block): decode_records, find_props and walk_decode share them.
 * Semantics mirror CommitLog.checkMessageAndReturnSize and MessageDecoder.string2messageProperties
 * (RocketMQ store/common modules); rmqlab.formats.commitlog holds the readable pure-Python model
 * of the walk and the property checks (walk_py, property_problem, parse_properties) and
 * tests/support/commitlog_reference.py a NumPy reference of the decode; the tests compare them on random
 * logs.
 * Everything is exchanged through the buffer protocol; no NumPy C API. The GIL is released in
 * the loops, so several files can be scanned from threads.
 *
 * The record layout below restates rmqlab.formats.commitlog's HEAD, PORT, STORE_TIME, TAIL,
 * TOPIC_LEN_V1/V2, PROPERTIES_LEN and BLANK layouts; the module exports every size, offset,
 * magic code and stop code under the names used here, and tests/formats/test_native_layouts.py checks
 * them against those declarations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bigendian.h"
#include "codedict.h"
#include "vec64.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAGIC_V1 ((int32_t)0xDAA320A7)
#define MAGIC_V2 ((int32_t)0xDAA320AB)
#define MAGIC_BLANK ((int32_t)0xCBD43194)

/* MessageHead: TOTALSIZE to BORNTIMESTAMP, the fixed start of every message. */
#define HEAD_TOTAL_SIZE_OFFSET 0
#define HEAD_MAGIC_OFFSET 4
#define HEAD_BODY_CRC_OFFSET 8
#define HEAD_QUEUE_ID_OFFSET 12
#define HEAD_FLAG_OFFSET 16
#define HEAD_QUEUE_OFFSET_OFFSET 20
#define HEAD_PHY_OFFSET_OFFSET 28
#define HEAD_SYS_FLAG_OFFSET 36
#define HEAD_BORN_TIMESTAMP_OFFSET 40
#define HEAD_SIZE 48

/* BORNHOST and STOREHOST: an address of 4 bytes, or 16 when the SYSFLAG bit says IPv6, then the
 * port. STORETIMESTAMP sits between the two hosts. */
#define IPV4_ADDRESS_SIZE 4
#define IPV6_ADDRESS_SIZE 16
#define PORT_SIZE 4
#define STORE_TIME_SIZE 8

/* MessageTail: after STOREHOST, up to BODYLEN; BODY follows. */
#define TAIL_RECONSUME_TIMES_OFFSET 0
#define TAIL_PREPARED_TRANSACTION_OFFSET_OFFSET 4
#define TAIL_BODY_LEN_OFFSET 12
#define TAIL_SIZE 16

/* TOPICLEN is one signed byte in v1, a short in v2; PROPERTIESLENGTH is a short. */
#define TOPIC_LEN_V1_SIZE 1
#define TOPIC_LEN_V2_SIZE 2
#define PROPERTIES_LEN_SIZE 2

/* The end-of-file blank record is TOTALSIZE and MAGICCODE only: the bytes every record starts
 * with, so also the least a walk must be able to read at a record's position. */
#define BLANK_SIZE 8

/* The smallest possible message: v1, IPv4 hosts, empty body, topic and properties (91 bytes). */
#define MIN_MESSAGE_SIZE                                                                            \
    (HEAD_SIZE + 2 * (IPV4_ADDRESS_SIZE + PORT_SIZE) + STORE_TIME_SIZE + TAIL_SIZE + TOPIC_LEN_V1_SIZE + \
     PROPERTIES_LEN_SIZE)

/* BODYCRC keeps the low 31 bits of CRC32(body). */
#define BODY_CRC_MASK 0x7FFFFFFFu

/* PROPERTIES: name NAME_VALUE_SEPARATOR value PROPERTY_SEPARATOR, repeated. */
#define NAME_VALUE_SEPARATOR 1
#define PROPERTY_SEPARATOR 2

/* Each pass over many records touches a few of their bytes, far apart: without prefetching every
 * record costs a cache miss (hundreds of ns), and the walk's next position even depends on the
 * load of the previous one. Prefetching this far ahead keeps the passes at memory bandwidth. */
#define PREFETCH_BYTES 4096
#define PREFETCH_ROWS 16

#define CACHE_LINE 64

static inline void prefetch_at(const uint8_t *buf, Py_ssize_t len, int64_t at) {
    if (at >= 0 && at < (int64_t)len)
        __builtin_prefetch(buf + at);
}

/* Prefetch the cache lines of [at, at + length), at most PREFETCH_BYTES of them, inside the buffer. */
static inline void prefetch_span(const uint8_t *buf, Py_ssize_t len, int64_t at, int64_t length) {
    if (at < 0 || at >= (int64_t)len || length <= 0)
        return;
    int64_t end = at + (length < PREFETCH_BYTES ? length : PREFETCH_BYTES);
    if (end > (int64_t)len)
        end = (int64_t)len;
    for (int64_t a = at & ~(int64_t)(CACHE_LINE - 1); a < end; a += CACHE_LINE)
        __builtin_prefetch(buf + a);
}

/* Spans [st, st + ln) of row i + PREFETCH_ROWS, while row i is processed. */
#define PREFETCH_ROW_SPAN(buf, len, st, ln, i, n)                                   \
    do {                                                                            \
        if ((i) + PREFETCH_ROWS < (n))                                              \
            prefetch_span(buf, len, (st)[(i) + PREFETCH_ROWS], (ln)[(i) + PREFETCH_ROWS]); \
    } while (0)

/* Prefetch every cache line from *done up to `upto` (capped at len); a forward stream. */
static inline void prefetch_stream(const uint8_t *buf, Py_ssize_t len, int64_t *done, int64_t upto) {
    if (upto > (int64_t)len)
        upto = (int64_t)len;
    for (; *done < upto; *done += CACHE_LINE)
        __builtin_prefetch(buf + *done);
}

/* ------------------------------------------------------------------------------ walk */

/* Why a walk stopped; exported under these names, which commitlog's STOP_* mirror. */
enum {
    STOP_END = 0,        /* reached the end exactly on a record boundary */
    STOP_BLANK = 1,      /* end-of-file blank record whose TOTALSIZE is the bytes left */
    STOP_BLANK_SIZE = 2, /* blank record whose TOTALSIZE is not the bytes left */
    STOP_SHORT = 3,      /* fewer than BLANK_SIZE bytes left: TOTALSIZE + MAGICCODE cannot be read */
    STOP_MAGIC = 4,      /* MAGICCODE is none of v1, v2, blank */
    STOP_PAST_END = 5,   /* TOTALSIZE runs past the end of the file */
    STOP_TOO_SMALL = 6,  /* TOTALSIZE below the smallest possible message (91) */
    STOP_LIMIT = 7,      /* max_records reached */
};

/* The walk's checks of the record at p, `left` (> 0) bytes before the end: -1 for a message record
 * (TOTALSIZE in *size, MAGICCODE in *magic), else the stop code. */
static inline int record_at(const uint8_t *buf, Py_ssize_t p, Py_ssize_t left, int32_t *size, int32_t *magic) {
    if (left < BLANK_SIZE)
        return STOP_SHORT;
    *size = load_i32(buf + p + HEAD_TOTAL_SIZE_OFFSET);
    *magic = load_i32(buf + p + HEAD_MAGIC_OFFSET);
    if (*magic == MAGIC_BLANK)
        return (Py_ssize_t)*size == left ? STOP_BLANK : STOP_BLANK_SIZE;
    if (*magic != MAGIC_V1 && *magic != MAGIC_V2)
        return STOP_MAGIC;
    if ((Py_ssize_t)*size > left)
        return STOP_PAST_END;
    if (*size < MIN_MESSAGE_SIZE)
        return STOP_TOO_SMALL;
    return -1;
}

/* A DLedger CommitLog (RocketMQ 4.5+, enableDLegerCommitLog) frames each record in a DLedger
 * entry (DLedgerEntryCoder): magic i32 (1), size i32 (the whole entry), index i64, term i64,
 * pos i64, channel i32, chainCrc i32, bodyCrc i32, bodySize i32, then the body, a CommitLog
 * record. A file ends in MmapFileList's blank: magic -1, then the bytes left. rmqlab.formats.dledger
 * declares the layout (ENTRY) and holds the readable model of this walk (walk_entries_py). */
#define DLEDGER_MAGIC_1 1
#define DLEDGER_BLANK_MAGIC (-1)
#define DLEDGER_BODY_OFFSET 48

/* The walk's checks of the entry head at `p`, as record_at's of a record: -1 for an entry of
 * `*size` bytes (its magic in *magic), else the stop code. */
static inline int entry_at(const uint8_t *buf, Py_ssize_t p, Py_ssize_t left, int32_t *size, int32_t *magic) {
    if (left < BLANK_SIZE)
        return STOP_SHORT;
    *magic = load_i32(buf + p);
    *size = load_i32(buf + p + 4);
    if (*magic == DLEDGER_BLANK_MAGIC)
        return (Py_ssize_t)*size == left ? STOP_BLANK : STOP_BLANK_SIZE;
    if (*magic != DLEDGER_MAGIC_1)
        return STOP_MAGIC;
    if (left < DLEDGER_BODY_OFFSET)
        return STOP_SHORT;
    if ((Py_ssize_t)*size > left)
        return STOP_PAST_END;
    if (*size <= DLEDGER_BODY_OFFSET)
        return STOP_TOO_SMALL;
    return -1;
}

/* The walk of a chain of sizes from `start` (each position depends on the one before: a
 * sequential loop): CommitLog records (record_at) or, with `entries`, DLedger entries (entry_at).
 * Returns (positions: bytes of native int64, stop_pos, stop_code). */
static PyObject *walk_chain(PyObject *args, int entries) {
    Py_buffer b;
    Py_ssize_t start, end, max_records;
    if (!PyArg_ParseTuple(args, "y*nnn", &b, &start, &end, &max_records))
        return NULL;
    if (start < 0 || end > b.len || start > end) {
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_ValueError, "walk range [%zd, %zd) outside a buffer of %zd bytes", start, end, b.len);
        return NULL;
    }
    const uint8_t *buf = b.buf;
    vec64 pos = {NULL, 0, 0};
    Py_ssize_t p = start;
    int64_t prefetched = start;
    int code = STOP_END;
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        Py_ssize_t left = end - p;
        if (left == 0) {
            code = STOP_END;
            break;
        }
        if (max_records >= 0 && (Py_ssize_t)pos.len >= max_records) {
            code = STOP_LIMIT;
            break;
        }
        int32_t size, magic;
        code = entries ? entry_at(buf, p, left, &size, &magic) : record_at(buf, p, left, &size, &magic);
        if (code >= 0)
            break;
        if (vec_push(&pos, p) < 0) {
            oom = 1;
            break;
        }
        p += size;
        prefetch_stream(buf, end, &prefetched, (int64_t)p + PREFETCH_BYTES);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (oom) {
        free(pos.data);
        return PyErr_NoMemory();
    }
    PyObject *positions = vec_take_bytes(&pos);
    if (positions == NULL)
        return NULL;
    return Py_BuildValue("(Nni)", positions, p, code);
}

/* walk(buffer, start, end, max_records) -> (positions, stop_pos, stop_code)
 * Follows TOTALSIZE from `start` and lists the position of every v1/v2 message record. */
static PyObject *walk(PyObject *self, PyObject *args) {
    return walk_chain(args, 0);
}

/* walk_entries(buffer, start, end, max_entries) -> (positions, stop_pos, stop_code)
 * Follows the DLedger entries' sizes from `start` and lists the position of every entry. */
static PyObject *walk_entries(PyObject *self, PyObject *args) {
    return walk_chain(args, 1);
}

/* ------------------------------------------------------------------------------ CRC32 */

/* CRC-32/ISO-HDLC (reflected polynomial 0xEDB88320), the CRC of zlib and java.util.zip.CRC32,
 * eight bytes a step ("slicing-by-8"). */
static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t crc32_of(const uint8_t *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
#endif
    while (len--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

/* Spans are (int64 start, int64 length) arrays; check them against a buffer of `len` bytes. */
static int check_spans(const char *what, const int64_t *st, const int64_t *ln, Py_ssize_t n, Py_ssize_t len) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] < 0 || ln[i] < 0 || st[i] > (int64_t)len || ln[i] > (int64_t)len - st[i]) {
            PyErr_Format(PyExc_ValueError, "%s span %zd [%lld, +%lld) outside a buffer of %zd bytes", what, i,
                         (long long)st[i], (long long)ln[i], len);
            return -1;
        }
    }
    return 0;
}

static int spans_arg(Py_buffer *s, Py_buffer *l, Py_ssize_t *n) {
    if (s->len % (Py_ssize_t)sizeof(int64_t) || l->len != s->len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths must be int64 arrays of one length");
        return -1;
    }
    *n = s->len / (Py_ssize_t)sizeof(int64_t);
    return 0;
}

/* crc32_spans(buffer, starts int64[n], lengths int64[n], out uint32[n]) */
static PyObject *crc32_spans(PyObject *self, PyObject *args) {
    Py_buffer b, s, l, o;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &b, &s, &l, &o))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n;
    if (spans_arg(&s, &l, &n) < 0)
        goto done;
    if (o.len != (Py_ssize_t)sizeof(uint32_t) * n) {
        PyErr_SetString(PyExc_ValueError, "out must be a uint32 array of one entry a span");
        goto done;
    }
    if (check_spans("crc", s.buf, l.buf, n, b.len) < 0)
        goto done;
    {
        const uint8_t *buf = b.buf;
        const int64_t *st = s.buf, *ln = l.buf;
        uint32_t *out = o.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            PREFETCH_ROW_SPAN(buf, b.len, st, ln, i, n);
            out[i] = crc32_of(buf + st[i], (size_t)ln[i]);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&s);
    PyBuffer_Release(&l);
    PyBuffer_Release(&o);
    return result;
}

/* copy_spans(dst, dst_starts int64[n], src, src_starts int64[n], lengths int64[n]) */
static PyObject *copy_spans(PyObject *self, PyObject *args) {
    Py_buffer d, ds, s, ss, l;
    if (!PyArg_ParseTuple(args, "w*y*y*y*y*", &d, &ds, &s, &ss, &l))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, n2;
    if (spans_arg(&ds, &l, &n) < 0 || spans_arg(&ss, &l, &n2) < 0)
        goto done;
    if (check_spans("destination", ds.buf, l.buf, n, d.len) < 0 ||
        check_spans("source", ss.buf, l.buf, n, s.len) < 0)
        goto done;
    {
        uint8_t *dst = d.buf;
        const uint8_t *src = s.buf;
        const int64_t *dst_st = ds.buf, *src_st = ss.buf, *ln = l.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            PREFETCH_ROW_SPAN(src, s.len, src_st, ln, i, n);
            memcpy(dst + dst_st[i], src + src_st[i], (size_t)ln[i]);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&d);
    PyBuffer_Release(&ds);
    PyBuffer_Release(&s);
    PyBuffer_Release(&ss);
    PyBuffer_Release(&l);
    return result;
}

/* ------------------------------------------------------------------------------ encode */

/* A host table row holds the widest address; a narrower one is left-aligned in it. */
#define HOST_ROW_SIZE IPV6_ADDRESS_SIZE

/* encode_records' arguments, in order. */
enum {
    E_DST, E_DST_OFF, E_TOTAL, E_VERSION, E_QUEUE_ID, E_FLAG, E_QUEUE_OFFSET, E_PHY_OFFSET, E_SYS_FLAG,
    E_BORN_TS, E_BORN_CODE, E_STORE_TS, E_STORE_CODE, E_RECONSUME, E_PTO,
    E_BORN_IP, E_BORN_W, E_BORN_PORT, E_STORE_IP, E_STORE_W, E_STORE_PORT,
    E_BODY, E_BODY_OFF, E_TOPIC, E_TOPIC_OFF, E_PROP, E_PROP_OFF, E_NARGS
};

/* Why a row could not be encoded (checked before anything of the row is written). */
enum {
    ENC_OK = 0,
    ENC_HOST_CODE = 1,  /* host code outside the host table */
    ENC_HOST_WIDTH = 2, /* host address width neither 4 nor 16 */
    ENC_SPAN = 3,       /* body / topic / properties offsets outside their data */
    ENC_VERSION = 4,    /* version neither 1 nor 2 */
    ENC_TOTAL = 5,      /* TOTALSIZE differs from the laid-out length */
    ENC_DST = 6,        /* the record runs outside the destination */
};

static int var_span(const int64_t *off, Py_ssize_t i, Py_ssize_t len, int64_t *st, int64_t *ln) {
    int64_t a = off[i], b = off[i + 1];
    if (a < 0 || b < a || b > (int64_t)len)
        return -1;
    *st = a;
    *ln = b - a;
    return 0;
}

/* encode_records(dst, dst_off, total, version, queue_id, flag, queue_offset, phy_offset, sys_flag,
 *                born_timestamp, born_code, store_timestamp, store_code, reconsume_times,
 *                prepared_transaction_offset, born_ip u8[kb*16], born_width, born_port,
 *                store_ip u8[ks*16], store_width, store_port, body, body_offsets[n+1],
 *                topic, topic_offsets[n+1], properties, properties_offsets[n+1]) -> None
 *
 * Writes n whole message records (MessageExtEncoder's layout, big-endian) at dst + dst_off[i]:
 * every per-row argument is int64[n]; hosts are codes into a table of addresses (HOST_ROW_SIZE
 * bytes a row, left-aligned, `width` of them used) and ports. BODYCRC is CRC32(body) & 0x7FFFFFFF,
 * computed here. Each row is checked (spans, codes, TOTALSIZE against its layout, room in
 * dst) before it is written; the first bad row raises ValueError (rows before it are written). */
static PyObject *encode_records(PyObject *self, PyObject *args) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != E_NARGS) {
        PyErr_Format(PyExc_TypeError, "encode_records takes %d arguments", (int)E_NARGS);
        return NULL;
    }
    Py_buffer v[E_NARGS];
    int got = 0;
    PyObject *result = NULL;
    for (; got < E_NARGS; got++) {
        int flags = got == E_DST ? PyBUF_WRITABLE : PyBUF_SIMPLE;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, got), &v[got], flags) < 0)
            goto done;
    }
    const Py_ssize_t i64 = (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n = v[E_DST_OFF].len / i64;
    if (v[E_DST_OFF].len % i64) {
        PyErr_SetString(PyExc_ValueError, "dst_off must be an int64 array");
        goto done;
    }
    for (int j = E_DST_OFF; j <= E_PTO; j++) {
        if (v[j].len != i64 * n) {
            PyErr_Format(PyExc_ValueError, "argument %d must be int64[%zd]", j, n);
            goto done;
        }
    }
    for (int j = E_BODY_OFF; j <= E_PROP_OFF; j += 2) {
        if (v[j].len != i64 * (n + 1)) {
            PyErr_Format(PyExc_ValueError, "argument %d must be int64[%zd]", j, n + 1);
            goto done;
        }
    }
    Py_ssize_t kb = v[E_BORN_W].len / i64, ks = v[E_STORE_W].len / i64;
    if (v[E_BORN_W].len % i64 || v[E_BORN_PORT].len != i64 * kb || v[E_BORN_IP].len != HOST_ROW_SIZE * kb ||
        v[E_STORE_W].len % i64 || v[E_STORE_PORT].len != i64 * ks || v[E_STORE_IP].len != HOST_ROW_SIZE * ks) {
        PyErr_SetString(PyExc_ValueError, "host tables must be ip uint8[k, 16], width int64[k], port int64[k]");
        goto done;
    }
    {
        uint8_t *dst = v[E_DST].buf;
        const Py_ssize_t dst_len = v[E_DST].len;
#define COL(j) ((const int64_t *)v[j].buf)
        const int64_t *dst_off = COL(E_DST_OFF), *total = COL(E_TOTAL), *version = COL(E_VERSION),
                      *queue_id = COL(E_QUEUE_ID), *flag = COL(E_FLAG), *qoff = COL(E_QUEUE_OFFSET),
                      *phy = COL(E_PHY_OFFSET), *sys_flag = COL(E_SYS_FLAG), *born_ts = COL(E_BORN_TS),
                      *born_code = COL(E_BORN_CODE), *store_ts = COL(E_STORE_TS),
                      *store_code = COL(E_STORE_CODE), *recon = COL(E_RECONSUME), *pto = COL(E_PTO),
                      *born_w = COL(E_BORN_W), *born_port = COL(E_BORN_PORT), *store_w = COL(E_STORE_W),
                      *store_port = COL(E_STORE_PORT), *body_off = COL(E_BODY_OFF),
                      *topic_off = COL(E_TOPIC_OFF), *prop_off = COL(E_PROP_OFF);
#undef COL
        const uint8_t *born_ip = v[E_BORN_IP].buf, *store_ip = v[E_STORE_IP].buf, *body = v[E_BODY].buf,
                      *topic = v[E_TOPIC].buf, *prop = v[E_PROP].buf;
        const Py_ssize_t body_len_all = v[E_BODY].len, topic_len_all = v[E_TOPIC].len,
                         prop_len_all = v[E_PROP].len;
        Py_ssize_t bad_row = -1;
        int problem = ENC_OK;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t bc = born_code[i], sc = store_code[i];
            if (bc < 0 || bc >= kb || sc < 0 || sc >= ks) {
                problem = ENC_HOST_CODE;
            } else {
                int64_t bw = born_w[bc], sw = store_w[sc];
                int64_t bs, bl, ts, tl, ps, pl;
                int64_t ver = version[i];
                if ((bw != IPV4_ADDRESS_SIZE && bw != IPV6_ADDRESS_SIZE) ||
                    (sw != IPV4_ADDRESS_SIZE && sw != IPV6_ADDRESS_SIZE))
                    problem = ENC_HOST_WIDTH;
                else if (var_span(body_off, i, body_len_all, &bs, &bl) < 0 ||
                         var_span(topic_off, i, topic_len_all, &ts, &tl) < 0 ||
                         var_span(prop_off, i, prop_len_all, &ps, &pl) < 0)
                    problem = ENC_SPAN;
                else if (ver != 1 && ver != 2)
                    problem = ENC_VERSION;
                else if (total[i] != MIN_MESSAGE_SIZE + (ver - 1) * (TOPIC_LEN_V2_SIZE - TOPIC_LEN_V1_SIZE) +
                                         (bw - IPV4_ADDRESS_SIZE) + (sw - IPV4_ADDRESS_SIZE) + bl + tl + pl)
                    problem = ENC_TOTAL;
                else if (dst_off[i] < 0 || dst_off[i] > (int64_t)dst_len - total[i])
                    problem = ENC_DST;
                else {
                    uint8_t *p = dst + dst_off[i];
                    store_i32(p + HEAD_TOTAL_SIZE_OFFSET, total[i]);
                    store_i32(p + HEAD_MAGIC_OFFSET, ver == 1 ? MAGIC_V1 : MAGIC_V2);
                    store_i32(p + HEAD_BODY_CRC_OFFSET, (int64_t)(crc32_of(body + bs, (size_t)bl) & BODY_CRC_MASK));
                    store_i32(p + HEAD_QUEUE_ID_OFFSET, queue_id[i]);
                    store_i32(p + HEAD_FLAG_OFFSET, flag[i]);
                    store_i64(p + HEAD_QUEUE_OFFSET_OFFSET, qoff[i]);
                    store_i64(p + HEAD_PHY_OFFSET_OFFSET, phy[i]);
                    store_i32(p + HEAD_SYS_FLAG_OFFSET, sys_flag[i]);
                    store_i64(p + HEAD_BORN_TIMESTAMP_OFFSET, born_ts[i]);
                    p += HEAD_SIZE;
                    memcpy(p, born_ip + HOST_ROW_SIZE * bc, (size_t)bw);
                    p += bw;
                    store_i32(p, born_port[bc]);
                    p += PORT_SIZE;
                    store_i64(p, store_ts[i]);
                    p += STORE_TIME_SIZE;
                    memcpy(p, store_ip + HOST_ROW_SIZE * sc, (size_t)sw);
                    p += sw;
                    store_i32(p, store_port[sc]);
                    p += PORT_SIZE;
                    store_i32(p + TAIL_RECONSUME_TIMES_OFFSET, recon[i]);
                    store_i64(p + TAIL_PREPARED_TRANSACTION_OFFSET_OFFSET, pto[i]);
                    store_i32(p + TAIL_BODY_LEN_OFFSET, bl);
                    p += TAIL_SIZE;
                    memcpy(p, body + bs, (size_t)bl);
                    p += bl;
                    /* TOPICLEN and PROPERTIESLENGTH big-endian, byte by byte: 1 or 2 bytes wide */
                    if (ver == 1) {
                        p[0] = (uint8_t)tl;
                        p += TOPIC_LEN_V1_SIZE;
                    } else {
                        p[0] = (uint8_t)(tl >> 8);
                        p[1] = (uint8_t)tl;
                        p += TOPIC_LEN_V2_SIZE;
                    }
                    memcpy(p, topic + ts, (size_t)tl);
                    p += tl;
                    p[0] = (uint8_t)(pl >> 8);
                    p[1] = (uint8_t)pl;
                    memcpy(p + PROPERTIES_LEN_SIZE, prop + ps, (size_t)pl);
                }
            }
            if (problem != ENC_OK) {
                bad_row = i;
                break;
            }
        }
        Py_END_ALLOW_THREADS
        if (bad_row >= 0) {
            PyErr_Format(PyExc_ValueError, "encode_records: row %zd cannot be encoded (problem %d)", bad_row,
                         problem);
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&v[j]);
    return result;
}

/* ------------------------------------------------------------------------- properties */

/* Why a property block does not parse; exported under these names, which the keys of
 * commitlog.PROPERTY_PROBLEMS mirror. */
enum {
    PROP_OK = 0,
    PROP_EMPTY_PAIR = 1,    /* two separators in a row (or a block starting with \x02) */
    PROP_NO_SEPARATOR = 2,  /* a pair without \x01 */
    PROP_EMPTY_NAME = 3,    /* a pair starting with \x01 */
};

#define MAX_NAMES 16

/* The property names of a tuple of non-empty bytes (kept alive by the tuple). -1 with TypeError. */
static int name_args(PyObject *names, const char **name_ptr, int64_t *name_len) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names); j++) {
        PyObject *nm = PyTuple_GET_ITEM(names, j);
        if (!PyBytes_Check(nm) || PyBytes_GET_SIZE(nm) == 0) {
            PyErr_SetString(PyExc_TypeError, "names must be non-empty bytes");
            return -1;
        }
        name_ptr[j] = PyBytes_AS_STRING(nm);
        name_len[j] = PyBytes_GET_SIZE(nm);
    }
    return 0;
}

/* Most bytes a property block can have (PROPERTIESLENGTH is a signed short), in 64-byte groups. */
#define BLOCK_GROUPS ((32767 + 63) / 64)

/* Bit i of m[i / 64] set where block byte i is `byte`, for the block's `len` bytes at `at`. */
static inline void byte_masks(const uint8_t *buf, int64_t buf_len, int64_t at, int64_t len, uint64_t *m1,
                              uint64_t *m2) {
    int64_t groups = (len + 63) / 64;
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *p = buf + at + 64 * g;
        uint8_t tmp[64];
        if (at + 64 * g + 64 > buf_len) { /* the buffer ends inside this group: copy what is there */
            memset(tmp, 0, sizeof tmp);
            memcpy(tmp, p, (size_t)(buf_len - at - 64 * g));
            p = tmp;
        }
        uint64_t a = 0, b = 0;
#ifdef __SSE2__
        const __m128i one = _mm_set1_epi8(NAME_VALUE_SEPARATOR), two = _mm_set1_epi8(PROPERTY_SEPARATOR);
        for (int k = 0; k < 4; k++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
            a |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, one)) << (16 * k);
            b |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, two)) << (16 * k);
        }
#else
        for (int k = 0; k < 64; k++) {
            a |= (uint64_t)(p[k] == NAME_VALUE_SEPARATOR) << k;
            b |= (uint64_t)(p[k] == PROPERTY_SEPARATOR) << k;
        }
#endif
        int64_t left = len - 64 * g;
        if (left < 64) {
            a &= (1ULL << left) - 1;
            b &= (1ULL << left) - 1;
        }
        m1[g] = a;
        m2[g] = b;
    }
}

/* The first set bit at or after `from` and before `limit` (<= the masks' bytes), else `limit`. */
static inline int64_t next_bit(const uint64_t *m, int64_t from, int64_t limit) {
    if (from >= limit)
        return limit;
    int64_t g = from >> 6;
    uint64_t w = m[g] & (~0ULL << (from & 63));
    while (w == 0) {
        g++;
        if (g * 64 >= limit)
            return limit;
        w = m[g];
    }
    int64_t at = g * 64 + __builtin_ctzll(w);
    return at < limit ? at : limit;
}

/* The scan of one property block [st, st + len) of buf: splits it on \x02 and each pair on its
 * first \x01, as MessageDecoder.string2messageProperties does (4.9.1+), and for each of the k names
 * stores where its value starts and how long it is in vs[j] / vl[j] (-1 when absent; a later pair
 * of the same name replaces an earlier one, a pair with an empty value is skipped). The last pair
 * ends at the block's end with or without its \x02. A malformed pair (empty, without \x01, or with
 * an empty name) is skipped, as Java skips it: brokers write such blocks (5.2.0 with multi-dispatch
 * leaves the tail of an earlier block after the new one) and read them. Returns PROP_OK, or the
 * problem of the first pair skipped with *bad_at its offset in the block. m1 and m2 hold
 * (len + 63) / 64 words each. */
static inline int scan_block(const uint8_t *buf, int64_t buf_len, int64_t st, int64_t len, Py_ssize_t k,
                             const char *const *name_ptr, const int64_t *name_len, int64_t *vs, int64_t *vl,
                             uint64_t *m1, uint64_t *m2, int64_t *bad_at) {
    for (Py_ssize_t j = 0; j < k; j++)
        vs[j] = vl[j] = -1;
    byte_masks(buf, buf_len, st, len, m1, m2);
    const uint8_t *blk = buf + st;
    int64_t at = 0;
    int first = PROP_OK;
    while (at < len) {
        int64_t e = next_bit(m2, at, len);
        int64_t kv = e == at ? e : next_bit(m1, at, e);
        int bad = e == at ? PROP_EMPTY_PAIR : kv == e ? PROP_NO_SEPARATOR : kv == at ? PROP_EMPTY_NAME : PROP_OK;
        if (bad != PROP_OK) {
            if (first == PROP_OK) {
                first = bad;
                *bad_at = at;
            }
            at = e + 1;
            continue;
        }
        if (e > kv + 1) { /* Java skips a pair whose value is empty */
            for (Py_ssize_t j = 0; j < k; j++) {
                if (name_len[j] == kv - at && blk[at] == (uint8_t)name_ptr[j][0] &&
                    memcmp(blk + at, name_ptr[j], (size_t)name_len[j]) == 0) {
                    vs[j] = st + kv + 1;
                    vl[j] = e - kv - 1;
                }
            }
        }
        at = e + 1;
    }
    return first;
}

/* find_props(buffer, starts int64[n], lengths int64[n], names tuple[bytes], value_starts
 *            int64[n*k] (out), value_lengths int64[n*k] (out)) -> (row, offset, problem) or None
 *
 * scan_block of every block for the k names (at most MAX_NAMES): where each wanted value starts
 * and how long it is (-1 when absent), as Java's HashMap puts keep them. Brokers 4.9.1 to 5.1.x
 * drop the block's last \x02 (messageProperties2String) and their parser reads the last pair up
 * to the end of the string, as scan_block does. Malformed pairs are skipped, as Java skips them;
 * the first row holding one is returned with the offset of that pair inside its block and a
 * problem code (a note, not damage: every row is filled). With problems_out (int8[n]), the
 * problem code of every row's first malformed pair (PROP_OK, 0, for none) is written there too:
 * one pass names every malformed block, where repeated calls would scan again from each. */
static PyObject *find_props(PyObject *self, PyObject *args) {
    Py_buffer b, s, l, vs, vl, pr = {0};
    PyObject *names;
    if (!PyArg_ParseTuple(args, "y*y*y*O!w*w*|w*", &b, &s, &l, &PyTuple_Type, &names, &vs, &vl, &pr))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, k = PyTuple_GET_SIZE(names);
    const char *name_ptr[MAX_NAMES];
    int64_t name_len[MAX_NAMES];
    if (spans_arg(&s, &l, &n) < 0)
        goto done;
    if (k > MAX_NAMES) {
        PyErr_Format(PyExc_ValueError, "at most %d names", MAX_NAMES);
        goto done;
    }
    if (name_args(names, name_ptr, name_len) < 0)
        goto done;
    if (vs.len != (Py_ssize_t)sizeof(int64_t) * n * k || vl.len != (Py_ssize_t)sizeof(int64_t) * n * k) {
        PyErr_SetString(PyExc_ValueError, "value_starts and value_lengths must be int64[n * len(names)]");
        goto done;
    }
    if (pr.obj != NULL && pr.len != (Py_ssize_t)n) {
        PyErr_SetString(PyExc_ValueError, "problems_out must be int8[n]");
        goto done;
    }
    if (check_spans("property block", s.buf, l.buf, n, b.len) < 0)
        goto done;
    {
        const uint8_t *buf = b.buf;
        const int64_t *st = s.buf, *ln = l.buf;
        int64_t *out_s = vs.buf, *out_l = vl.buf;
        int8_t *out_p = pr.obj != NULL ? pr.buf : NULL;
        Py_ssize_t bad_row = -1;
        int64_t bad_at = 0, longest = 0;
        int problem = PROP_OK;
        for (Py_ssize_t i = 0; i < n; i++)
            longest = ln[i] > longest ? ln[i] : longest;
        /* the masks of the longest block: a PROPERTIES block is at most 32767 bytes, a span given
         * here may be any length */
        uint64_t *masks = PyMem_Malloc(2 * sizeof(uint64_t) * (size_t)((longest + 63) / 64 + 1));
        if (masks == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        uint64_t *m1 = masks, *m2 = masks + (longest + 63) / 64 + 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            PREFETCH_ROW_SPAN(buf, b.len, st, ln, i, n);
            int64_t at = 0;
            int skipped = scan_block(buf, b.len, st[i], ln[i], k, name_ptr, name_len, out_s + i * k, out_l + i * k,
                                     m1, m2, &at);
            if (out_p != NULL)
                out_p[i] = (int8_t)skipped;
            if (skipped != PROP_OK && bad_row < 0) {
                bad_row = i;
                bad_at = at;
                problem = skipped;
            }
        }
        Py_END_ALLOW_THREADS
        PyMem_Free(masks);
        if (bad_row >= 0)
            result = Py_BuildValue("(nLi)", bad_row, (long long)bad_at, problem);
        else
            result = Py_NewRef(Py_None);
    }
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&s);
    PyBuffer_Release(&l);
    PyBuffer_Release(&vs);
    PyBuffer_Release(&vl);
    if (pr.obj != NULL)
        PyBuffer_Release(&pr);
    return result;
}

/* ------------------------------------------------------------------------- decode */

/* decode_records' outputs, in this order, each an array of n entries of the width given. */
enum {
    D_TOTAL_SIZE,        /* int32 */
    D_VERSION,           /* int8: 1 for MAGIC_V1, else 2 */
    D_BODY_CRC,          /* int32 */
    D_QUEUE_ID,          /* int32 */
    D_FLAG,              /* int32 */
    D_QUEUE_OFFSET,      /* int64 */
    D_PHY_OFFSET,        /* int64 */
    D_SYS_FLAG,          /* int32 */
    D_BORN_TIMESTAMP,    /* int64 */
    D_STORE_TIMESTAMP,   /* int64 */
    D_RECONSUME_TIMES,   /* int32 */
    D_PREPARED_TRANSACTION_OFFSET, /* int64 */
    D_BORN_HOST_KEY,     /* uint64: IPv4 address << 32 | port as uint32; 0 for an IPv6 host */
    D_STORE_HOST_KEY,    /* uint64, as D_BORN_HOST_KEY */
    D_BORN_HOST_AT,      /* int64: file position of the born host's address */
    D_STORE_HOST_AT,     /* int64: file position of the store host's address */
    D_BODY_START, D_BODY_LEN, D_TOPIC_START, D_TOPIC_LEN, D_PROPERTIES_START, D_PROPERTIES_LEN, /* int64 */
    D_NOUT
};

static const int decode_width[D_NOUT] = {4, 1, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};

/* SYSFLAG bits that widen BORNHOST / STOREHOST to IPv6 (MessageSysFlag). */
#define BORNHOST_V6_FLAG (1 << 4)
#define STOREHOSTADDRESS_V6_FLAG (1 << 5)

static inline uint64_t host_key(const uint8_t *p, int width) {
    if (width != IPV4_ADDRESS_SIZE)
        return 0;
    return ((uint64_t)(uint32_t)load_i32(p) << 32) | (uint32_t)load_i32(p + IPV4_ADDRESS_SIZE);
}

/* Where the fields of a message record lie (offsets from its start) and its lengths. */
typedef struct {
    int version;
    int32_t sys_flag;
    int64_t total, born_width, store_width, o_store_time, o_store_host, o_tail, o_body, o_topic, o_props,
        body_len, topic_len, props_len;
} record_layout;

/* The field checks of a message record, in the order they run; layout_record returns the first
 * that fails and check_record hands it to Python, which words the damage (commitlog.columns'
 * _LAYOUT_CHECKS, in this order). */
enum {
    LAYOUT_OK = 0,
    LAYOUT_FIXED = 1,      /* TOTALSIZE cannot hold the fixed fields (SYSFLAG's host widths, version) */
    LAYOUT_BODY_LEN = 2,   /* BODYLEN negative or running past TOTALSIZE */
    LAYOUT_TOPIC_LEN = 3,  /* TOPICLEN negative or running past TOTALSIZE */
    LAYOUT_PROPS_LEN = 4,  /* PROPERTIESLENGTH negative or running past TOTALSIZE */
    LAYOUT_END = 5,        /* the fields end before TOTALSIZE */
};

/* The layout of the record at r (its head checked by the walk): LAYOUT_OK, or the first field
 * check that fails, the lengths read up to it set. */
static inline int layout_record(const uint8_t *r, record_layout *l) {
    l->total = load_i32(r + HEAD_TOTAL_SIZE_OFFSET);
    l->version = load_i32(r + HEAD_MAGIC_OFFSET) == MAGIC_V1 ? 1 : 2;
    l->sys_flag = load_i32(r + HEAD_SYS_FLAG_OFFSET);
    l->born_width = (l->sys_flag & BORNHOST_V6_FLAG) ? IPV6_ADDRESS_SIZE : IPV4_ADDRESS_SIZE;
    l->store_width = (l->sys_flag & STOREHOSTADDRESS_V6_FLAG) ? IPV6_ADDRESS_SIZE : IPV4_ADDRESS_SIZE;
    int64_t tlw = l->version == 1 ? TOPIC_LEN_V1_SIZE : TOPIC_LEN_V2_SIZE;
    l->o_store_time = HEAD_SIZE + l->born_width + PORT_SIZE;
    l->o_store_host = l->o_store_time + STORE_TIME_SIZE;
    l->o_tail = l->o_store_host + l->store_width + PORT_SIZE;
    l->o_body = l->o_tail + TAIL_SIZE;
    if (l->o_body + tlw + PROPERTIES_LEN_SIZE > l->total)
        return LAYOUT_FIXED;
    l->body_len = load_i32(r + l->o_tail + TAIL_BODY_LEN_OFFSET);
    if (l->body_len < 0 || l->o_body + l->body_len + tlw + PROPERTIES_LEN_SIZE > l->total)
        return LAYOUT_BODY_LEN;
    int64_t o_tl = l->o_body + l->body_len;
    l->topic_len = l->version == 1 ? (int64_t)(int8_t)r[o_tl]
                                   : (int64_t)(int16_t)(((uint16_t)r[o_tl] << 8) | r[o_tl + 1]);
    l->o_topic = o_tl + tlw;
    if (l->topic_len < 0 || l->o_topic + l->topic_len + PROPERTIES_LEN_SIZE > l->total)
        return LAYOUT_TOPIC_LEN;
    int64_t o_pl = l->o_topic + l->topic_len;
    l->props_len = (int16_t)(((uint16_t)r[o_pl] << 8) | r[o_pl + 1]);
    l->o_props = o_pl + PROPERTIES_LEN_SIZE;
    if (l->props_len < 0 || l->o_props + l->props_len > l->total)
        return LAYOUT_PROPS_LEN;
    if (l->o_props + l->props_len != l->total)
        return LAYOUT_END;
    return LAYOUT_OK;
}

/* The fixed fields both passes write first, in this order (D_* and W_* start alike). */
enum { F_TOTAL_SIZE, F_VERSION, F_BODY_CRC, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_PHY_OFFSET, F_SYS_FLAG,
       F_BORN_TIMESTAMP, F_STORE_TIMESTAMP, F_RECONSUME_TIMES, F_PREPARED_TRANSACTION_OFFSET, F_N };

static inline void put_fixed(Py_buffer *o, Py_ssize_t row, const uint8_t *r, const record_layout *l) {
    ((int32_t *)o[F_TOTAL_SIZE].buf)[row] = (int32_t)l->total;
    ((int8_t *)o[F_VERSION].buf)[row] = (int8_t)l->version;
    ((int32_t *)o[F_BODY_CRC].buf)[row] = load_i32(r + HEAD_BODY_CRC_OFFSET);
    ((int32_t *)o[F_QUEUE_ID].buf)[row] = load_i32(r + HEAD_QUEUE_ID_OFFSET);
    ((int32_t *)o[F_FLAG].buf)[row] = load_i32(r + HEAD_FLAG_OFFSET);
    ((int64_t *)o[F_QUEUE_OFFSET].buf)[row] = load_i64(r + HEAD_QUEUE_OFFSET_OFFSET);
    ((int64_t *)o[F_PHY_OFFSET].buf)[row] = load_i64(r + HEAD_PHY_OFFSET_OFFSET);
    ((int32_t *)o[F_SYS_FLAG].buf)[row] = l->sys_flag;
    ((int64_t *)o[F_BORN_TIMESTAMP].buf)[row] = load_i64(r + HEAD_BORN_TIMESTAMP_OFFSET);
    ((int64_t *)o[F_STORE_TIMESTAMP].buf)[row] = load_i64(r + l->o_store_time);
    ((int32_t *)o[F_RECONSUME_TIMES].buf)[row] = load_i32(r + l->o_tail + TAIL_RECONSUME_TIMES_OFFSET);
    ((int64_t *)o[F_PREPARED_TRANSACTION_OFFSET].buf)[row] =
        load_i64(r + l->o_tail + TAIL_PREPARED_TRANSACTION_OFFSET_OFFSET);
}

/* 0 when entry i of a list of positions, `at`, is where the walk could have found a message record
 * in a buffer of `len` bytes (its head inside, TOTALSIZE at least MIN_MESSAGE_SIZE and inside);
 * else -1 with ValueError. */
static int walked_record(const uint8_t *buf, Py_ssize_t len, Py_ssize_t i, int64_t at) {
    if (at < 0 || at > (int64_t)len - HEAD_SIZE) {
        PyErr_Format(PyExc_ValueError, "position %zd (%lld) outside a buffer of %zd bytes", i, (long long)at, len);
        return -1;
    }
    int32_t total = load_i32(buf + at + HEAD_TOTAL_SIZE_OFFSET);
    if (total < MIN_MESSAGE_SIZE || (int64_t)total > (int64_t)len - at) {
        PyErr_Format(PyExc_ValueError, "record %zd at %lld: TOTALSIZE %d is not a walked record", i, (long long)at,
                     total);
        return -1;
    }
    return 0;
}

/* check_record(buffer, position) -> (check, total, version, sys_flag, value)
 *
 * layout_record's field checks of the one message record at `position` (as decode_records and
 * walk_decode check it): check LAYOUT_OK (0) when they pass, else the first that fails, with
 * what Python words it from: TOTALSIZE, the version (1 for MAGIC_V1, else 2), SYSFLAG and the
 * value found wrong (0 for LAYOUT_FIXED, BODYLEN, TOPICLEN, PROPERTIESLENGTH, or for LAYOUT_END
 * the bytes the fields take). */
static PyObject *check_record(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t at;
    if (!PyArg_ParseTuple(args, "y*n", &b, &at))
        return NULL;
    PyObject *result = NULL;
    if (walked_record(b.buf, b.len, 0, at) == 0) {
        record_layout l;
        int check = layout_record((const uint8_t *)b.buf + at, &l);
        int64_t value = check == LAYOUT_BODY_LEN    ? l.body_len
                        : check == LAYOUT_TOPIC_LEN ? l.topic_len
                        : check == LAYOUT_PROPS_LEN ? l.props_len
                        : check == LAYOUT_END       ? l.o_props + l.props_len
                                                    : 0;
        result = Py_BuildValue("(iLiiL)", check, (long long)l.total, l.version, (int)l.sys_flag, (long long)value);
    }
    PyBuffer_Release(&b);
    return result;
}

/* decode_records(buffer, positions int64[n], outputs tuple of D_NOUT arrays) -> first bad row or -1
 *
 * One pass over message records whose head the walk checked (walked_record): every fixed field,
 * the host keys and the spans of BODY, TOPIC and PROPERTIES. Each record is checked by
 * layout_record; the first row failing a check is returned and nothing after it is filled, so
 * Python names the field and the reason from that one row (check_record). Every read is inside
 * [position, position + TOTALSIZE), which lies inside the buffer. */
static PyObject *decode_records(PyObject *self, PyObject *args) {
    Py_buffer b, p;
    PyObject *outs;
    if (!PyArg_ParseTuple(args, "y*y*O!", &b, &p, &PyTuple_Type, &outs))
        return NULL;
    Py_buffer o[D_NOUT];
    int got = 0;
    PyObject *result = NULL;
    if (p.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "positions must be an int64 array");
        goto done;
    }
    Py_ssize_t n = p.len / (Py_ssize_t)sizeof(int64_t);
    if (PyTuple_GET_SIZE(outs) != D_NOUT) {
        PyErr_Format(PyExc_ValueError, "decode_records needs %d output arrays", D_NOUT);
        goto done;
    }
    for (; got < D_NOUT; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(outs, got), &o[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        if (o[got].len != n * decode_width[got]) {
            PyErr_Format(PyExc_ValueError, "output %d must hold %zd entries of %d bytes", got, n,
                         decode_width[got]);
            got++;
            goto done;
        }
    }
    const uint8_t *buf = b.buf;
    const int64_t *pos = p.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (walked_record(buf, b.len, i, pos[i]) < 0)
            goto done;
    {
        Py_ssize_t bad_row = -1;
        int64_t *born_at = o[D_BORN_HOST_AT].buf,
                *store_at = o[D_STORE_HOST_AT].buf, *body_start = o[D_BODY_START].buf,
                *body_len = o[D_BODY_LEN].buf, *topic_start = o[D_TOPIC_START].buf,
                *topic_len = o[D_TOPIC_LEN].buf, *props_start = o[D_PROPERTIES_START].buf,
                *props_len = o[D_PROPERTIES_LEN].buf;
        uint64_t *born_key = o[D_BORN_HOST_KEY].buf, *store_key = o[D_STORE_HOST_KEY].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + PREFETCH_ROWS < n) {   /* the whole record when positions ascend, else its start */
                int64_t ahead = pos[i + PREFETCH_ROWS];
                int64_t next = i + PREFETCH_ROWS + 1 < n ? pos[i + PREFETCH_ROWS + 1] : ahead + 512;
                prefetch_span(buf, b.len, ahead, next > ahead ? next - ahead : 512);
            }
            const uint8_t *r = buf + pos[i];
            record_layout l;
            if (layout_record(r, &l) != LAYOUT_OK) {
                bad_row = i;
                break;
            }
            put_fixed(o, i, r, &l);
            born_key[i] = host_key(r + HEAD_SIZE, (int)l.born_width);
            store_key[i] = host_key(r + l.o_store_host, (int)l.store_width);
            born_at[i] = pos[i] + HEAD_SIZE;
            store_at[i] = pos[i] + l.o_store_host;
            body_start[i] = pos[i] + l.o_body;
            body_len[i] = l.body_len;
            topic_start[i] = pos[i] + l.o_topic;
            topic_len[i] = l.topic_len;
            props_start[i] = pos[i] + l.o_props;
            props_len[i] = l.props_len;
        }
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(bad_row);
    }
done:
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&o[j]);
    PyBuffer_Release(&b);
    PyBuffer_Release(&p);
    return result;
}

/* span_objects(buffer, starts int64[n], lengths int64[n], as_bytes, out=None) -> list of n objects
 *
 * The Python object of each span: bytes, or str decoded from UTF-8 with surrogateescape (as
 * commitlog.records.decode_text decodes, so invalid bytes survive a round trip); None where
 * the start is negative. Made straight from the buffer, without an intermediate copy. With `out`
 * (a NumPy object array of n entries) they are stored there instead and None is returned. */
static PyObject *span_objects(PyObject *self, PyObject *args) {
    Py_buffer b, s, l, o = {0};
    int as_bytes;
    PyObject *out = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*y*p|O", &b, &s, &l, &as_bytes, &out))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n;
    if (spans_arg(&s, &l, &n) < 0)
        goto done;
    const int64_t *st = s.buf, *ln = l.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] >= 0 && (ln[i] < 0 || st[i] > (int64_t)b.len || ln[i] > (int64_t)b.len - st[i])) {
            PyErr_Format(PyExc_ValueError, "span %zd [%lld, +%lld) outside a buffer of %zd bytes", i,
                         (long long)st[i], (long long)ln[i], b.len);
            goto done;
        }
    }
    PyObject **items;
    if (out != Py_None) { /* a NumPy object array of n entries: its references are replaced in place */
        if (PyObject_GetBuffer(out, &o, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        if (o.format == NULL || strcmp(o.format, "O") != 0 || o.itemsize != (Py_ssize_t)sizeof(PyObject *) ||
            o.len != n * o.itemsize) {
            PyErr_SetString(PyExc_ValueError, "out must be a NumPy object array of one entry a span");
            goto done;
        }
        items = (PyObject **)o.buf;
    } else {
        result = PyList_New(n);
        if (result == NULL)
            goto done;
        items = ((PyListObject *)result)->ob_item;
    }
    const char *buf = b.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item;
        PREFETCH_ROW_SPAN((const uint8_t *)buf, b.len, st, ln, i, n);
        if (st[i] < 0)
            item = Py_NewRef(Py_None);
        else if (as_bytes)
            item = PyBytes_FromStringAndSize(buf + st[i], (Py_ssize_t)ln[i]);
        else
            item = PyUnicode_DecodeUTF8(buf + st[i], (Py_ssize_t)ln[i], "surrogateescape");
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyObject *old = items[i];
        items[i] = item;
        Py_XDECREF(old);
    }
    if (out != Py_None)
        result = Py_NewRef(Py_None);
done:
    if (o.obj)
        PyBuffer_Release(&o);
    PyBuffer_Release(&b);
    PyBuffer_Release(&s);
    PyBuffer_Release(&l);
    return result;
}

/* gather_spans(buffer, starts int64[n*width], lengths int64[n*width], offsets_out int64[n+1],
 *              width=1, column=0) -> (data, ascii)
 *
 * Concatenates the spans into one bytes object and writes the Arrow offsets of each (a negative
 * start is an empty entry: a null to the caller). Starts and lengths are rows of `width`
 * entries (find_props' output) of which entry `column` is taken. `ascii` is whether every
 * byte is below 0x80, so that the caller can skip a UTF-8 validation of the whole column. */
static PyObject *gather_spans(PyObject *self, PyObject *args) {
    Py_buffer b, s, l, o;
    Py_ssize_t width = 1, column = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*w*|nn", &b, &s, &l, &o, &width, &column))
        return NULL;
    PyObject *result = NULL, *data = NULL;
    Py_ssize_t n;
    if (spans_arg(&s, &l, &n) < 0)
        goto done;
    if (width < 1 || column < 0 || column >= width || n % width) {
        PyErr_SetString(PyExc_ValueError, "spans must be rows of `width` entries, 0 <= column < width");
        goto done;
    }
    n /= width;
    if (o.len != (n + 1) * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "offsets_out must be int64[n + 1]");
        goto done;
    }
    const int64_t *st = (const int64_t *)s.buf + column, *ln = (const int64_t *)l.buf + column;
    int64_t *off = o.buf;
    int64_t total = 0;
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i * width] >= 0) {
            if (ln[i * width] < 0 || st[i * width] > (int64_t)b.len || ln[i * width] > (int64_t)b.len - st[i * width]) {
                PyErr_Format(PyExc_ValueError, "span %zd [%lld, +%lld) outside a buffer of %zd bytes", i,
                             (long long)st[i * width], (long long)ln[i * width], b.len);
                goto done;
            }
            total += ln[i * width];
        }
        off[i + 1] = total;
    }
    data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (data == NULL)
        goto done;
    uint64_t high = 0;
    {
        const uint8_t *buf = b.buf;
        uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(data);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + PREFETCH_ROWS < n)
                prefetch_span(buf, b.len, st[(i + PREFETCH_ROWS) * width], ln[(i + PREFETCH_ROWS) * width]);
            if (st[i * width] < 0)
                continue;
            const uint8_t *src = buf + st[i * width];
            uint8_t *d = dst + off[i];
            int64_t len = ln[i * width], k = 0;
            for (; k + 8 <= len; k += 8) {
                uint64_t w;
                memcpy(&w, src + k, 8);
                memcpy(d + k, &w, 8);
                high |= w;
            }
            for (; k < len; k++) {
                d[k] = src[k];
                high |= src[k];
            }
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("(NO)", data, (high & 0x8080808080808080ull) ? Py_False : Py_True);
    data = NULL;
done:
    Py_XDECREF(data);
    PyBuffer_Release(&b);
    PyBuffer_Release(&s);
    PyBuffer_Release(&l);
    PyBuffer_Release(&o);
    return result;
}

/* ------------------------------------------------------------------------- the one pass */

/* walk_decode's outputs, in this order. Row arrays hold `capacity` entries (the rows the range
 * could hold: its bytes / MIN_MESSAGE_SIZE + 1); offsets one more (Arrow's offsets); bitmaps a
 * bit a row (Arrow's validity, least significant bit first); text data any size, of which all
 * but the last TEXT_SLACK bytes are used (the copies move 16 bytes at a time). */
enum {
    W_TOTAL_SIZE, W_VERSION, W_BODY_CRC, W_QUEUE_ID, W_FLAG, W_QUEUE_OFFSET, W_PHY_OFFSET, W_SYS_FLAG,
    W_BORN_TIMESTAMP, W_STORE_TIMESTAMP, W_RECONSUME_TIMES, W_PREPARED_TRANSACTION_OFFSET, /* as D_* */
    W_TOPIC_CODE,      /* int32: code in the topic dictionary */
    W_BORN_HOST_CODE,  /* int32: code in the born host dictionary; -1 for an IPv6 host */
    W_STORE_HOST_CODE, /* int32, as W_BORN_HOST_CODE */
    W_TAGS_CODE,       /* int32: code in the tags dictionary; 0 without TAGS */
    W_DELAY_LEVEL,     /* int32: DELAY as a decimal integer clamped to int32; 0 when absent; see below */
    W_TAGS_VALID, W_KEYS_VALID, W_UNIQ_KEY_VALID, /* bitmaps: the property is present */
    W_PROPERTIES_OFFSETS, W_PROPERTIES_DATA, W_KEYS_OFFSETS, W_KEYS_DATA, W_UNIQ_KEY_OFFSETS,
    W_UNIQ_KEY_DATA, W_BODY_OFFSETS, W_BODY_DATA, /* int64 offsets, uint8 data */
    W_NOUT
};

/* Bytes a row of each output takes: > 0 a fixed width, 0 text data, -1 offsets, -2 a bitmap. */
static const int walk_width[W_NOUT] = {4, 1, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 4, 4, 4, 4, 4, -2, -2, -2,
                                       -1, 0, -1, 0, -1, 0, -1, 0};

#define TEXT_SLACK 16

/* Why walk_decode stopped before the walk's stop: a record failing decode_records' field checks,
 * or find_props' property check. */
enum { BAD_NONE = 0, BAD_FIELDS = 1 };

/* The names walk_decode looks for, in the order of its outputs. */
enum { WANT_KEYS, WANT_UNIQ_KEY, WANT_TAGS, WANT_DELAY, WANT_N };

/* Appends src[0, len) to a text column whose data has `cap` usable bytes (TEXT_SLACK more
 * follow them). `high` collects the bytes' top bits (0: all ASCII). -1 when it does not fit. */
static inline int put_text(uint8_t *data, int64_t cap, int64_t *used, const uint8_t *src, int64_t len,
                           const uint8_t *src_end, uint64_t *high) {
    if (len > cap - *used)
        return -1;
    uint8_t *d = data + *used;
    *used += len;
    if (src + len + TEXT_SLACK <= src_end) { /* 16 bytes a step, the last step may run over */
        uint64_t h = 0;
        for (int64_t k = 0; k < len; k += 16) {
            uint64_t w0, w1;
            memcpy(&w0, src + k, 8);
            memcpy(&w1, src + k + 8, 8);
            memcpy(d + k, &w0, 8);
            memcpy(d + k + 8, &w1, 8);
            int64_t left = len - k;
            if (left < 16) {
                if (left <= 8) {
                    w1 = 0;
                    w0 = left == 8 ? w0 : w0 & ((1ULL << (8 * left)) - 1);
                } else if (left < 16) {
                    w1 &= (1ULL << (8 * (left - 8))) - 1;
                }
            }
            h |= w0 | w1;
        }
        if (high)
            *high |= h;
        return 0;
    }
    memcpy(d, src, (size_t)len);
    if (high)
        for (int64_t k = 0; k < len; k++)
            *high |= src[k];
    return 0;
}

/* DELAY as Integer-like decimal text: an optional '-' and 1 to 18 digits, clamped to int32.
 * Returns 0 and sets *out, or -1 for any other text (the caller parses those rows). */
static inline int parse_delay(const uint8_t *p, int64_t len, int32_t *out) {
    int neg = len > 0 && p[0] == '-';
    int64_t i = neg, v = 0;
    if (len - i < 1 || len - i > 18)
        return -1;
    for (; i < len; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9)
            return -1;
        v = v * 10 + d;
    }
    v = neg ? -v : v;
    *out = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
    return 0;
}

static inline void set_bit(uint8_t *bitmap, int64_t row, int on) {
    if ((row & 7) == 0)
        bitmap[row >> 3] = 0;
    bitmap[row >> 3] |= (uint8_t)(on << (row & 7));
}

/* One step of walk_decode's walk and field checks: the record at p of a buffer of `end` bytes,
 * after `rows` records. Returns the stop code (the walk's, or STOP_LIMIT once max_records >= 0
 * records are read), or -1 for a record to take: its TOTALSIZE in *size and its layout in *l,
 * unless its fields fail layout_record, which sets *bad_kind to BAD_FIELDS (the pass stops there).
 * walk_decode and walk_checked share it, so they stop alike. */
static inline int checked_step(const uint8_t *buf, Py_ssize_t end, Py_ssize_t p, Py_ssize_t rows,
                               Py_ssize_t max_records, int64_t *prefetched, int32_t *size, record_layout *l,
                               int *bad_kind) {
    Py_ssize_t left = end - p;
    if (left == 0)
        return STOP_END;
    if (max_records >= 0 && rows >= max_records)
        return STOP_LIMIT;
    int32_t magic;
    int code = record_at(buf, p, left, size, &magic);
    if (code >= 0)
        return code;
    prefetch_stream(buf, end, prefetched, (int64_t)p + *size + PREFETCH_BYTES);
    if (layout_record(buf + p, l) != LAYOUT_OK)
        *bad_kind = BAD_FIELDS;
    return -1;
}

/* walk_decode(buffer, start, body, names, outputs, max_records=-1) -> (rows, stop_pos, stop_code,
 *     bad_kind, bad_pos, topic_spans, tags_spans, born_keys, store_keys, v6_rows, delay_rows,
 *     text_high, null_counts)
 *
 * The walk (as `walk` from `start` to the buffer's end, stopping with STOP_LIMIT after
 * max_records records when that is >= 0, as `walk` does), decode_records' checks and fields,
 * find_props' scan (scan_block) for names = (KEYS, UNIQ_KEY, TAGS, DELAY) and the columns
 * read_columns builds, in one pass over the records, writing Arrow's layout straight into `outputs`:
 *
 *   - fixed fields as decode_records writes them;
 *   - topic and tags as codes in order of first appearance; topic_spans / tags_spans (bytes of
 *     int64 start, length pairs) give each code's first occurrence in the buffer;
 *   - hosts: IPv4 address and port as codes of born_keys / store_keys (bytes of uint64, the
 *     D_BORN_HOST_KEY packing); rows with an IPv6 host get -1 and are listed in v6_rows
 *     (int64 row, record position pairs) for the caller;
 *   - PROPERTIES, KEYS, UNIQ_KEY and (with `body`) BODY copied into offsets + data; KEYS and
 *     UNIQ_KEY null when absent. text_high has bit j set when the text of column j (properties,
 *     keys, uniq_key) holds a byte >= 0x80; null_counts is (tags, keys, uniq_key);
 *   - DELAY parsed when it is a plain decimal integer (parse_delay); other values leave 0 and
 *     are listed in delay_rows (int64 row, value start, value length triples).
 *
 * It stops at the walk's stop or at the first record that fails a field check (bad_kind
 * BAD_FIELDS); bad_pos is that record's position and `rows` the records before it, the only
 * ones written. Malformed property pairs are skipped, as find_props and Java skip them. */
static PyObject *walk_decode(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start;
    int body;
    PyObject *names, *outs;
    Py_ssize_t max_records = -1;
    if (!PyArg_ParseTuple(args, "y*npO!O!|n", &b, &start, &body, &PyTuple_Type, &names, &PyTuple_Type, &outs,
                          &max_records))
        return NULL;
    Py_buffer o[W_NOUT];
    int got = 0;
    PyObject *result = NULL;
    const char *name_ptr[WANT_N];
    int64_t name_len[WANT_N];
    spandict topics, tags;
    keydict born_hosts, store_hosts;
    vec64 v6 = {NULL, 0, 0}, delay_rows = {NULL, 0, 0};
    const uint8_t *buf = b.buf;
    spandict_init(&topics, buf);
    spandict_init(&tags, buf);
    keydict_init(&born_hosts);
    keydict_init(&store_hosts);
    if (start < 0 || start > b.len) {
        PyErr_Format(PyExc_ValueError, "start %zd outside a buffer of %zd bytes", start, b.len);
        goto done;
    }
    if (PyTuple_GET_SIZE(names) != WANT_N || PyTuple_GET_SIZE(outs) != W_NOUT) {
        PyErr_Format(PyExc_ValueError, "walk_decode needs %d names and %d output arrays", WANT_N, W_NOUT);
        goto done;
    }
    if (name_args(names, name_ptr, name_len) < 0)
        goto done;
    for (; got < W_NOUT; got++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(outs, got), &o[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    Py_ssize_t cap = o[W_TOTAL_SIZE].len / 4;
    for (int j = 0; j < W_NOUT; j++) {
        int w = walk_width[j];
        int bad = w > 0 ? o[j].len != cap * w
                : w == -1 ? o[j].len != (cap + 1) * 8
                : w == -2 ? o[j].len < (cap + 7) / 8
                : o[j].len < TEXT_SLACK;
        if (j >= W_BODY_OFFSETS && !body)
            bad = 0;
        if (bad) {
            PyErr_Format(PyExc_ValueError, "output %d does not fit %zd rows", j, cap);
            goto done;
        }
    }
    if (cap < (b.len - start) / MIN_MESSAGE_SIZE + 1) {
        PyErr_Format(PyExc_ValueError, "outputs of %zd rows are too short for %zd bytes", cap, b.len - start);
        goto done;
    }
    {
        int32_t *topic_code = o[W_TOPIC_CODE].buf, *born_code = o[W_BORN_HOST_CODE].buf,
                *store_code = o[W_STORE_HOST_CODE].buf, *tags_code = o[W_TAGS_CODE].buf,
                *delay = o[W_DELAY_LEVEL].buf;
        uint8_t *tags_valid = o[W_TAGS_VALID].buf, *keys_valid = o[W_KEYS_VALID].buf,
                *uniq_valid = o[W_UNIQ_KEY_VALID].buf;
        int64_t *props_off = o[W_PROPERTIES_OFFSETS].buf, *keys_off = o[W_KEYS_OFFSETS].buf,
                *uniq_off = o[W_UNIQ_KEY_OFFSETS].buf, *body_off = o[W_BODY_OFFSETS].buf;
        uint8_t *props_data = o[W_PROPERTIES_DATA].buf, *keys_data = o[W_KEYS_DATA].buf,
                *uniq_data = o[W_UNIQ_KEY_DATA].buf, *body_data = o[W_BODY_DATA].buf;
        int64_t props_cap = o[W_PROPERTIES_DATA].len - TEXT_SLACK, keys_cap = o[W_KEYS_DATA].len - TEXT_SLACK,
                uniq_cap = o[W_UNIQ_KEY_DATA].len - TEXT_SLACK,
                body_cap = body ? o[W_BODY_DATA].len - TEXT_SLACK : 0;
        int64_t props_used = 0, keys_used = 0, uniq_used = 0, body_used = 0;
        uint64_t props_high = 0, keys_high = 0, uniq_high = 0;
        int64_t tags_nulls = 0, keys_nulls = 0, uniq_nulls = 0;
        const uint8_t *end_of_buf = buf + b.len;
        Py_ssize_t end = b.len, p = start, rows = 0;
        int64_t prefetched = start;
        int code = STOP_END, bad_kind = BAD_NONE, failed = 0;
        uint64_t m1[BLOCK_GROUPS], m2[BLOCK_GROUPS]; /* scan_block's masks of one block */
        props_off[0] = keys_off[0] = uniq_off[0] = 0;
        if (body)
            body_off[0] = 0;
        Py_BEGIN_ALLOW_THREADS
        for (;; rows++) {
            /* the walk's checks of the record at p, then decode_records' */
            int32_t size;
            record_layout l;
            if ((code = checked_step(buf, end, p, rows, max_records, &prefetched, &size, &l, &bad_kind)) >= 0 ||
                bad_kind != BAD_NONE)
                break;
            const uint8_t *r = buf + p;
            /* the wanted values (a malformed pair is skipped, as find_props and Java skip it) */
            int64_t vs[WANT_N], vl[WANT_N], skipped_at = 0;
            (void)scan_block(buf, b.len, p + l.o_props, l.props_len, WANT_N, name_ptr, name_len, vs, vl, m1, m2,
                             &skipped_at);
            /* the row */
            put_fixed(o, rows, r, &l);
            int32_t c;
            if ((c = spandict_code(&topics, p + l.o_topic, l.topic_len)) < 0) {
                failed = 1;
                break;
            }
            topic_code[rows] = c;
            if (l.born_width == IPV4_ADDRESS_SIZE) {
                if ((c = keydict_code(&born_hosts, host_key(r + HEAD_SIZE, IPV4_ADDRESS_SIZE))) < 0) {
                    failed = 1;
                    break;
                }
                born_code[rows] = c;
            } else {
                born_code[rows] = -1;
            }
            if (l.store_width == IPV4_ADDRESS_SIZE) {
                if ((c = keydict_code(&store_hosts, host_key(r + l.o_store_host, IPV4_ADDRESS_SIZE))) < 0) {
                    failed = 1;
                    break;
                }
                store_code[rows] = c;
            } else {
                store_code[rows] = -1;
            }
            if ((l.born_width != IPV4_ADDRESS_SIZE || l.store_width != IPV4_ADDRESS_SIZE) &&
                (vec_push(&v6, rows) < 0 || vec_push(&v6, p) < 0)) {
                failed = 1;
                break;
            }
            if (put_text(props_data, props_cap, &props_used, buf + p + l.o_props, l.props_len, end_of_buf,
                         &props_high) < 0) {
                failed = 2;
                break;
            }
            props_off[rows + 1] = props_used;
            if (vs[WANT_KEYS] >= 0 &&
                put_text(keys_data, keys_cap, &keys_used, buf + vs[WANT_KEYS], vl[WANT_KEYS], end_of_buf,
                         &keys_high) < 0) {
                failed = 2;
                break;
            }
            keys_nulls += vs[WANT_KEYS] < 0;
            set_bit(keys_valid, rows, vs[WANT_KEYS] >= 0);
            keys_off[rows + 1] = keys_used;
            if (vs[WANT_UNIQ_KEY] >= 0 &&
                put_text(uniq_data, uniq_cap, &uniq_used, buf + vs[WANT_UNIQ_KEY], vl[WANT_UNIQ_KEY], end_of_buf,
                         &uniq_high) < 0) {
                failed = 2;
                break;
            }
            uniq_nulls += vs[WANT_UNIQ_KEY] < 0;
            set_bit(uniq_valid, rows, vs[WANT_UNIQ_KEY] >= 0);
            uniq_off[rows + 1] = uniq_used;
            c = 0;
            if (vs[WANT_TAGS] >= 0 && (c = spandict_code(&tags, vs[WANT_TAGS], vl[WANT_TAGS])) < 0) {
                failed = 1;
                break;
            }
            tags_code[rows] = c;
            tags_nulls += vs[WANT_TAGS] < 0;
            set_bit(tags_valid, rows, vs[WANT_TAGS] >= 0);
            delay[rows] = 0;
            if (vs[WANT_DELAY] >= 0 && parse_delay(buf + vs[WANT_DELAY], vl[WANT_DELAY], &delay[rows]) < 0 &&
                (vec_push(&delay_rows, rows) < 0 || vec_push(&delay_rows, vs[WANT_DELAY]) < 0 ||
                 vec_push(&delay_rows, vl[WANT_DELAY]) < 0)) {
                failed = 1;
                break;
            }
            if (body) {
                if (put_text(body_data, body_cap, &body_used, r + l.o_body, l.body_len, end_of_buf, NULL) < 0) {
                    failed = 2;
                    break;
                }
                body_off[rows + 1] = body_used;
            }
            p += size;
        }
        Py_END_ALLOW_THREADS
        if (failed == 1) {
            PyErr_NoMemory();
            goto done;
        }
        if (failed == 2) {
            PyErr_SetString(PyExc_ValueError, "text outputs too short");
            goto done;
        }
        PyObject *spans[6] = {vec_take_bytes(&topics.spans), vec_take_bytes(&tags.spans),
                              vec_take_bytes(&born_hosts.keys), vec_take_bytes(&store_hosts.keys),
                              vec_take_bytes(&v6), vec_take_bytes(&delay_rows)};
        for (int j = 0; j < 6; j++) {
            if (spans[j] == NULL) {
                for (int k = 0; k < 6; k++)
                    Py_XDECREF(spans[k]);
                goto done;
            }
        }
        int high = ((props_high & 0x8080808080808080ULL) != 0) | ((keys_high & 0x8080808080808080ULL) != 0) << 1 |
                   ((uniq_high & 0x8080808080808080ULL) != 0) << 2;
        result = Py_BuildValue("(nniinNNNNNNi(LLL))", rows, p, code, bad_kind, p, spans[0], spans[1], spans[2],
                               spans[3], spans[4], spans[5], high, (long long)tags_nulls, (long long)keys_nulls,
                               (long long)uniq_nulls);
    }
done:
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&o[j]);
    PyBuffer_Release(&b);
    spandict_free(&topics);
    spandict_free(&tags);
    keydict_free(&born_hosts);
    keydict_free(&store_hosts);
    free(v6.data);
    free(delay_rows.data);
    return result;
}

/* walk_checked(buffer, start) -> (rows, stop_pos, stop_code, bad_kind). walk_decode's walk and
 * field checks alone, with none of its outputs: where a file's good records end (the recovery of
 * the active file, rmqlab.formats.commitlog.max_offset), the same rows, stop and bad_kind as
 * walk_decode of the same bytes (stop_pos is then the failing record's position), at the cost of
 * reading each record's head and lengths. */
static PyObject *walk_checked(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*n", &b, &start))
        return NULL;
    if (start < 0 || start > b.len) {
        PyErr_Format(PyExc_ValueError, "start %zd outside a buffer of %zd bytes", start, b.len);
        PyBuffer_Release(&b);
        return NULL;
    }
    const uint8_t *buf = b.buf;
    Py_ssize_t end = b.len, p = start, rows = 0;
    int64_t prefetched = start;
    int code = STOP_END, bad_kind = BAD_NONE;
    Py_BEGIN_ALLOW_THREADS
    for (;; rows++) {
        int32_t size;
        record_layout l;
        if ((code = checked_step(buf, end, p, rows, -1, &prefetched, &size, &l, &bad_kind)) >= 0 ||
            bad_kind != BAD_NONE)
            break;
        p += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return Py_BuildValue("(nnii)", rows, p, code, bad_kind);
}

/* Whether MessageDecoder.decode (common module, rocketmq-all-5.3.3; readBody true, deCompressBody
 * false) returns a message, not null, for the `size` bytes at r: MAGICCODE v1 or v2, then every
 * field it reads within the `size` bytes (BODY only when BODYLEN > 0, PROPERTIES only when
 * PROPERTIESLENGTH > 0; TOPICLEN must not be negative). Laxer than layout_record: bytes left after
 * the fields, or a TOTALSIZE that disagrees with them, are not looked at.
 * rmqlab.formats.commitlog.records.decoder_reads is the readable model; the tests compare them. */
static int decoder_reads(const uint8_t *r, int64_t size) {
    if (size < HEAD_SIZE)
        return 0;
    int32_t magic = load_i32(r + HEAD_MAGIC_OFFSET);
    if (magic != MAGIC_V1 && magic != MAGIC_V2)
        return 0;
    int32_t sys_flag = load_i32(r + HEAD_SYS_FLAG_OFFSET);
    int64_t at = HEAD_SIZE + ((sys_flag & BORNHOST_V6_FLAG) ? IPV6_ADDRESS_SIZE : IPV4_ADDRESS_SIZE) + PORT_SIZE +
                 STORE_TIME_SIZE + ((sys_flag & STOREHOSTADDRESS_V6_FLAG) ? IPV6_ADDRESS_SIZE : IPV4_ADDRESS_SIZE) +
                 PORT_SIZE + TAIL_SIZE;
    if (at > size)
        return 0;
    int32_t body_len = load_i32(r + at - TAIL_SIZE + TAIL_BODY_LEN_OFFSET);
    if (body_len > 0)
        at += body_len;
    int64_t width = magic == MAGIC_V1 ? TOPIC_LEN_V1_SIZE : TOPIC_LEN_V2_SIZE;
    if (at + width > size)
        return 0;
    int64_t topic_len = magic == MAGIC_V1 ? (int64_t)(int8_t)r[at]
                                          : (int64_t)(int16_t)(((uint16_t)r[at] << 8) | r[at + 1]);
    at += width + topic_len;
    if (topic_len < 0 || at + PROPERTIES_LEN_SIZE > size)
        return 0;
    int64_t props_len = (int16_t)(((uint16_t)r[at] << 8) | r[at + 1]);
    return at + PROPERTIES_LEN_SIZE + (props_len > 0 ? props_len : 0) <= size;
}

/* records_at(view, offsets, first, stop, start, readable, out_offsets, out_views, whole_first=False)
 * -> None. offsets[first:stop] (a list of ints, ascending) are CommitLog offsets inside one file that
 * starts at CommitLog offset `start`; `view` is the file's bytes (a memoryview of its map) and
 * `readable` how many of them the broker reads. An offset is kept when at least 4 bytes are
 * readable at its position and the TOTALSIZE there is >= 0 and ends within the file
 * (CommitLog.getData, then limit(size) of the slice: rmqlab.store.keyquery.query_message says
 * why); with `whole_first`, offsets[first] (the query's first offset, which lookMessageByOffset
 * reads) also needs its TOTALSIZE within the readable bytes and a record MessageDecoder decodes
 * (decoder_reads). Each kept offset is appended to out_offsets and view[pos:pos + size] to
 * out_views. */
static PyObject *records_at(PyObject *self, PyObject *args) {
    PyObject *view, *offsets, *out_offsets, *out_views;
    Py_ssize_t first, stop;
    long long start, readable;
    int whole_first = 0;
    if (!PyArg_ParseTuple(args, "OO!nnLLO!O!|p", &view, &PyList_Type, &offsets, &first, &stop, &start, &readable,
                          &PyList_Type, &out_offsets, &PyList_Type, &out_views, &whole_first))
        return NULL;
    if (first < 0 || stop > PyList_GET_SIZE(offsets) || first > stop) {
        PyErr_SetString(PyExc_ValueError, "records_at: first and stop must lie within offsets");
        return NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(view, &b, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *buf = (const uint8_t *)b.buf;
    long long len = (long long)b.len;
    if (readable > len) readable = len;
    PyObject *result = Py_None;
    /* the records lie far apart (a key's messages over the whole log): ask for all their first
     * cache lines before reading any, so the misses overlap instead of following one another */
    for (Py_ssize_t j = first; j < stop; j++) {
        long long offset = PyLong_AsLongLong(PyList_GET_ITEM(offsets, j));
        if (offset == -1 && PyErr_Occurred()) { PyErr_Clear(); break; }   /* reported by the loop below */
        prefetch_at(buf, b.len, offset - start);
    }
    for (Py_ssize_t j = first; j < stop; j++) {
        PyObject *item = PyList_GET_ITEM(offsets, j);
        long long offset = PyLong_AsLongLong(item);
        if (offset == -1 && PyErr_Occurred()) { result = NULL; break; }
        long long pos = offset - start;
        if (pos < 0 || pos >= len || readable - pos < 4) continue;
        long long size = load_i32(buf + pos);
        if (size < 0 || size > len - pos) continue;
        if (whole_first && j == first && (size > readable - pos || !decoder_reads(buf + pos, size))) continue;
        PyObject *slice = PySequence_GetSlice(view, (Py_ssize_t)pos, (Py_ssize_t)(pos + size));
        if (slice == NULL || PyList_Append(out_offsets, item) < 0 || PyList_Append(out_views, slice) < 0) {
            Py_XDECREF(slice);
            result = NULL;
            break;
        }
        Py_DECREF(slice);
    }
    PyBuffer_Release(&b);
    if (result == NULL) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"records_at", records_at, METH_VARARGS,
     "records_at(view, offsets, first, stop, start, readable, out_offsets, out_views, whole_first=False) -> None"},
    {"walk_checked", walk_checked, METH_VARARGS,
     "walk_checked(buffer, start) -> (rows, stop_pos, stop_code, bad_kind)"},
    {"walk", walk, METH_VARARGS,
     "walk(buffer, start, end, max_records) -> (positions int64 bytes, stop_pos, stop_code)"},
    {"crc32_spans", crc32_spans, METH_VARARGS, "crc32_spans(buffer, starts, lengths, out_uint32) -> None"},
    {"copy_spans", copy_spans, METH_VARARGS,
     "copy_spans(dst, dst_starts, src, src_starts, lengths) -> None"},
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(dst, dst_off, total, version, queue_id, flag, queue_offset, phy_offset, sys_flag, "
     "born_timestamp, born_code, store_timestamp, store_code, reconsume_times, prepared_transaction_offset, "
     "born_ip, born_width, born_port, store_ip, store_width, store_port, body, body_offsets, topic, "
     "topic_offsets, properties, properties_offsets) -> None"},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(buffer, positions, outputs) -> first bad row or -1"},
    {"check_record", check_record, METH_VARARGS,
     "check_record(buffer, position) -> (check, total, version, sys_flag, value); check 0 when the fields fit"},
    {"span_objects", span_objects, METH_VARARGS,
     "span_objects(buffer, starts, lengths, as_bytes, out=None) -> list of bytes / str / None (None with out)"},
    {"gather_spans", gather_spans, METH_VARARGS,
     "gather_spans(buffer, starts, lengths, offsets_out, width=1, column=0) -> (data bytes, all_ascii)"},
    {"walk_entries", walk_entries, METH_VARARGS,
     "walk_entries(buffer, start, end, max_entries) -> (positions, stop_pos, stop_code): the DLedger entries "
     "of a DLedger CommitLog file"},
    {"walk_decode", walk_decode, METH_VARARGS,
     "walk_decode(buffer, start, body, names, outputs, max_records=-1) -> (rows, stop_pos, stop_code, bad_kind, bad_pos, "
     "topic_spans, tags_spans, born_keys, store_keys, v6_rows, delay_rows, text_high, null_counts)"},
    {"find_props", find_props, METH_VARARGS,
     "find_props(buffer, starts, lengths, names, value_starts_out, value_lengths_out, problems_out=None) -> None "
     "or (row, offset, problem) of the first row with a malformed pair (skipped)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_records",
                                    "CommitLog record walk, CRC32, span copies and property scan in C.", -1,
                                    methods};

/* The layout facts and codes above, exported so that Python can check them against its
 * declarations and name the codes the functions return. */
#define NAMED(constant) {#constant, constant}
static const struct {
    const char *name;
    long value;
} exported_constants[] = {
    NAMED(MAGIC_V1), NAMED(MAGIC_V2), NAMED(MAGIC_BLANK),
    NAMED(HEAD_TOTAL_SIZE_OFFSET), NAMED(HEAD_MAGIC_OFFSET), NAMED(HEAD_BODY_CRC_OFFSET),
    NAMED(HEAD_QUEUE_ID_OFFSET), NAMED(HEAD_FLAG_OFFSET), NAMED(HEAD_QUEUE_OFFSET_OFFSET),
    NAMED(HEAD_PHY_OFFSET_OFFSET), NAMED(HEAD_SYS_FLAG_OFFSET), NAMED(HEAD_BORN_TIMESTAMP_OFFSET),
    NAMED(HEAD_SIZE),
    NAMED(IPV4_ADDRESS_SIZE), NAMED(IPV6_ADDRESS_SIZE), NAMED(PORT_SIZE), NAMED(STORE_TIME_SIZE),
    NAMED(TAIL_RECONSUME_TIMES_OFFSET), NAMED(TAIL_PREPARED_TRANSACTION_OFFSET_OFFSET),
    NAMED(TAIL_BODY_LEN_OFFSET), NAMED(TAIL_SIZE),
    NAMED(TOPIC_LEN_V1_SIZE), NAMED(TOPIC_LEN_V2_SIZE), NAMED(PROPERTIES_LEN_SIZE),
    NAMED(BLANK_SIZE), NAMED(MIN_MESSAGE_SIZE),
    NAMED(NAME_VALUE_SEPARATOR), NAMED(PROPERTY_SEPARATOR),
    NAMED(BORNHOST_V6_FLAG), NAMED(STOREHOSTADDRESS_V6_FLAG),
    NAMED(STOP_END), NAMED(STOP_BLANK), NAMED(STOP_BLANK_SIZE), NAMED(STOP_SHORT), NAMED(STOP_MAGIC),
    NAMED(STOP_PAST_END), NAMED(STOP_TOO_SMALL), NAMED(STOP_LIMIT),
    NAMED(PROP_OK), NAMED(PROP_EMPTY_PAIR), NAMED(PROP_NO_SEPARATOR), NAMED(PROP_EMPTY_NAME),
};
#undef NAMED

PyMODINIT_FUNC PyInit__records(void) {
    crc_init();
    PyObject *m = PyModule_Create(&module);
    for (size_t i = 0; m != NULL && i < sizeof exported_constants / sizeof exported_constants[0]; i++)
        if (PyModule_AddIntConstant(m, exported_constants[i].name, exported_constants[i].value) < 0)
            Py_CLEAR(m);
    return m;
}
