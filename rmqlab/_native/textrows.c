/*
 * rmqlab._textrows: text lines made column by column, for dumps of millions of rows.
 *
 *   format_rows(parts, n)  -> (text: bytes, ends: bytes of n int64)
 *       Row i is the concatenation of every part's piece for row i; ends[i] is the end of row i
 *       in text (row i starts at ends[i-1], row 0 at 0). A part is one of
 *         (0, literal)              the same bytes in every row
 *         (1, values)               int64 buffer of n values, written in decimal ("-12")
 *         (2, codes, choices)       uint8 buffer of n codes, each the index of a bytes in the
 *                                   tuple `choices`
 *         (3, texts)                a list of n bytes objects, one a row
 *   interleave(head, head_ends, rows, row_ends, counts) -> bytes
 *       Head line h, then the next counts[h] lines of `rows`, for every head in order (the sum of
 *       counts must be the number of rows); ends as format_rows gives them.
 *
 * The text is sized exactly first (the digits of every value counted), then written once.
 * Python's model of both is rmqlab.tables.text's format_rows_py and interleave_py; they
 * must give the same bytes. Everything goes through the buffer protocol; no NumPy C API.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { LITERAL = 0, DECIMAL = 1, CHOICE = 2, TEXTS = 3 };

typedef struct {
    int kind;
    const char *lit;            /* LITERAL */
    Py_ssize_t lit_len;
    const int64_t *values;      /* DECIMAL */
    const uint8_t *codes;       /* CHOICE */
    const char *choice[256];
    Py_ssize_t choice_len[256];
    Py_ssize_t n_choices;
    PyObject *texts;            /* TEXTS: a list (borrowed from the part) */
} Part;

static int decimal_len(int64_t v) {
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int n = v < 0 ? 2 : 1;
    while (u >= 10) {
        u /= 10;
        n++;
    }
    return n;
}

static char *write_decimal(char *out, int64_t v) {
    char tmp[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *out++ = '-';
    while (k)
        *out++ = tmp[--k];
    return out;
}

/* Parse the parts into `ps` (at most `cap`), holding the buffers in `views`. Returns the count,
 * -1 with an exception set. */
static Py_ssize_t parse_parts(PyObject *parts, Py_ssize_t n, Part *ps, Py_buffer *views, Py_ssize_t cap,
                              Py_ssize_t *held) {
    PyObject *seq = PySequence_Fast(parts, "parts must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t np = PySequence_Fast_GET_SIZE(seq);
    if (np > cap) {
        PyErr_Format(PyExc_ValueError, "at most %zd parts, got %zd", cap, np);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < np; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        Part *p = &ps[i];
        memset(p, 0, sizeof(*p));
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
            PyErr_Format(PyExc_TypeError, "part %zd is not a (kind, ...) tuple", i);
            goto fail;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        if (kind == -1 && PyErr_Occurred())
            goto fail;
        p->kind = (int)kind;
        PyObject *a = PyTuple_GET_ITEM(t, 1);
        if (kind == LITERAL) {
            if (!PyBytes_Check(a)) {
                PyErr_Format(PyExc_TypeError, "part %zd: a literal must be bytes", i);
                goto fail;
            }
            p->lit = PyBytes_AS_STRING(a);
            p->lit_len = PyBytes_GET_SIZE(a);
        } else if (kind == DECIMAL || kind == CHOICE) {
            Py_buffer *v = &views[*held];
            if (PyObject_GetBuffer(a, v, PyBUF_SIMPLE) < 0)
                goto fail;
            (*held)++;
            Py_ssize_t width = kind == DECIMAL ? 8 : 1;
            if (v->len != n * width) {
                PyErr_Format(PyExc_ValueError, "part %zd: %zd bytes for %zd rows of %zd bytes", i, v->len, n, width);
                goto fail;
            }
            if (kind == DECIMAL) {
                p->values = (const int64_t *)v->buf;
            } else {
                p->codes = (const uint8_t *)v->buf;
                PyObject *choices = PyTuple_GET_SIZE(t) > 2 ? PyTuple_GET_ITEM(t, 2) : NULL;
                if (!choices || !PyTuple_Check(choices) || PyTuple_GET_SIZE(choices) < 1 ||
                    PyTuple_GET_SIZE(choices) > 256) {
                    PyErr_Format(PyExc_TypeError, "part %zd: choices must be a tuple of 1 to 256 bytes", i);
                    goto fail;
                }
                p->n_choices = PyTuple_GET_SIZE(choices);
                for (Py_ssize_t c = 0; c < p->n_choices; c++) {
                    PyObject *b = PyTuple_GET_ITEM(choices, c);
                    if (!PyBytes_Check(b)) {
                        PyErr_Format(PyExc_TypeError, "part %zd: choice %zd is not bytes", i, c);
                        goto fail;
                    }
                    p->choice[c] = PyBytes_AS_STRING(b);
                    p->choice_len[c] = PyBytes_GET_SIZE(b);
                }
                for (Py_ssize_t r = 0; r < n; r++)
                    if (p->codes[r] >= p->n_choices) {
                        PyErr_Format(PyExc_ValueError, "part %zd: row %zd has code %d of %zd choices", i, r,
                                     (int)p->codes[r], p->n_choices);
                        goto fail;
                    }
            }
        } else if (kind == TEXTS) {
            if (!PyList_Check(a) || PyList_GET_SIZE(a) != n) {
                PyErr_Format(PyExc_ValueError, "part %zd: texts must be a list of %zd bytes", i, n);
                goto fail;
            }
            for (Py_ssize_t r = 0; r < n; r++)
                if (!PyBytes_Check(PyList_GET_ITEM(a, r))) {
                    PyErr_Format(PyExc_TypeError, "part %zd: row %zd is not bytes", i, r);
                    goto fail;
                }
            p->texts = a;
        } else {
            PyErr_Format(PyExc_ValueError, "part %zd: unknown kind %ld", i, kind);
            goto fail;
        }
    }
    Py_DECREF(seq);
    return np;
fail:
    Py_DECREF(seq);
    return -1;
}

#define MAX_PARTS 64

static PyObject *format_rows(PyObject *self, PyObject *args) {
    PyObject *parts;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &parts, &n))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "n must be >= 0, got %zd", n);
    Part ps[MAX_PARTS];
    Py_buffer views[MAX_PARTS];
    Py_ssize_t held = 0;
    PyObject *text = NULL, *ends = NULL;
    Py_ssize_t np = parse_parts(parts, n, ps, views, MAX_PARTS, &held);
    if (np < 0)
        goto done;
    ends = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!ends)
        goto done;
    int64_t *end = (int64_t *)PyBytes_AS_STRING(ends);
    /* the exact size: each row's length, summed as the row ends */
    int64_t total = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        for (Py_ssize_t i = 0; i < np; i++) {
            const Part *p = &ps[i];
            switch (p->kind) {
            case LITERAL: total += p->lit_len; break;
            case DECIMAL: total += decimal_len(p->values[r]); break;
            case CHOICE: total += p->choice_len[p->codes[r]]; break;
            default: total += PyBytes_GET_SIZE(PyList_GET_ITEM(p->texts, r)); break;
            }
        }
        end[r] = total;
    }
    text = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!text)
        goto done;
    char *out = PyBytes_AS_STRING(text);
    for (Py_ssize_t r = 0; r < n; r++) {
        for (Py_ssize_t i = 0; i < np; i++) {
            const Part *p = &ps[i];
            switch (p->kind) {
            case LITERAL:
                memcpy(out, p->lit, (size_t)p->lit_len);
                out += p->lit_len;
                break;
            case DECIMAL: out = write_decimal(out, p->values[r]); break;
            case CHOICE: {
                uint8_t c = p->codes[r];
                memcpy(out, p->choice[c], (size_t)p->choice_len[c]);
                out += p->choice_len[c];
                break;
            }
            default: {
                PyObject *b = PyList_GET_ITEM(p->texts, r);
                memcpy(out, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
                out += PyBytes_GET_SIZE(b);
            }
            }
        }
    }
done:
    for (Py_ssize_t k = 0; k < held; k++)
        PyBuffer_Release(&views[k]);
    if (!text) {
        Py_XDECREF(ends);
        return NULL;
    }
    PyObject *res = Py_BuildValue("(NN)", text, ends);
    return res;
}

static PyObject *interleave(PyObject *self, PyObject *args) {
    Py_buffer head, head_ends, rows, row_ends, counts;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &head, &head_ends, &rows, &row_ends, &counts))
        return NULL;
    PyObject *res = NULL;
    Py_ssize_t nh = head_ends.len / 8, nr = row_ends.len / 8;
    const int64_t *he = (const int64_t *)head_ends.buf, *re = (const int64_t *)row_ends.buf;
    const int64_t *cnt = (const int64_t *)counts.buf;
    if (head_ends.len % 8 || row_ends.len % 8 || counts.len != head_ends.len) {
        PyErr_SetString(PyExc_ValueError, "ends and counts must be int64, one count a head line");
        goto done;
    }
    if ((nh && he[nh - 1] != head.len) || (!nh && head.len) || (nr && re[nr - 1] != rows.len) || (!nr && rows.len)) {
        PyErr_SetString(PyExc_ValueError, "the last end must be the text's length");
        goto done;
    }
    int64_t sum = 0;
    for (Py_ssize_t h = 0; h < nh; h++) {
        if (cnt[h] < 0) {
            PyErr_Format(PyExc_ValueError, "count %zd is negative", h);
            goto done;
        }
        sum += cnt[h];
    }
    if (sum != nr) {
        PyErr_Format(PyExc_ValueError, "the counts add up to %lld, not the %zd rows", (long long)sum, nr);
        goto done;
    }
    res = PyBytes_FromStringAndSize(NULL, head.len + rows.len);
    if (!res)
        goto done;
    char *out = PyBytes_AS_STRING(res);
    const char *hs = head.buf, *rs = rows.buf;
    int64_t hat = 0, rat = 0;
    Py_ssize_t r = 0;
    for (Py_ssize_t h = 0; h < nh; h++) {
        memcpy(out, hs + hat, (size_t)(he[h] - hat));
        out += he[h] - hat;
        hat = he[h];
        if (cnt[h]) {
            r += cnt[h];
            int64_t to = re[r - 1];
            memcpy(out, rs + rat, (size_t)(to - rat));
            out += to - rat;
            rat = to;
        }
    }
done:
    PyBuffer_Release(&head);
    PyBuffer_Release(&head_ends);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&row_ends);
    PyBuffer_Release(&counts);
    return res;
}

static PyMethodDef methods[] = {
    {"format_rows", format_rows, METH_VARARGS, "format_rows(parts, n) -> (text, ends): rows made part by part"},
    {"interleave", interleave, METH_VARARGS,
     "interleave(head, head_ends, rows, row_ends, counts) -> bytes: each head line, then its counted rows"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_textrows",
                                    "Text lines made column by column (format_rows, interleave).", -1, methods};

PyMODINIT_FUNC PyInit__textrows(void) { return PyModule_Create(&module); }
