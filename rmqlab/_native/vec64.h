/* A growable array of int64, shared by the C accelerators: the walks collect positions and
 * results into one without knowing their count in advance. Memory is malloc'd (usable without
 * the GIL); the owner frees `data`. */
#ifndef RMQLAB_VEC64_H
#define RMQLAB_VEC64_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t *data;
    size_t len, cap;
} vec64;

/* Room for at least `need` elements, growing by doubling. -1 when memory runs out. */
static inline int vec_reserve(vec64 *v, size_t need) {
    size_t cap = v->cap ? v->cap : 1024;
    while (cap < need)
        cap *= 2;
    if (cap != v->cap) {
        int64_t *d = realloc(v->data, cap * sizeof(int64_t));
        if (!d)
            return -1;
        v->data = d;
        v->cap = cap;
    }
    return 0;
}

static inline int vec_push(vec64 *v, int64_t x) {
    if (v->len == v->cap && vec_reserve(v, v->len + 1) < 0)
        return -1;
    v->data[v->len++] = x;
    return 0;
}

/* The elements as bytes of native int64 (NumPy reads them with frombuffer); frees the array.
 * NULL with an exception set when memory runs out. */
static inline PyObject *vec_take_bytes(vec64 *v) {
    PyObject *out = PyBytes_FromStringAndSize((const char *)v->data, (Py_ssize_t)(v->len * sizeof(int64_t)));
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
    return out;
}

#endif
