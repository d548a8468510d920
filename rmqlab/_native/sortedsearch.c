/*
 * rmqlab._sortedsearch: numpy.searchsorted(haystack, needles, side="left") for int64 arrays,
 * fast when the needles mostly rise (the joins of verify: index entries and queue units in
 * CommitLog order against message positions and key codes).
 *
 *   lower_bounds(haystack, needles, out)   out[i] = the first j with haystack[j] >= needles[i]
 *                                          (len(haystack) where there is none)
 *
 * Each search starts where the previous answer was: galloping forward (1, 2, 4 ... elements)
 * while the haystack is still below the needle, then a binary search inside the last step;
 * a needle below the previous answer's element is searched in the part before it. So rising
 * needles cost O(log gap) each instead of O(log n), and any order gives numpy's answer.
 * Its model is numpy.searchsorted itself; tests/tables/test_search_sorted.py compares them. Buffers only, no NumPy C API; the loop releases the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *lower_bounds(PyObject *self, PyObject *args) {
    Py_buffer hb, nb, ob;
    if (!PyArg_ParseTuple(args, "y*y*w*", &hb, &nb, &ob))
        return NULL;
    PyObject *res = NULL;
    if (hb.len % 8 || nb.len % 8 || ob.len != nb.len) {
        PyErr_SetString(PyExc_ValueError, "haystack and needles must be int64, out as long as the needles");
        goto done;
    }
    {
        const int64_t *a = hb.buf, *x = nb.buf;
        int64_t *out = ob.buf;
        Py_ssize_t n = hb.len / 8, m = nb.len / 8;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t pos = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            int64_t v = x[i];
            Py_ssize_t lo, hi;
            if (pos > 0 && a[pos - 1] >= v) {
                lo = 0; /* at or before pos - 1, whose element is not below v */
                hi = pos - 1;
            } else {
                /* every element before pos is below v: gallop from pos */
                lo = pos;
                hi = pos;
                Py_ssize_t step = 1;
                while (hi < n && a[hi] < v) {
                    lo = hi + 1;
                    hi = pos + step < n ? pos + step : n;
                    step <<= 1;
                }
            }
            while (lo < hi) { /* the first j in [lo, hi) with a[j] >= v, else hi */
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (a[mid] < v)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            out[i] = lo;
            pos = lo;
        }
        Py_END_ALLOW_THREADS
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&hb);
    PyBuffer_Release(&nb);
    PyBuffer_Release(&ob);
    return res;
}

static PyMethodDef methods[] = {
    {"lower_bounds", lower_bounds, METH_VARARGS,
     "lower_bounds(haystack, needles, out): numpy.searchsorted(haystack, needles) for int64, into out"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sortedsearch",
                                    "searchsorted for rising int64 needles (galloping from the last answer).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__sortedsearch(void) { return PyModule_Create(&module); }
