/* rmqlab._jhash: Java's String.hashCode() over Python str, NumPy and Arrow string data.
 *
 * Java hashes UTF-16 code units: h = 31*h + u, wrapping at 32 bits. All arithmetic here is on
 * uint32_t, where C defines wrap-around; the result is reinterpreted as int32 at the end.
 *
 * Speed: the textbook loop is one long dependency chain (a multiply and an add per unit). Here
 * a block of units is first reduced on its own, b = u0*31^(k-1) + ... + u(k-1), and only
 * h = h*31^k + b stays on the chain: 16 units a step for byte-sized units (SSE2 pmaddwd, or a
 * 64-bit word trick for 8), 8 or 4 for wider ones. A 24-character ASCII key costs about 6 ns.
 *
 * Threads: the Arrow and NumPy '<U' entry points release the GIL and split the rows over a few
 * threads. The str-object entry point (list, tuple, NumPy object array) must not release the GIL,
 * since another Python thread could then free a str being read; instead the calling thread keeps
 * the GIL, which freezes every Python object, while helper threads that never touch the C API
 * hash part of the rows next to it.
 *
 * No NumPy C API: results go into any writable C-contiguous buffer of int32 (np.empty(n, np.int32)).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "javahash.h"

#ifndef _WIN32
#include <pthread.h>
#define JH_HAVE_THREADS 1
#else
#define JH_HAVE_THREADS 0
#endif

#define MAX_THREADS 16
/* Below this much work per thread, starting a thread costs more than it saves. */
#define MIN_BYTES_PER_THREAD (256 * 1024)
#define MIN_OBJECTS_PER_THREAD 32768

/* Bad-row causes reported by the workers, which cannot raise. */
enum { BAD_NONE = 0, BAD_OFFSETS, BAD_UTF8, BAD_CODEPOINT, BAD_OBJECT };

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

static inline uint32_t ld_u32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline int64_t ld_i32(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline int64_t ld_i64(const void *p) { int64_t v; memcpy(&v, p, 8); return v; }

/* ---- rows, threads ------------------------------------------------------------------------ */

typedef struct task task_t;

/* Hash rows [lo, hi) of a task. Returns -1, or the first bad row with *why set. Never calls
 * the C API, so it may run on any thread. */
typedef Py_ssize_t (*rows_fn)(const task_t *t, Py_ssize_t lo, Py_ssize_t hi, int *why);

struct task {
    /* what to hash */
    const uint8_t *data;      /* Arrow data buffer, or NumPy UCS4 bytes */
    Py_ssize_t data_len;      /* bytes */
    const uint8_t *offsets;   /* Arrow offsets, already advanced to the array's .offset */
    int off_size;             /* 4 (string) or 8 (large_string) */
    Py_ssize_t width;         /* NumPy: code points per element */
    PyObject *const *items;   /* list, tuple or object-array items */
    uint8_t *out;             /* int32 results, row i at out + 4*i */
    Py_ssize_t n;             /* rows */
    rows_fn fn;
    /* shared between workers */
    Py_ssize_t next_block;
    int stop;
    /* per worker: its first bad row, or -1 */
    Py_ssize_t bad_row[MAX_THREADS];
    int bad_why[MAX_THREADS];
};

/* Rows are handed out in blocks from a shared counter rather than split up front: on a machine
 * where another process keeps a core busy, a fixed half would leave one thread waiting for the
 * other. Blocks are claimed in row order, which keeps "lowest bad row" well defined. */
#define BLOCK_ROWS 8192

#if JH_HAVE_THREADS
#define ATOMIC_FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#else
#define ATOMIC_FETCH_ADD(p, v) ((*(p) += (v)) - (v))
#define ATOMIC_LOAD(p) (*(p))
#define ATOMIC_STORE(p, v) (*(p) = (v))
#endif

typedef struct { task_t *task; int id; } worker_t;

static void *work(void *arg)
{
    worker_t *w = (worker_t *)arg;
    task_t *t = w->task;
    /* A bad row stops new claims; blocks already claimed (all lower) still finish, so the
     * lowest bad row over all workers is the lowest bad row of the input. */
    while (!ATOMIC_LOAD(&t->stop)) {
        Py_ssize_t lo = ATOMIC_FETCH_ADD(&t->next_block, 1) * BLOCK_ROWS;
        if (lo >= t->n) break;
        Py_ssize_t hi = t->n - lo > BLOCK_ROWS ? lo + BLOCK_ROWS : t->n;
        int why = BAD_NONE;
        Py_ssize_t bad = t->fn(t, lo, hi, &why);
        if (bad >= 0) {
            t->bad_row[w->id] = bad;
            t->bad_why[w->id] = why;
            ATOMIC_STORE(&t->stop, 1);
            break;
        }
    }
    return NULL;
}

/* Run a task on the calling thread plus up to nthreads-1 helpers (fewer if a thread cannot be
 * started). Returns the lowest bad row, or -1, with *why set. */
static Py_ssize_t run_task(task_t *t, int nthreads, int *why)
{
    worker_t w[MAX_THREADS];
    t->next_block = 0;
    t->stop = 0;
    for (int i = 0; i < MAX_THREADS; i++) { t->bad_row[i] = -1; t->bad_why[i] = BAD_NONE; }
    for (int i = 0; i < nthreads; i++) { w[i].task = t; w[i].id = i; }
#if JH_HAVE_THREADS
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int i = 1; i < nthreads; i++)
        started[i] = pthread_create(&tid[i], NULL, work, &w[i]) == 0;
    work(&w[0]);
    for (int i = 1; i < nthreads; i++)
        if (started[i]) pthread_join(tid[i], NULL);
#else
    (void)nthreads;
    work(&w[0]);
#endif
    Py_ssize_t first = -1;
    for (int i = 0; i < MAX_THREADS; i++) {
        if (t->bad_row[i] >= 0 && (first < 0 || t->bad_row[i] < first)) {
            first = t->bad_row[i];
            *why = t->bad_why[i];
        }
    }
    return first;
}

/* Threads worth starting for `work_units` of work at `per_thread` units each at least. */
static int clamp_threads(int want, Py_ssize_t work_units, Py_ssize_t per_thread)
{
    Py_ssize_t by_size = work_units / per_thread;
#ifdef Py_GIL_DISABLED
    /* Free-threaded CPython: nothing would stop other threads from mutating the inputs. */
    want = 1;
#endif
    if (want > MAX_THREADS) want = MAX_THREADS;
    if ((Py_ssize_t)want > by_size) want = (int)by_size;
    return want < 1 ? 1 : want;
}

static PyObject *raise_bad(Py_ssize_t row, int why)
{
    switch (why) {
    case BAD_OFFSETS:
        return PyErr_Format(PyExc_ValueError,
                            "element %zd: offsets point outside the data buffer", row);
    case BAD_UTF8:
        return PyErr_Format(PyExc_ValueError, "element %zd: invalid UTF-8", row);
    default:
        return PyErr_Format(PyExc_ValueError, "element %zd: code point above U+10FFFF", row);
    }
}

static inline int64_t load_off(const task_t *t, Py_ssize_t i)
{
    const uint8_t *q = t->offsets + (size_t)i * (size_t)t->off_size;
    return t->off_size == 4 ? ld_i32(q) : ld_i64(q);
}

static Py_ssize_t utf8_rows(const task_t *t, Py_ssize_t lo, Py_ssize_t hi, int *why)
{
    int64_t a = load_off(t, lo);
    for (Py_ssize_t i = lo; i < hi; i++) {
        int64_t b = load_off(t, i + 1);
        uint32_t h;
        /* Offsets come from a foreign buffer: never read outside the data buffer. */
        if (a < 0 || b < a || b > (int64_t)t->data_len) { *why = BAD_OFFSETS; return i; }
        if (hash_utf8(t->data + a, (Py_ssize_t)(b - a), &h) < 0) { *why = BAD_UTF8; return i; }
        memcpy(t->out + 4 * (size_t)i, &h, 4);
        a = b;
    }
    return -1;
}

/* Python str objects, possibly on helper threads while the calling thread holds the GIL: no
 * Python code can run meanwhile, so the container and its strings can neither change nor be
 * freed, and this only reads them (no reference counts, no allocation). A row that needs the
 * C API (a non-str, a legacy not-yet-ready string) is left to the caller. */
static Py_ssize_t obj_rows(const task_t *t, Py_ssize_t lo, Py_ssize_t hi, int *why)
{
    PyObject *const *items = t->items;
    for (Py_ssize_t i = lo; i < hi; i++) {
        PyObject *s = items[i];
        /* The str objects are scattered over the heap; fetch ahead to overlap the misses. */
        if (i + 8 < hi) PREFETCH(items[i + 8]);
        if (s == NULL || !PyUnicode_Check(s)
#if PY_VERSION_HEX < 0x030C0000
            || !PyUnicode_IS_READY(s)
#endif
        ) {
            *why = BAD_OBJECT;
            return i;
        }
        uint32_t h = hash_str(s);
        memcpy(t->out + 4 * (size_t)i, &h, 4);
    }
    return -1;
}

/* NumPy '<U{width}': fixed-width UCS4, and trailing NULs are padding, not characters. */
static Py_ssize_t ucs4_rows(const task_t *t, Py_ssize_t lo, Py_ssize_t hi, int *why)
{
    const Py_ssize_t w = t->width;
    for (Py_ssize_t i = lo; i < hi; i++) {
        const uint8_t *e = t->data + (size_t)i * (size_t)w * 4;
        Py_ssize_t n = w, k = 0;
        while (n > 0 && ld_u32(e + 4 * (size_t)(n - 1)) == 0) n--;
        uint32_t h = 0;
        while (k < n) {
            const uint8_t *q = e + 4 * k;
            if (n - k >= 8) {
                uint32_t c0 = ld_u32(q), c1 = ld_u32(q + 4), c2 = ld_u32(q + 8);
                uint32_t c3 = ld_u32(q + 12), c4 = ld_u32(q + 16), c5 = ld_u32(q + 20);
                uint32_t c6 = ld_u32(q + 24), c7 = ld_u32(q + 28);
                if ((c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7) <= 0xFFFF) {
                    h = fold8(h, c0, c1, c2, c3, c4, c5, c6, c7);
                    k += 8;
                    continue;
                }
            }
            uint32_t c = ld_u32(q);     /* one at a time near pairs and at the tail */
            if (c > 0x10FFFF) { *why = BAD_CODEPOINT; return i; }
            h = step_cp(h, c);
            k++;
        }
        memcpy(t->out + 4 * (size_t)i, &h, 4);
    }
    return -1;
}

static int check_out(Py_buffer *out, Py_ssize_t n)
{
    if (out->readonly || out->len != n * 4) {
        PyErr_Format(PyExc_ValueError,
                     "out must be a writable buffer of %zd int32 values (%zd bytes), got %zd bytes",
                     n, n * 4, out->len);
        return -1;
    }
    return 0;
}

/* ---- Python entry points ------------------------------------------------------------------ */

PyDoc_STRVAR(hash_one_doc,
"hash_one(s: str) -> int\n\n"
"java.lang.String.hashCode() of s as a signed 32-bit int. Cost: O(len(s)); about 50 ns a\n"
"call for a short key, under 1 ns a character on long ASCII strings.");

static PyObject *jh_hash_one(PyObject *self, PyObject *s)
{
    (void)self;
    if (!PyUnicode_Check(s))
        return PyErr_Format(PyExc_TypeError, "hash_one needs a str, got %.100s",
                            Py_TYPE(s)->tp_name);
    if (ensure_ready(s) < 0) return NULL;
    return PyLong_FromLong((long)(int32_t)hash_str(s));
}

PyDoc_STRVAR(hash_objects_doc,
"hash_objects(objs, out, threads=1) -> None\n\n"
"Hash every str of a list, a tuple, or a C-contiguous buffer of object pointers (format 'O',\n"
"a NumPy object array) into out, a writable buffer of len(objs) int32. Keeps the GIL; with\n"
"threads > 1 and at least 32768 strings a thread, helper threads hash rows meanwhile.\n"
"TypeError names the first element that is not a str.");

static PyObject *jh_hash_objects(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs;
    Py_buffer out, src = {0};
    int threads = 1, why = BAD_NONE;
    PyObject *ret = NULL;
    task_t t;
    memset(&t, 0, sizeof t);
    if (!PyArg_ParseTuple(args, "Ow*|i:hash_objects", &objs, &out, &threads)) return NULL;

    if (PyList_Check(objs) || PyTuple_Check(objs)) {
        t.items = PySequence_Fast_ITEMS(objs);
        t.n = PySequence_Fast_GET_SIZE(objs);
    } else {
        if (PyObject_GetBuffer(objs, &src, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (src.format == NULL || strcmp(src.format, "O") != 0
            || src.itemsize != (Py_ssize_t)sizeof(PyObject *)) {
            PyErr_SetString(PyExc_TypeError,
                            "hash_objects needs a list, a tuple or an object-pointer buffer");
            goto done;
        }
        t.items = (PyObject *const *)src.buf;
        t.n = src.len / src.itemsize;
    }
    if (check_out(&out, t.n) < 0) goto done;
    t.out = (uint8_t *)out.buf;
    t.fn = obj_rows;

    /* Deliberately no Py_BEGIN_ALLOW_THREADS: holding the GIL is what keeps the objects alive. */
    Py_ssize_t bad = run_task(&t, clamp_threads(threads, t.n, MIN_OBJECTS_PER_THREAD), &why);

    /* Every row below `bad` is done. Finish the rest with the C API, which readies legacy
     * strings and names the first non-str. */
    for (Py_ssize_t i = bad; i >= 0 && i < t.n; i++) {
        PyObject *s = t.items[i];
        if (s == NULL || !PyUnicode_Check(s)) {
            PyErr_Format(PyExc_TypeError, "element %zd is %.100s, not str", i,
                         s == NULL ? "NULL" : (s == Py_None ? "None" : Py_TYPE(s)->tp_name));
            goto done;
        }
        if (ensure_ready(s) < 0) goto done;
        uint32_t h = hash_str(s);
        memcpy(t.out + 4 * (size_t)i, &h, 4);
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    if (src.obj) PyBuffer_Release(&src);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(hash_utf8_doc,
"hash_utf8(offsets, data, offset_size, start, n, out, threads=1, base=0) -> None\n\n"
"Hash n strings of an Arrow string array straight from its buffers: offsets holds int32\n"
"(offset_size 4) or int64 (8) offsets, data the UTF-8 bytes, start is the array's .offset.\n"
"Nulls are not looked at (the caller rejects them). Releases the GIL; uses up to `threads`\n"
"threads, one per 256 KiB of text at most. Malformed offsets or UTF-8 raise ValueError naming\n"
"the element, counted from `base`.");

static PyObject *jh_hash_utf8(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer offs, data, out;
    int off_size, threads = 1, why = BAD_NONE;
    Py_ssize_t start, n, base = 0, bad;
    PyObject *ret = NULL;
    task_t t;
    memset(&t, 0, sizeof t);
    if (!PyArg_ParseTuple(args, "y*y*innw*|in:hash_utf8", &offs, &data, &off_size, &start, &n,
                          &out, &threads, &base))
        return NULL;
    if (off_size != 4 && off_size != 8) {
        PyErr_SetString(PyExc_ValueError, "offset_size must be 4 or 8");
        goto done;
    }
    if (start < 0 || n < 0 || (n > 0 && (start + n + 1) * (Py_ssize_t)off_size > offs.len)) {
        PyErr_SetString(PyExc_ValueError, "offsets buffer too short for start and n");
        goto done;
    }
    if (check_out(&out, n) < 0) goto done;
    if (n > 0) {
        t.data = (const uint8_t *)data.buf;
        t.data_len = data.len;
        t.offsets = (const uint8_t *)offs.buf + (size_t)start * (size_t)off_size;
        t.off_size = off_size;
        t.out = (uint8_t *)out.buf;
        t.n = n;
        t.fn = utf8_rows;
        int64_t text = load_off(&t, n) - load_off(&t, 0);
        int nt = clamp_threads(threads, text > 0 ? (Py_ssize_t)text : 0, MIN_BYTES_PER_THREAD);
        Py_BEGIN_ALLOW_THREADS
        bad = run_task(&t, nt, &why);
        Py_END_ALLOW_THREADS
        if (bad >= 0) { raise_bad(base + bad, why); goto done; }
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(hash_ucs4_doc,
"hash_ucs4(data, width, out, threads=1) -> None\n\n"
"Hash the strings of a C-contiguous native-endian NumPy '<U{width}' array given as a buffer\n"
"(width code points per element; trailing NULs are padding, as in NumPy). Code points above\n"
"U+FFFF become surrogate pairs; values above U+10FFFF raise ValueError naming the element.\n"
"Releases the GIL; uses up to `threads` threads, one per 256 KiB of data at most.");

static PyObject *jh_hash_ucs4(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data, out;
    Py_ssize_t width, bad;
    int threads = 1, why = BAD_NONE;
    PyObject *ret = NULL;
    task_t t;
    memset(&t, 0, sizeof t);
    if (!PyArg_ParseTuple(args, "y*nw*|i:hash_ucs4", &data, &width, &out, &threads)) return NULL;
    Py_ssize_t n = out.len / 4;
    if (width < 0 || out.len % 4 != 0 || data.len != n * width * 4) {
        PyErr_SetString(PyExc_ValueError, "data must hold len(out) elements of width*4 bytes");
        goto done;
    }
    if (check_out(&out, n) < 0) goto done;
    t.data = (const uint8_t *)data.buf;
    t.data_len = data.len;
    t.width = width;
    t.out = (uint8_t *)out.buf;
    t.n = n;
    t.fn = ucs4_rows;
    int nt = clamp_threads(threads, data.len, MIN_BYTES_PER_THREAD);
    Py_BEGIN_ALLOW_THREADS
    bad = run_task(&t, nt, &why);
    Py_END_ALLOW_THREADS
    if (bad >= 0) { raise_bad(bad, why); goto done; }
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(hash_many_doc,
"hash_many(strings) -> numpy.ndarray[int32]\n\n"
"Same as rmqlab.jvm.hashcode.java_hash_many, which picks the buffer path for each container type\n"
"(list, tuple, NumPy '<U' or object array, pyarrow string arrays, pandas) and calls the\n"
"other functions of this module. Cost: O(total length), about 5-20 ns a short key.");

static PyObject *jh_hash_many(PyObject *self, PyObject *strings)
{
    (void)self;
    /* The container dispatch needs NumPy and pyarrow objects; it is simpler in Python. */
    PyObject *mod = PyImport_ImportModule("rmqlab.jvm.hashcode");
    if (mod == NULL) return NULL;
    PyObject *ret = PyObject_CallMethod(mod, "java_hash_many", "O", strings);
    Py_DECREF(mod);
    return ret;
}

static PyMethodDef jh_methods[] = {
    {"hash_many", jh_hash_many, METH_O, hash_many_doc},
    {"hash_one", jh_hash_one, METH_O, hash_one_doc},
    {"hash_objects", jh_hash_objects, METH_VARARGS, hash_objects_doc},
    {"hash_utf8", jh_hash_utf8, METH_VARARGS, hash_utf8_doc},
    {"hash_ucs4", jh_hash_ucs4, METH_VARARGS, hash_ucs4_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef jh_module = {
    PyModuleDef_HEAD_INIT, "rmqlab._jhash",
    "Java String.hashCode() over str, NumPy and Arrow string data (see rmqlab.jvm.hashcode).",
    -1, jh_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jhash(void) { return PyModule_Create(&jh_module); }
