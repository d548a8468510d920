/*
 * rmqlab._filestamps: the check that files kept open are still what is on disk
 * (rmqlab.store.openfiles, before every key query of a Store).
 *
 *   stamps(fds)   (link count, modification time in ns) of each open descriptor, in one call
 *
 * The check runs before each query, so its cost is part of every query's: os.fstat from Python
 * costs about twice the system call (a stat_result made and read), and this does only the calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/stat.h>

/* stamps(fds) -> tuple. fds: a list of ints; each becomes (st_nlink, st_mtime in ns) of that
 * descriptor, or None for a negative one (no descriptor) or one fstat refuses. */
static PyObject *stamps(PyObject *self, PyObject *args) {
    PyObject *fds;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &fds))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(fds);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PyList_GET_ITEM(fds, i));
        if (fd == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        struct stat st;
        PyObject *item;
        if (fd < 0 || fstat((int)fd, &st) != 0) {
            item = Py_None;
            Py_INCREF(item);
        } else {
            long long ns = (long long)st.st_mtim.tv_sec * 1000000000LL + (long long)st.st_mtim.tv_nsec;
            item = Py_BuildValue("(KL)", (unsigned long long)st.st_nlink, ns);
            if (item == NULL) {
                Py_DECREF(out);
                return NULL;
            }
        }
        PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"stamps", stamps, METH_VARARGS, "stamps(fds) -> tuple of (st_nlink, st_mtime_ns) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_filestamps", NULL, -1, methods};

PyMODINIT_FUNC PyInit__filestamps(void) { return PyModule_Create(&module); }
