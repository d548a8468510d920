/*
 * rmqlab._dispatchcore: the index keys of the broker's dispatch (IndexService.buildIndex), hashed
 * straight from the message columns, without building one "topic#key" string per key.
 *
 * Per message, buildIndex puts UNIQ_KEY first (whenever it is present, even empty), then every
 * non-empty token of KEYS split on one space (MessageConst.KEY_SEPARATOR). Each put hashes
 * topic + "#" + key with String.hashCode, over UTF-16 code units: h = 31*h + unit, mod 2^32. That
 * hash continues from a prefix, so the state after topic + "#" is computed once per message and
 * each key continues from it. A space is the unit 0x20 in every PyUnicode kind and never part of
 * a surrogate pair, so tokens are split on units. IndexFile.indexKeyHashMethod then takes abs(),
 * mapping Integer.MIN_VALUE to 0.
 *
 * The readable twin is rmqlab.indexservice.expand_columns followed by
 * rmqlab.javahash.index_hash_many; the tests compare the two on random columns.
 *
 * Inputs are NumPy object arrays (buffers of format 'O') of str or None, as commitlog.read_columns
 * decodes them. Anything else (a non-str, a legacy not-ready string) raises TypeError and the
 * caller takes the Arrow path. The GIL is held throughout: it keeps the objects alive.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define KEY_SEPARATOR 0x20u
#define HASH_SEPARATOR 0x23u   /* '#' between topic and key */

/* A code point as Java stores it: one unit in the BMP, else a surrogate pair. */
static inline uint32_t step_cp(uint32_t h, uint32_t c)
{
    if (c > 0xFFFF) {
        c -= 0x10000;
        h = h * 31 + (0xD800 + (c >> 10));
        return h * 31 + (0xDC00 + (c & 0x3FF));
    }
    return h * 31 + c;
}

/* One str as a run of units of its kind. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t len;
} units_t;

static inline uint32_t unit_at(const units_t *u, Py_ssize_t i)
{
    switch (u->kind) {
    case PyUnicode_1BYTE_KIND: return ((const uint8_t *)u->data)[i];
    case PyUnicode_2BYTE_KIND: return ((const uint16_t *)u->data)[i];
    default:                   return ((const uint32_t *)u->data)[i];
    }
}

/* Continue hash h over units [lo, hi) of u. */
static uint32_t hash_range(uint32_t h, const units_t *u, Py_ssize_t lo, Py_ssize_t hi)
{
    if (u->kind == PyUnicode_1BYTE_KIND) {
        const uint8_t *p = (const uint8_t *)u->data;
        Py_ssize_t i = lo;
        /* four units a step: only h*31^4 stays on the dependency chain */
        for (; i + 4 <= hi; i += 4)
            h = h * 923521u + (p[i] * 29791u + p[i + 1] * 961u + p[i + 2] * 31u + p[i + 3]);
        for (; i < hi; i++) h = h * 31 + p[i];
        return h;
    }
    if (u->kind == PyUnicode_2BYTE_KIND) {
        const uint16_t *p = (const uint16_t *)u->data;
        for (Py_ssize_t i = lo; i < hi; i++) h = h * 31 + p[i];
        return h;
    }
    const uint32_t *p = (const uint32_t *)u->data;
    for (Py_ssize_t i = lo; i < hi; i++) h = step_cp(h, p[i]);
    return h;
}

static inline int32_t index_hash(uint32_t h)
{
    int32_t s = (int32_t)h;
    if (s == INT32_MIN) return 0;
    return s < 0 ? -s : s;
}

/* 1: a str (units set), 0: None, -1: anything else (the caller raises). */
static inline int as_units(PyObject *o, units_t *u)
{
    if (o == Py_None) return 0;
    if (o == NULL || !PyUnicode_Check(o)) return -1;
#if PY_VERSION_HEX < 0x030C0000
    if (!PyUnicode_IS_READY(o)) return -1;
#endif
    u->kind = PyUnicode_KIND(o);
    u->data = PyUnicode_DATA(o);
    u->len = PyUnicode_GET_LENGTH(o);
    return 1;
}

typedef struct {
    Py_buffer topic, keys, uniq;
    PyObject *const *t, *const *k, *const *q;
    Py_ssize_t n;
} columns_t;

static void release_columns(columns_t *c)
{
    if (c->topic.obj) PyBuffer_Release(&c->topic);
    if (c->keys.obj) PyBuffer_Release(&c->keys);
    if (c->uniq.obj) PyBuffer_Release(&c->uniq);
}

static int object_buffer(PyObject *o, Py_buffer *b, const char *name)
{
    if (PyObject_GetBuffer(o, b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (b->format == NULL || strcmp(b->format, "O") != 0 || b->itemsize != (Py_ssize_t)sizeof(PyObject *)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy object array", name);
        return -1;
    }
    return 0;
}

static int get_columns(PyObject *topic, PyObject *keys, PyObject *uniq, columns_t *c)
{
    memset(c, 0, sizeof *c);
    if (object_buffer(topic, &c->topic, "topic") < 0 || object_buffer(keys, &c->keys, "keys") < 0
        || object_buffer(uniq, &c->uniq, "uniq_key") < 0) {
        release_columns(c);
        return -1;
    }
    c->n = c->topic.len / c->topic.itemsize;
    if (c->keys.len / c->keys.itemsize != c->n || c->uniq.len / c->uniq.itemsize != c->n) {
        PyErr_SetString(PyExc_ValueError, "topic, keys and uniq_key differ in length");
        release_columns(c);
        return -1;
    }
    c->t = (PyObject *const *)c->topic.buf;
    c->k = (PyObject *const *)c->keys.buf;
    c->q = (PyObject *const *)c->uniq.buf;
    return 0;
}

static PyObject *bad_element(const char *column, Py_ssize_t row, PyObject *o)
{
    return PyErr_Format(PyExc_TypeError, "%s element %zd is %.100s, not str%s", column, row,
                        o == NULL ? "NULL" : Py_TYPE(o)->tp_name, column[0] == 't' ? "" : " or None");
}

PyDoc_STRVAR(count_keys_doc,
"count_keys(topic, keys, uniq_key, out) -> int\n\n"
"The number of index keys of every message into out (a writable buffer of len(topic) int32):\n"
"1 for a UNIQ_KEY that is not None, plus the non-empty space-separated tokens of KEYS.\n"
"Returns their sum. topic, keys and uniq_key are NumPy object arrays of equal length (str; keys\n"
"and uniq_key may hold None). TypeError names the first element that is not a str.");

static PyObject *dc_count_keys(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *topic, *keys, *uniq, *ret = NULL;
    Py_buffer out = {0};
    columns_t c;
    if (!PyArg_ParseTuple(args, "OOOw*:count_keys", &topic, &keys, &uniq, &out)) return NULL;
    if (get_columns(topic, keys, uniq, &c) < 0) { PyBuffer_Release(&out); return NULL; }
    if (out.len != c.n * 4) {
        PyErr_SetString(PyExc_ValueError, "out must hold one int32 a message");
        goto done;
    }
    int32_t *counts = (int32_t *)out.buf;
    long long total = 0;
    for (Py_ssize_t i = 0; i < c.n; i++) {
        units_t u;
        int32_t n = 0;
        if (as_units(c.t[i], &u) <= 0) { bad_element("topic", i, c.t[i]); goto done; }
        int r = as_units(c.q[i], &u);
        if (r < 0) { bad_element("uniq_key", i, c.q[i]); goto done; }
        n += r;
        r = as_units(c.k[i], &u);
        if (r < 0) { bad_element("keys", i, c.k[i]); goto done; }
        if (r > 0) {
            int in_token = 0;
            for (Py_ssize_t j = 0; j < u.len; j++) {
                int sep = unit_at(&u, j) == KEY_SEPARATOR;
                n += !sep && !in_token;
                in_token = !sep;
            }
        }
        counts[i] = n;
        total += n;
    }
    ret = PyLong_FromLongLong(total);
done:
    release_columns(&c);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(key_hashes_doc,
"key_hashes(topic, keys, uniq_key, keep, message_index, hashes) -> int\n\n"
"The index hashes of the keys of every message whose keep byte is non-zero, in buildIndex's\n"
"order (UNIQ_KEY, then the KEYS tokens): hashes (int32) gets abs(hashCode(topic + '#' + key))\n"
"with MIN_VALUE as 0, message_index (int64) the message's row. Both must hold exactly the\n"
"kept messages' keys (count_keys). Returns the number written.");

static PyObject *dc_key_hashes(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *topic, *keys, *uniq, *ret = NULL;
    Py_buffer keep = {0}, midx = {0}, hashes = {0};
    columns_t c;
    if (!PyArg_ParseTuple(args, "OOOy*w*w*:key_hashes", &topic, &keys, &uniq, &keep, &midx, &hashes))
        return NULL;
    if (get_columns(topic, keys, uniq, &c) < 0) goto release;
    if (keep.len != c.n) {
        PyErr_SetString(PyExc_ValueError, "keep must hold one byte a message");
        goto done;
    }
    Py_ssize_t cap = hashes.len / 4;
    if (hashes.len % 4 != 0 || midx.len != cap * 8) {
        PyErr_SetString(PyExc_ValueError, "message_index (int64) and hashes (int32) differ in length");
        goto done;
    }
    const uint8_t *kp = (const uint8_t *)keep.buf;
    int64_t *mi = (int64_t *)midx.buf;
    int32_t *hs = (int32_t *)hashes.buf;
    Py_ssize_t w = 0;
    for (Py_ssize_t i = 0; i < c.n; i++) {
        if (!kp[i]) continue;
        units_t t, u;
        if (as_units(c.t[i], &t) <= 0) { bad_element("topic", i, c.t[i]); goto done; }
        uint32_t prefix = hash_range(0, &t, 0, t.len) * 31 + HASH_SEPARATOR;
        int r = as_units(c.q[i], &u);
        if (r < 0) { bad_element("uniq_key", i, c.q[i]); goto done; }
        if (r > 0) {
            if (w >= cap) goto short_out;
            mi[w] = i;
            hs[w++] = index_hash(hash_range(prefix, &u, 0, u.len));
        }
        r = as_units(c.k[i], &u);
        if (r < 0) { bad_element("keys", i, c.k[i]); goto done; }
        if (r == 0) continue;
        Py_ssize_t j = 0;
        while (j < u.len) {
            while (j < u.len && unit_at(&u, j) == KEY_SEPARATOR) j++;
            Py_ssize_t start = j;
            while (j < u.len && unit_at(&u, j) != KEY_SEPARATOR) j++;
            if (j > start) {
                if (w >= cap) goto short_out;
                mi[w] = i;
                hs[w++] = index_hash(hash_range(prefix, &u, start, j));
            }
        }
    }
    if (w != cap) {
        PyErr_Format(PyExc_ValueError, "%zd keys for outputs of %zd", w, cap);
        goto done;
    }
    ret = PyLong_FromSsize_t(w);
    goto done;
short_out:
    PyErr_Format(PyExc_ValueError, "outputs of %zd keys are too short", cap);
done:
    release_columns(&c);
release:
    PyBuffer_Release(&keep);
    PyBuffer_Release(&midx);
    PyBuffer_Release(&hashes);
    return ret;
}

static PyMethodDef dc_methods[] = {
    {"count_keys", dc_count_keys, METH_VARARGS, count_keys_doc},
    {"key_hashes", dc_key_hashes, METH_VARARGS, key_hashes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef dc_module = {
    PyModuleDef_HEAD_INIT, "rmqlab._dispatchcore",
    "The index keys of the broker's dispatch, hashed from message columns (see rmqlab.indexservice).",
    -1, dc_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dispatchcore(void) { return PyModule_Create(&dc_module); }
