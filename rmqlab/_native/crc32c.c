/*
 * rmqlab._crc32c: CRC-32C (Castagnoli), the checksum of Kafka's magic v2 record batches.
 *
 *   crc32c(data, crc=0)                       CRC-32C of one bytes-like object; `crc` continues
 *                                             an earlier value (crc32c(b, crc32c(a)) == crc32c(a + b))
 *   crc32c_spans(buffer, starts, lengths, out)  CRC-32C of many byte ranges of one buffer
 *
 * Same function as org.apache.kafka.common.utils.Crc32C (java.util.zip.CRC32C on Java 9+):
 * reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF (RFC 3720, B.4).
 * Slice-by-8 tables everywhere; on x86-64 CPUs with SSE4.2 the crc32 instruction instead, which
 * computes the same polynomial about five times faster (chosen at import, built without
 * -msse4.2 so that the module still loads on any x86-64). crc32c_table uses the tables alone,
 * so tests can compare the two.
 * Everything is exchanged through the buffer protocol; no NumPy C API. The spans loop releases
 * the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
}

/* Raw register update (no pre/post inversion). Bytes are consumed in order, 8 at a time. */
static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFF];
        n--;
    }
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24] ^
            table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SSE42_PATH 1
/* The instruction's register update is the same raw update as crc_update (reflected 0x82F63B78,
 * no inversion). Eight bytes a step in order, little-endian loads as the tables consume them. */
__attribute__((target("sse4.2"))) static uint32_t crc_update_sse42(uint32_t c, const uint8_t *p, size_t n) {
    uint64_t c64 = c;
    while (n && ((uintptr_t)p & 7)) {
        c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c64;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

/* CRC-32C of many spans, three at a time: the instruction takes three cycles but can start one
 * a cycle, so three independent chains run in the time of one. Each span's bytes are still
 * consumed in order; the three share a common length, and each finishes its own tail. */
__attribute__((target("sse4.2"))) static void spans_sse42(const uint8_t *buf, const int64_t *st, const int64_t *ln,
                                                          uint32_t *out, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const uint8_t *a = buf + st[i], *b = buf + st[i + 1], *c = buf + st[i + 2];
        size_t common = (size_t)ln[i];
        if ((size_t)ln[i + 1] < common)
            common = (size_t)ln[i + 1];
        if ((size_t)ln[i + 2] < common)
            common = (size_t)ln[i + 2];
        common &= ~(size_t)7;
        uint64_t ca = 0xFFFFFFFFu, cb = 0xFFFFFFFFu, cc = 0xFFFFFFFFu;
        for (size_t k = 0; k < common; k += 8) {
            uint64_t va, vb, vc;
            memcpy(&va, a + k, 8);
            memcpy(&vb, b + k, 8);
            memcpy(&vc, c + k, 8);
            ca = __builtin_ia32_crc32di(ca, va);
            cb = __builtin_ia32_crc32di(cb, vb);
            cc = __builtin_ia32_crc32di(cc, vc);
        }
        out[i] = ~crc_update_sse42((uint32_t)ca, a + common, (size_t)ln[i] - common);
        out[i + 1] = ~crc_update_sse42((uint32_t)cb, b + common, (size_t)ln[i + 1] - common);
        out[i + 2] = ~crc_update_sse42((uint32_t)cc, c + common, (size_t)ln[i + 2] - common);
    }
    for (; i < n; i++)
        out[i] = ~crc_update_sse42(0xFFFFFFFFu, buf + st[i], (size_t)ln[i]);
}
#endif

/* The raw update every call uses: the instruction's when the CPU has it (set at import). */
static uint32_t (*update)(uint32_t, const uint8_t *, size_t) = crc_update;

static PyObject *crc32c_call(PyObject *args, PyObject *kwargs, const char *format,
                             uint32_t (*raw_update)(uint32_t, const uint8_t *, size_t)) {
    static char *kwlist[] = {"data", "crc", NULL};
    Py_buffer b;
    PyObject *crc_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, kwlist, &b, &crc_obj))
        return NULL;
    uint32_t crc = 0;
    if (crc_obj != NULL) {
        unsigned long long v = PyLong_AsUnsignedLongLong(crc_obj);
        if (PyErr_Occurred() || v > 0xFFFFFFFFull) {
            PyBuffer_Release(&b);
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "crc must be an int in [0, 2**32)");
            return NULL;
        }
        crc = (uint32_t)v;
    }
    uint32_t r = ~raw_update(~crc, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(r);
}

static PyObject *py_crc32c(PyObject *self, PyObject *args, PyObject *kwargs) {
    return crc32c_call(args, kwargs, "y*|O:crc32c", update);
}

static PyObject *py_crc32c_table(PyObject *self, PyObject *args, PyObject *kwargs) {
    return crc32c_call(args, kwargs, "y*|O:crc32c_table", crc_update);
}

/* crc32c_spans(buffer, starts int64[n], lengths int64[n], out uint32[n], table=False) -> None
 * `table`: the slice-by-8 path even where the instruction is there (to compare the two). */
static PyObject *py_crc32c_spans(PyObject *self, PyObject *args) {
    Py_buffer b, s, l, o;
    int table_only = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*w*|p:crc32c_spans", &b, &s, &l, &o, &table_only))
        return NULL;
    uint32_t (*raw_update)(uint32_t, const uint8_t *, size_t) = table_only ? crc_update : update;
    PyObject *result = NULL;
    if (s.len % 8 || l.len != s.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths must be int64 arrays of the same length");
        goto done;
    }
    Py_ssize_t n = s.len / 8;
    if (o.len != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "out must be a uint32 array of one entry a span");
        goto done;
    }
    const int64_t *st = s.buf, *ln = l.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] < 0 || ln[i] < 0 || st[i] > b.len || ln[i] > b.len - st[i]) {
            PyErr_Format(PyExc_ValueError, "span %zd [%lld, +%lld) outside a buffer of %zd bytes", i,
                         (long long)st[i], (long long)ln[i], b.len);
            goto done;
        }
    }
    {
        const uint8_t *buf = b.buf;
        uint32_t *out = o.buf;
        Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_SSE42_PATH
        if (raw_update == crc_update_sse42)
            spans_sse42(buf, st, ln, out, n);
        else
#endif
            for (Py_ssize_t i = 0; i < n; i++)
                out[i] = ~raw_update(~0u, buf + st[i], (size_t)ln[i]);
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

static PyMethodDef methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_VARARGS | METH_KEYWORDS,
     "crc32c(data, crc=0) -> int: CRC-32C (Castagnoli) of a bytes-like object, continuing `crc`."},
    {"crc32c_table", (PyCFunction)(void (*)(void))py_crc32c_table, METH_VARARGS | METH_KEYWORDS,
     "crc32c_table(data, crc=0) -> int: as crc32c, always with the slice-by-8 tables."},
    {"crc32c_spans", py_crc32c_spans, METH_VARARGS,
     "crc32c_spans(buffer, starts_int64, lengths_int64, out_uint32, table=False) -> None: CRC-32C of many spans."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crc32c",
                                    "CRC-32C (Castagnoli), as Kafka's Crc32C, in C (crc32 instruction or slice-by-8).", -1, methods};

PyMODINIT_FUNC PyInit__crc32c(void) {
    crc_init();
    const char *implementation = "slice-by-8";
#ifdef HAVE_SSE42_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        update = crc_update_sse42;
        implementation = "sse4.2";
    }
#endif
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "implementation", implementation) < 0)
        Py_CLEAR(m);
    return m;
}
