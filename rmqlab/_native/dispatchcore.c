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
 * The readable twin is rmqlab.store.indexservice.expand_columns followed by
 * rmqlab.jvm.hashcode.index_hash_many; the tests compare the two on random columns.
 *
 * Inputs are NumPy object arrays (buffers of format 'O') of str or None, as commitlog.read_columns
 * decodes them, or (the *_utf8 twins) Arrow large_string buffers with the topic as dictionary
 * codes, as read_columns(arrow=True) decodes them. An object that is not a str (a legacy
 * not-ready string) raises TypeError and the caller takes the slower Arrow expansion. The GIL is
 * held over object arrays (it keeps the objects alive) and released over Arrow buffers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "javahash.h"

#define KEY_SEPARATOR 0x20u
#define HASH_SEPARATOR 0x23u   /* '#' between topic and key */

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

/* ---- Arrow columns ------------------------------------------------------------------------ */

/* A large_string column: int64 offsets (n + 1), UTF-8 data, and a byte a row saying the value is
 * present (None: every value is). Arrow guarantees the text is UTF-8; a space (0x20) is never
 * part of a multi-byte sequence, so tokens are split on bytes. */
typedef struct {
    Py_buffer off, data, valid;
    const int64_t *o;
    const uint8_t *d, *v;
} utf8col;

static void release_utf8(utf8col *c)
{
    if (c->off.obj) PyBuffer_Release(&c->off);
    if (c->data.obj) PyBuffer_Release(&c->data);
    if (c->valid.obj) PyBuffer_Release(&c->valid);
}

static int get_utf8(PyObject *off, PyObject *data, PyObject *valid, Py_ssize_t n, const char *name, utf8col *c)
{
    memset(c, 0, sizeof *c);
    if (PyObject_GetBuffer(off, &c->off, PyBUF_C_CONTIGUOUS) < 0
        || PyObject_GetBuffer(data, &c->data, PyBUF_C_CONTIGUOUS) < 0
        || (valid != Py_None && PyObject_GetBuffer(valid, &c->valid, PyBUF_C_CONTIGUOUS) < 0)) {
        release_utf8(c);
        return -1;
    }
    c->o = (const int64_t *)c->off.buf;
    c->d = (const uint8_t *)c->data.buf;
    c->v = valid == Py_None ? NULL : (const uint8_t *)c->valid.buf;
    if (c->off.len != (n + 1) * 8 || (c->v && c->valid.len != n)) {
        PyErr_Format(PyExc_ValueError, "%s: offsets must be int64[n + 1] and valid uint8[n]", name);
        release_utf8(c);
        return -1;
    }
    if (c->o[0] < 0 || c->o[n] > c->data.len) goto bad;
    for (Py_ssize_t i = 0; i < n; i++)
        if (c->o[i + 1] < c->o[i]) goto bad;
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%s: offsets outside the data or decreasing", name);
    release_utf8(c);
    return -1;
}

/* Row i's value of c: 1 (span set), or 0 when it is null. */
static inline int utf8_value(const utf8col *c, Py_ssize_t i, const uint8_t **p, Py_ssize_t *len)
{
    if (c->v && !c->v[i]) return 0;
    *p = c->d + c->o[i];
    *len = (Py_ssize_t)(c->o[i + 1] - c->o[i]);
    return 1;
}

PyDoc_STRVAR(count_keys_utf8_doc,
"count_keys_utf8(keys_offsets, keys_data, keys_valid, uniq_offsets, uniq_data, uniq_valid, out) -> int\n\n"
"count_keys over Arrow large_string columns (int64 offsets of n + 1 entries, UTF-8 data, a\n"
"uint8 validity a row or None): the index keys of every message into out (int32[n]).");

static PyObject *dc_count_keys_utf8(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ko, *kd, *kv, *uo, *ud, *uv, *ret = NULL;
    Py_buffer out = {0};
    utf8col keys, uniq;
    if (!PyArg_ParseTuple(args, "OOOOOOw*:count_keys_utf8", &ko, &kd, &kv, &uo, &ud, &uv, &out)) return NULL;
    Py_ssize_t n = out.len / 4;
    if (out.len % 4) {
        PyErr_SetString(PyExc_ValueError, "out must hold one int32 a message");
        PyBuffer_Release(&out);
        return NULL;
    }
    if (get_utf8(ko, kd, kv, n, "keys", &keys) < 0) { PyBuffer_Release(&out); return NULL; }
    if (get_utf8(uo, ud, uv, n, "uniq_key", &uniq) < 0) { release_utf8(&keys); PyBuffer_Release(&out); return NULL; }
    int32_t *counts = (int32_t *)out.buf;
    long long total = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *p;
        Py_ssize_t len;
        int32_t k = (int32_t)(!uniq.v || uniq.v[i]);
        if (utf8_value(&keys, i, &p, &len)) {
            int in_token = 0;
            for (Py_ssize_t j = 0; j < len; j++) {
                int sep = p[j] == KEY_SEPARATOR;
                k += !sep && !in_token;
                in_token = !sep;
            }
        }
        counts[i] = k;
        total += k;
    }
    Py_END_ALLOW_THREADS
    ret = PyLong_FromLongLong(total);
    release_utf8(&keys);
    release_utf8(&uniq);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(key_hashes_utf8_doc,
"key_hashes_utf8(topic_codes, prefixes, keys_offsets, keys_data, keys_valid, uniq_offsets, uniq_data,\n"
"                uniq_valid, keep, message_index, hashes) -> int\n\n"
"key_hashes over Arrow columns: the topic as int32 dictionary codes into prefixes (uint32, the\n"
"hashCode state after topic + '#' of each dictionary value), KEYS and UNIQ_KEY as in\n"
"count_keys_utf8. ValueError for text that is not UTF-8 or outputs of the wrong size.");

static PyObject *dc_key_hashes_utf8(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *tc, *pf, *ko, *kd, *kv, *uo, *ud, *uv, *ret = NULL;
    Py_buffer codes = {0}, prefixes = {0}, keep = {0}, midx = {0}, hashes = {0};
    utf8col keys = {0}, uniq = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOy*w*w*:key_hashes_utf8", &tc, &pf, &ko, &kd, &kv, &uo, &ud, &uv, &keep,
                          &midx, &hashes))
        return NULL;
    Py_ssize_t n = keep.len;
    if (PyObject_GetBuffer(tc, &codes, PyBUF_C_CONTIGUOUS) < 0
        || PyObject_GetBuffer(pf, &prefixes, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (codes.len != n * 4 || prefixes.len % 4) {
        PyErr_SetString(PyExc_ValueError, "topic_codes must be int32[n] and prefixes uint32[k]");
        goto done;
    }
    if (get_utf8(ko, kd, kv, n, "keys", &keys) < 0 || get_utf8(uo, ud, uv, n, "uniq_key", &uniq) < 0) goto done;
    Py_ssize_t cap = hashes.len / 4, k = prefixes.len / 4;
    if (hashes.len % 4 != 0 || midx.len != cap * 8) {
        PyErr_SetString(PyExc_ValueError, "message_index (int64) and hashes (int32) differ in length");
        goto done;
    }
    const int32_t *tcode = (const int32_t *)codes.buf;
    const uint32_t *pre = (const uint32_t *)prefixes.buf;
    const uint8_t *kp = (const uint8_t *)keep.buf;
    int64_t *mi = (int64_t *)midx.buf;
    int32_t *hs = (int32_t *)hashes.buf;
    Py_ssize_t w = 0, bad_row = -1;
    int why = 0;   /* 1 topic code, 2 not UTF-8, 3 outputs too short */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && bad_row < 0; i++) {
        if (!kp[i]) continue;
        if (tcode[i] < 0 || tcode[i] >= k) { bad_row = i; why = 1; break; }
        uint32_t prefix = pre[tcode[i]], h;
        const uint8_t *p;
        Py_ssize_t len;
        if (utf8_value(&uniq, i, &p, &len)) {
            if (w >= cap) { bad_row = i; why = 3; break; }
            if (hash_utf8_from(prefix, p, len, &h) < 0) { bad_row = i; why = 2; break; }
            mi[w] = i;
            hs[w++] = index_hash(h);
        }
        if (!utf8_value(&keys, i, &p, &len)) continue;
        Py_ssize_t j = 0;
        while (j < len) {
            while (j < len && p[j] == KEY_SEPARATOR) j++;
            Py_ssize_t start = j;
            while (j < len && p[j] != KEY_SEPARATOR) j++;
            if (j > start) {
                if (w >= cap) { bad_row = i; why = 3; break; }
                if (hash_utf8_from(prefix, p + start, j - start, &h) < 0) { bad_row = i; why = 2; break; }
                mi[w] = i;
                hs[w++] = index_hash(h);
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad_row >= 0) {
        PyErr_Format(PyExc_ValueError, why == 1 ? "row %zd: topic code outside the prefixes"
                     : why == 2 ? "row %zd: key text is not UTF-8" : "row %zd: outputs too short", bad_row);
        goto done;
    }
    if (w != cap) {
        PyErr_Format(PyExc_ValueError, "%zd keys for outputs of %zd", w, cap);
        goto done;
    }
    ret = PyLong_FromSsize_t(w);
done:
    if (codes.obj) PyBuffer_Release(&codes);
    if (prefixes.obj) PyBuffer_Release(&prefixes);
    release_utf8(&keys);
    release_utf8(&uniq);
    PyBuffer_Release(&keep);
    PyBuffer_Release(&midx);
    PyBuffer_Release(&hashes);
    return ret;
}

static PyMethodDef dc_methods[] = {
    {"count_keys", dc_count_keys, METH_VARARGS, count_keys_doc},
    {"key_hashes", dc_key_hashes, METH_VARARGS, key_hashes_doc},
    {"count_keys_utf8", dc_count_keys_utf8, METH_VARARGS, count_keys_utf8_doc},
    {"key_hashes_utf8", dc_key_hashes_utf8, METH_VARARGS, key_hashes_utf8_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef dc_module = {
    PyModuleDef_HEAD_INIT, "rmqlab._dispatchcore",
    "The index keys of the broker's dispatch, hashed from message columns (see rmqlab.store.indexservice).",
    -1, dc_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dispatchcore(void) { return PyModule_Create(&dc_module); }
