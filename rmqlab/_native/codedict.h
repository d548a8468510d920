/* Dictionary encoding in one pass, shared by the C accelerators: each distinct value gets the
 * next code in order of first appearance, as Arrow's dictionary_encode and pandas' factorize
 * number them, so the codes and dictionaries are theirs exactly.
 *
 *   spandict  byte strings that live in one buffer (topics, tags), keyed by their bytes; the
 *             span of each value's first occurrence is kept, to build the dictionary from
 *   keydict   64-bit keys (packed IPv4 address and port)
 *
 * Open addressing with linear probing, grown at half full; the previous value is remembered,
 * so a run of one value costs one comparison. Memory is malloc'd (usable without the GIL);
 * free it with spandict_free / keydict_free. Every insert returns -1 when memory runs out. */
#ifndef RMQLAB_CODEDICT_H
#define RMQLAB_CODEDICT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec64.h"

static inline uint64_t codedict_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t codedict_span_hash(const uint8_t *p, int64_t n) {
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = codedict_mix(h ^ w);
    }
    uint64_t t = 0;
    for (int s = 0; i < n; i++, s += 8)
        t |= (uint64_t)p[i] << s;
    return codedict_mix(h ^ t);
}

/* Code `code` into the first free slot from its hash (a table being rebuilt after growing). */
static inline void codedict_place(int32_t *slots, size_t cap, uint64_t hash, int32_t code) {
    size_t i = hash & (cap - 1);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = code + 1;
}

typedef struct {
    const uint8_t *buf;  /* the buffer every value lives in */
    int32_t *slots;      /* code + 1; 0 = empty */
    uint64_t *hashes;    /* hash of each code's value */
    size_t cap;          /* slots, a power of two */
    vec64 spans;         /* start, length of each code's first occurrence */
    int32_t count;
    int64_t last_start, last_len;
    int32_t last_code;
} spandict;

static inline void spandict_init(spandict *d, const uint8_t *buf) {
    memset(d, 0, sizeof *d);
    d->buf = buf;
    d->last_code = -1;
}

static inline void spandict_free(spandict *d) {
    free(d->slots);
    free(d->hashes);
    free(d->spans.data);
    memset(d, 0, sizeof *d);
}

static int spandict_grow(spandict *d) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    int32_t *slots = calloc(cap, sizeof *slots);
    uint64_t *hashes = realloc(d->hashes, cap / 2 * sizeof *hashes);
    if (slots == NULL || hashes == NULL) {
        free(slots);
        if (hashes)
            d->hashes = hashes;
        return -1;
    }
    d->hashes = hashes;
    for (int32_t c = 0; c < d->count; c++)
        codedict_place(slots, cap, hashes[c], c);
    free(d->slots);
    d->slots = slots;
    d->cap = cap;
    return 0;
}

/* The code of the value buf[start, start + len); a new value gets the next code. */
static inline int32_t spandict_code(spandict *d, int64_t start, int64_t len) {
    const uint8_t *v = d->buf + start;
    if (d->last_code >= 0 && len == d->last_len && memcmp(v, d->buf + d->last_start, (size_t)len) == 0)
        return d->last_code;
    if ((size_t)(d->count + 1) * 2 > d->cap && spandict_grow(d) < 0)
        return -1;
    uint64_t h = codedict_span_hash(v, len);
    size_t i = h & (d->cap - 1);
    int32_t code;
    for (;;) {
        int32_t s = d->slots[i];
        if (s == 0) {
            if (vec_push(&d->spans, start) < 0 || vec_push(&d->spans, len) < 0)
                return -1;
            code = d->count++;
            d->hashes[code] = h;
            d->slots[i] = code + 1;
            break;
        }
        code = s - 1;
        if (d->hashes[code] == h && d->spans.data[2 * code + 1] == len &&
            memcmp(v, d->buf + d->spans.data[2 * code], (size_t)len) == 0)
            break;
        i = (i + 1) & (d->cap - 1);
    }
    d->last_start = start;
    d->last_len = len;
    d->last_code = code;
    return code;
}

typedef struct {
    int32_t *slots;  /* code + 1; 0 = empty */
    size_t cap;
    vec64 keys;      /* the key of each code */
    int32_t count;
    uint64_t last_key;
    int32_t last_code;
} keydict;

static inline void keydict_init(keydict *d) {
    memset(d, 0, sizeof *d);
    d->last_code = -1;
}

static inline void keydict_free(keydict *d) {
    free(d->slots);
    free(d->keys.data);
    memset(d, 0, sizeof *d);
}

static int keydict_grow(keydict *d) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    int32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (int32_t c = 0; c < d->count; c++)
        codedict_place(slots, cap, codedict_mix((uint64_t)d->keys.data[c]), c);
    free(d->slots);
    d->slots = slots;
    d->cap = cap;
    return 0;
}

static inline int32_t keydict_code(keydict *d, uint64_t key) {
    if (d->last_code >= 0 && key == d->last_key)
        return d->last_code;
    if ((size_t)(d->count + 1) * 2 > d->cap && keydict_grow(d) < 0)
        return -1;
    size_t i = codedict_mix(key) & (d->cap - 1);
    int32_t code;
    for (;;) {
        int32_t s = d->slots[i];
        if (s == 0) {
            if (vec_push(&d->keys, (int64_t)key) < 0)
                return -1;
            code = d->count++;
            d->slots[i] = code + 1;
            break;
        }
        code = s - 1;
        if ((uint64_t)d->keys.data[code] == key)
            break;
        i = (i + 1) & (d->cap - 1);
    }
    d->last_key = key;
    d->last_code = code;
    return code;
}

#endif
