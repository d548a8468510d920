/*
 * rmqlab._kafkalog: the loops of the Kafka segment reader and index rule that NumPy cannot express.
 *
 *   walk          follow the batchLength chain of a .log segment (each entry's position depends
 *                 on the previous entry's length: a sequential loop), v2 batches and legacy v0/v1
 *                 messages alike, as FileLogInputStream.nextBatch steps through a FileRecords
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
 * tests/test_native_layouts.py checks them against those declarations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "bigendian.h"

/* Every entry starts with baseOffset i64 (offset of a legacy message) and batchLength i32
 * (messageSize), and has its magic byte at the same place. */
#define BATCH_LENGTH_OFFSET 8
#define LOG_OVERHEAD 12
#define MAGIC_OFFSET 16
#define HEADER_SIZE_UP_TO_MAGIC 17
#define MAGIC_V2 2

/* The smallest whole entry by magic: a v0 message, a v1 message (8 more bytes of timestamp), a
 * v2 batch header. */
#define MIN_ENTRY_SIZE_V0 26
#define MIN_ENTRY_SIZE_V1 34
#define MIN_ENTRY_SIZE_V2 61

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
    if (cap == 0)
        cap = 1;
    size_t n = 0;
    int64_t *pos = malloc(cap * sizeof(int64_t));
    if (pos == NULL) {
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
        if (max_entries >= 0 && (Py_ssize_t)n >= max_entries) {
            code = STOP_LIMIT;
            break;
        }
        if (left < HEADER_SIZE_UP_TO_MAGIC) {
            code = STOP_SHORT;
            break;
        }
        int64_t size = (int64_t)load_i32(buf + p + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        int8_t magic = (int8_t)buf[p + MAGIC_OFFSET];
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
        if (n == cap) {
            int64_t *grown = realloc(pos, 2 * cap * sizeof(int64_t));
            if (grown == NULL) {
                oom = 1;
                break;
            }
            pos = grown;
            cap *= 2;
        }
        pos[n++] = p;
        p += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (oom) {
        free(pos);
        return PyErr_NoMemory();
    }
    PyObject *positions = PyBytes_FromStringAndSize((const char *)pos, (Py_ssize_t)(n * sizeof(int64_t)));
    free(pos);
    if (positions == NULL)
        return NULL;
    return Py_BuildValue("(NLi)", positions, (long long)p, code);
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
    NAMED(BATCH_LENGTH_OFFSET), NAMED(LOG_OVERHEAD), NAMED(MAGIC_OFFSET), NAMED(HEADER_SIZE_UP_TO_MAGIC),
    NAMED(MAGIC_V2), NAMED(MIN_ENTRY_SIZE_V0), NAMED(MIN_ENTRY_SIZE_V1), NAMED(MIN_ENTRY_SIZE_V2),
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
