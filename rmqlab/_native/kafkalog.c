/*
 * rmqlab._kafkalog: the loops of the Kafka segment reader and index rule that NumPy cannot express.
 *
 *   walk          follow the batchLength chain of a .log segment (each entry's position depends
 *                 on the previous entry's length: a sequential loop), v2 batches and legacy v0/v1
 *                 messages alike, as FileLogInputStream.nextBatch steps through a FileRecords
 *   v2_headers    the header fields of many v2 batches as native int64 columns (one pass, no
 *                 structured array to convert)
 *   index_picks   the batches that get an offset index entry (LogSegment.append's
 *                 bytesSinceLastIndexEntry > index.interval.bytes: each pick depends on the last)
 *
 * The walk only frames entries: it reads batchLength and magic, checks them against the bytes
 * left, and stops at the first entry it cannot frame with a code saying why. The header fields,
 * the CRCs and the typed errors (file, offset, field) come from rmqlab/kafka/log.py, whose
 * pure-Python walk (_spans) is the readable model of this loop; the tests compare the two on
 * random and damaged segments.
 * Everything is exchanged through the buffer protocol; no NumPy C API. The loops release the GIL.
 *
 * The layout below restates rmqlab.kafka.log's HEADER and rmqlab.kafka.legacy's MESSAGE_V0/V1
 * sizes; the module exports each constant under the name used here, and
 * tests/formats/test_native_layouts.py checks them against those declarations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "bigendian.h"
#include "vec64.h"

/* The v2 batch header (DefaultRecordBatch), big-endian. A legacy v0/v1 message starts the same
 * way: offset i64 and messageSize i32 where baseOffset and batchLength are, magic at the same
 * byte. */
#define HEADER_BASE_OFFSET_OFFSET 0
#define HEADER_BATCH_LENGTH_OFFSET 8
#define HEADER_PARTITION_LEADER_EPOCH_OFFSET 12
#define HEADER_MAGIC_OFFSET 16
#define HEADER_CRC_OFFSET 17
#define HEADER_ATTRIBUTES_OFFSET 21
#define HEADER_LAST_OFFSET_DELTA_OFFSET 23
#define HEADER_BASE_TIMESTAMP_OFFSET 27
#define HEADER_MAX_TIMESTAMP_OFFSET 35
#define HEADER_PRODUCER_ID_OFFSET 43
#define HEADER_PRODUCER_EPOCH_OFFSET 51
#define HEADER_BASE_SEQUENCE_OFFSET 53
#define HEADER_RECORDS_COUNT_OFFSET 57
#define HEADER_SIZE 61

/* baseOffset + batchLength; the bytes up to and including magic */
#define LOG_OVERHEAD 12
#define HEADER_SIZE_UP_TO_MAGIC 17
#define MAGIC_V2 2

/* The smallest whole entry by magic: a v0 message, a v1 message (8 more bytes of timestamp), a
 * v2 batch (its header). */
#define MIN_ENTRY_SIZE_V0 26
#define MIN_ENTRY_SIZE_V1 34
#define MIN_ENTRY_SIZE_V2 HEADER_SIZE

/* Why a walk stopped; exported under these names. */
enum {
    STOP_END = 0,       /* reached the end exactly on an entry boundary */
    STOP_SHORT = 1,     /* fewer than HEADER_SIZE_UP_TO_MAGIC bytes left: magic cannot be read */
    STOP_MAGIC = 2,     /* magic is not 0, 1 or 2 */
    STOP_TOO_SMALL = 3, /* batchLength below the smallest entry of its magic */
    STOP_PAST_END = 4,  /* batchLength runs past the end of the buffer (a torn write) */
    STOP_LIMIT = 5,     /* max_entries reached */
};

static const int64_t min_entry_size[3] = {MIN_ENTRY_SIZE_V0, MIN_ENTRY_SIZE_V1, MIN_ENTRY_SIZE_V2};

/* walk(buffer, start, max_entries) -> (positions: bytes of native int64, stop_pos, stop_code)
 * Follows batchLength from `start`; max_entries < 0: no limit. Every entry framed takes at least
 * MIN_ENTRY_SIZE_V0 bytes, so the loop runs at most len / 26 + 1 times. */
static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start, max_entries;
    if (!PyArg_ParseTuple(args, "y*nn", &b, &start, &max_entries))
        return NULL;
    if (start < 0 || start > b.len) {
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_ValueError, "walk start %zd outside a buffer of %zd bytes", start, b.len);
        return NULL;
    }
    const uint8_t *buf = b.buf;
    const int64_t end = (int64_t)b.len;
    /* at most one entry per MIN_ENTRY_SIZE_V0 bytes; when there is no limit, a first guess for
     * 1 KiB entries, grown as needed */
    int64_t most = (end - start) / MIN_ENTRY_SIZE_V0 + 1;
    size_t cap = (size_t)(max_entries >= 0 && max_entries < most ? max_entries : (end - start) / 1024 + 16);
    vec64 pos = {NULL, 0, 0};
    if (vec_reserve(&pos, cap ? cap : 1) < 0) {
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    int64_t p = start;
    int code = STOP_END;
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t step = 0; step <= end / MIN_ENTRY_SIZE_V0; step++) {
        int64_t left = end - p;
        if (left == 0) {
            code = STOP_END;
            break;
        }
        if (max_entries >= 0 && (Py_ssize_t)pos.len >= max_entries) {
            code = STOP_LIMIT;
            break;
        }
        if (left < HEADER_SIZE_UP_TO_MAGIC) {
            code = STOP_SHORT;
            break;
        }
        int64_t size = (int64_t)load_i32(buf + p + HEADER_BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        int8_t magic = (int8_t)buf[p + HEADER_MAGIC_OFFSET];
        if (magic < 0 || magic > MAGIC_V2) {
            code = STOP_MAGIC;
            break;
        }
        if (size < min_entry_size[magic]) {
            code = STOP_TOO_SMALL;
            break;
        }
        if (size > left) {
            code = STOP_PAST_END;
            break;
        }
        if (vec_push(&pos, p) < 0) {
            oom = 1;
            break;
        }
        p += size;
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
    return Py_BuildValue("(NLi)", positions, (long long)p, code);
}

static inline int16_t load_i16(const uint8_t *p) {
    return (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* The header fields in HEADER's order, each a row of v2_headers' output. */
enum { COLUMNS = 13 };

/* v2_headers(buffer, positions int64[n], out int64[13 * n]) -> None
 * The header fields of the v2 batches at `positions`, as Java reads them (signed), but crc
 * unsigned: row j of out (n values from j * n) is field j in HEADER's order. Every header must
 * lie inside the buffer. */
static PyObject *v2_headers(PyObject *self, PyObject *args) {
    Py_buffer b, ps, o;
    if (!PyArg_ParseTuple(args, "y*y*w*", &b, &ps, &o))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t w = (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n = ps.len / w;
    if (ps.len % w || o.len != COLUMNS * ps.len) {
        PyErr_Format(PyExc_ValueError, "positions must be int64[n] and out int64[%d * n]", COLUMNS);
        goto done;
    }
    const int64_t *pos = ps.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pos[i] < 0 || pos[i] > (int64_t)b.len - HEADER_SIZE) {
            PyErr_Format(PyExc_ValueError, "batch header %zd at %lld outside a buffer of %zd bytes", i,
                         (long long)pos[i], b.len);
            goto done;
        }
    }
    {
        const uint8_t *buf = b.buf;
        int64_t *out = o.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint8_t *h = buf + pos[i];
            out[0 * n + i] = load_i64(h + HEADER_BASE_OFFSET_OFFSET);
            out[1 * n + i] = load_i32(h + HEADER_BATCH_LENGTH_OFFSET);
            out[2 * n + i] = load_i32(h + HEADER_PARTITION_LEADER_EPOCH_OFFSET);
            out[3 * n + i] = (int8_t)h[HEADER_MAGIC_OFFSET];
            out[4 * n + i] = (int64_t)(uint32_t)load_i32(h + HEADER_CRC_OFFSET);
            out[5 * n + i] = load_i16(h + HEADER_ATTRIBUTES_OFFSET);
            out[6 * n + i] = load_i32(h + HEADER_LAST_OFFSET_DELTA_OFFSET);
            out[7 * n + i] = load_i64(h + HEADER_BASE_TIMESTAMP_OFFSET);
            out[8 * n + i] = load_i64(h + HEADER_MAX_TIMESTAMP_OFFSET);
            out[9 * n + i] = load_i64(h + HEADER_PRODUCER_ID_OFFSET);
            out[10 * n + i] = load_i16(h + HEADER_PRODUCER_EPOCH_OFFSET);
            out[11 * n + i] = load_i32(h + HEADER_BASE_SEQUENCE_OFFSET);
            out[12 * n + i] = load_i32(h + HEADER_RECORDS_COUNT_OFFSET);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&ps);
    PyBuffer_Release(&o);
    return result;
}

/* index_picks(positions int64[n], run_starts int64[r], interval, out int64[n]) -> count
 *
 * Batch numbers that get an offset index entry, into out[:count]. positions must rise strictly;
 * run_starts (rising, the first 0) are the batches where the broker (re)loaded the segment, each
 * run ending where the next starts. In the first run the count of bytes starts at position 0, in
 * a later one at the run's first batch; a batch is picked when its position is more than
 * `interval` bytes past the last pick (or that start). The differences are taken unsigned, so
 * no position can overflow them. */
static PyObject *index_picks(PyObject *self, PyObject *args) {
    Py_buffer ps, rs, o;
    long long interval;
    if (!PyArg_ParseTuple(args, "y*y*Lw*", &ps, &rs, &interval, &o))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t w = (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n = ps.len / w, r = rs.len / w;
    if (ps.len % w || rs.len % w || o.len != ps.len) {
        PyErr_SetString(PyExc_ValueError, "positions, run_starts and out must be int64 arrays, out as long as positions");
        goto done;
    }
    if (interval < 0) {
        PyErr_SetString(PyExc_ValueError, "interval must be >= 0");
        goto done;
    }
    const int64_t *pos = ps.buf, *runs = rs.buf;
    for (Py_ssize_t k = 0; k < r; k++) {
        if (runs[k] < 0 || runs[k] > n || (k == 0 ? runs[k] != 0 : runs[k] <= runs[k - 1])) {
            PyErr_Format(PyExc_ValueError, "run start %zd (%lld) is not a rising batch number from 0", k,
                         (long long)runs[k]);
            goto done;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        if (pos[i] <= pos[i - 1]) {
            PyErr_Format(PyExc_ValueError, "positions must rise strictly (batch %zd)", i);
            goto done;
        }
    }
    {
        int64_t *out = o.buf;
        Py_ssize_t count = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < r; k++) {
            Py_ssize_t first = (Py_ssize_t)runs[k], last = k + 1 < r ? (Py_ssize_t)runs[k + 1] : n;
            int64_t mark = first == 0 ? 0 : pos[first];
            for (Py_ssize_t i = first; i < last; i++) {
                if (pos[i] > mark && (uint64_t)pos[i] - (uint64_t)mark > (uint64_t)interval) {
                    out[count++] = i;
                    mark = pos[i];
                }
            }
        }
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(count);
    }
done:
    PyBuffer_Release(&ps);
    PyBuffer_Release(&rs);
    PyBuffer_Release(&o);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "walk(buffer, start, max_entries) -> (positions int64 bytes, stop_pos, stop_code)"},
    {"v2_headers", v2_headers, METH_VARARGS, "v2_headers(buffer, positions_int64, out_int64) -> None"},
    {"index_picks", index_picks, METH_VARARGS,
     "index_picks(positions_int64, run_starts_int64, interval, out_int64) -> count"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kafkalog",
                                    "Kafka segment batch walk and offset index picks in C.", -1, methods};

/* The layout facts and codes above, exported so that Python can check them against its
 * declarations and name the codes the walk returns. */
#define NAMED(constant) {#constant, constant}
static const struct {
    const char *name;
    long value;
} exported_constants[] = {
    NAMED(HEADER_BASE_OFFSET_OFFSET), NAMED(HEADER_BATCH_LENGTH_OFFSET), NAMED(HEADER_PARTITION_LEADER_EPOCH_OFFSET),
    NAMED(HEADER_MAGIC_OFFSET), NAMED(HEADER_CRC_OFFSET), NAMED(HEADER_ATTRIBUTES_OFFSET),
    NAMED(HEADER_LAST_OFFSET_DELTA_OFFSET), NAMED(HEADER_BASE_TIMESTAMP_OFFSET), NAMED(HEADER_MAX_TIMESTAMP_OFFSET),
    NAMED(HEADER_PRODUCER_ID_OFFSET), NAMED(HEADER_PRODUCER_EPOCH_OFFSET), NAMED(HEADER_BASE_SEQUENCE_OFFSET),
    NAMED(HEADER_RECORDS_COUNT_OFFSET), NAMED(HEADER_SIZE),
    NAMED(LOG_OVERHEAD), NAMED(HEADER_SIZE_UP_TO_MAGIC), NAMED(MAGIC_V2), NAMED(MIN_ENTRY_SIZE_V0),
    NAMED(MIN_ENTRY_SIZE_V1), NAMED(MIN_ENTRY_SIZE_V2), NAMED(COLUMNS),
    NAMED(STOP_END), NAMED(STOP_SHORT), NAMED(STOP_MAGIC), NAMED(STOP_TOO_SMALL), NAMED(STOP_PAST_END),
    NAMED(STOP_LIMIT),
};
#undef NAMED

PyMODINIT_FUNC PyInit__kafkalog(void) {
    PyObject *m = PyModule_Create(&module);
    for (size_t i = 0; m != NULL && i < sizeof exported_constants / sizeof exported_constants[0]; i++)
        if (PyModule_AddIntConstant(m, exported_constants[i].name, exported_constants[i].value) < 0)
            Py_CLEAR(m);
    return m;
}
