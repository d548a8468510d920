/*
 * rmqlab._indexcore: the two hot loops of RocketMQ's IndexFile, over a buffer holding the
 * whole file (a memory map or a bytearray). Semantics mirror IndexFile.putKey and
 * IndexFile.selectPhyOffset (RocketMQ store module).
 *
 * Every write goes through this module: IndexFile.put_key (put_one) and put_keys /
 * build_index_file (put_entries) share put_sequential, so there is no second put to drift from
 * it; the tests check both against a dict-based model of putKey written from the Java source.
 * The walk has a readable twin, IndexFile._walk in rmqlab/formats/indexfile.py (behind
 * trace_query), with the same checks in the same order; the tests compare the two on random
 * inputs. IndexFile.select_phy_offsets is select_key alone: it takes the key as a str and
 * hashes it with javahash.h, the code behind rmqlab.jvm.hashcode.java_hash.
 *
 * Layout (all big-endian): header | hash_slot_num slots | index_num entries. The sizes and
 * offsets below restate rmqlab.formats.indexfile's HEADER, SLOT and ENTRY layouts; the module
 * exports them under the same names and tests/formats/test_native_layouts.py checks them against those
 * declarations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>

#include "bigendian.h"
#include "javahash.h"
#include "vec64.h"

/* IndexHeader: four longs, then two ints. */
#define HEADER_BEGIN_TIMESTAMP_OFFSET 0
#define HEADER_END_TIMESTAMP_OFFSET 8
#define HEADER_BEGIN_PHY_OFFSET_OFFSET 16
#define HEADER_END_PHY_OFFSET_OFFSET 24
#define HEADER_HASH_SLOT_COUNT_OFFSET 32
#define HEADER_INDEX_COUNT_OFFSET 36
#define HEADER_SIZE 40

/* A hash slot: the number of the newest entry of its chain. */
#define SLOT_NEWEST_ENTRY_OFFSET 0
#define SLOT_SIZE 4

/* IndexEntry: key_hash int32, phy_offset int64, time_diff int32, prev_index int32. */
#define ENTRY_KEY_HASH_OFFSET 0
#define ENTRY_PHY_OFFSET_OFFSET 4
#define ENTRY_TIME_DIFF_OFFSET 12
#define ENTRY_PREV_INDEX_OFFSET 16
#define ENTRY_SIZE 20

#define PREFETCH_AHEAD 16

/* x % d by two multiplications (Lemire, Kaser & Kurz, "Faster remainder by direct computation",
 * 2019): a 32-bit division costs more than the rest of a put. Valid for every x and d > 0. */
typedef struct {
    uint64_t m;
    uint32_t d;
} fastmod;

static inline fastmod fastmod_of(uint32_t d) {
    fastmod f = {UINT64_C(0xFFFFFFFFFFFFFFFF) / d + 1, d};
    return f;
}
static inline uint32_t mod_of(uint32_t x, fastmod f) {
    return (uint32_t)(((__uint128_t)(f.m * x) * f.d) >> 64);
}

static int check_geometry(Py_ssize_t len, Py_ssize_t hsn, Py_ssize_t index_num) {
    if (hsn <= 0 || index_num <= 0 || hsn > INT32_MAX || index_num > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "hash_slot_num and index_num must be positive 32-bit ints");
        return -1;
    }
    long long need = HEADER_SIZE + (long long)SLOT_SIZE * hsn + (long long)ENTRY_SIZE * index_num;
    if ((long long)len < need) {
        PyErr_Format(PyExc_ValueError, "buffer holds %zd bytes, the geometry needs %lld", len, need);
        return -1;
    }
    return 0;
}

/* The header fields put_entries carries between keys (IndexHeader's atomics). */
typedef struct {
    int64_t bts, ets, bphy, ephy, hsc, count;
} header_state;

static inline int32_t time_diff_of(int64_t ts, int64_t bts) {
    /* rmqlab.formats.indexfile.time_diff_seconds is the definition; this is its C form for the
     * put loop, and the tests hold the two equal. */
    int64_t diff = (int64_t)((uint64_t)ts - (uint64_t)bts);
    int64_t time_diff = diff / 1000;
    if (bts <= 0)
        return 0;
    if (time_diff > INT32_MAX)
        return INT32_MAX;
    if (time_diff < 0)
        return 0;
    return (int32_t)time_diff;
}

static inline void write_entry(uint8_t *e, int32_t key_hash, int64_t phy, int32_t time_diff, int32_t prev) {
    store_i32(e + ENTRY_KEY_HASH_OFFSET, key_hash);
    store_i64(e + ENTRY_PHY_OFFSET_OFFSET, phy);
    store_i32(e + ENTRY_TIME_DIFF_OFFSET, time_diff);
    store_i32(e + ENTRY_PREV_INDEX_OFFSET, prev);
}

/* RocketMQ's index hash of a String.hashCode value: abs, with Integer.MIN_VALUE (its own
 * negation) stored as 0. Leaves an index hash (>= 0) unchanged, so either kind may be passed. */
static inline int32_t index_hash_of(int32_t java_hash) {
    uint32_t magnitude = java_hash < 0 ? 0u - (uint32_t)java_hash : (uint32_t)java_hash;
    return magnitude > (uint32_t)INT32_MAX ? 0 : (int32_t)magnitude;
}

/* One putKey after another. Puts keys [from, to); `entries` holds entry numbers from
 * `first_entry` on (the whole entry area, or one chunk of it on the way to the file). */
static Py_ssize_t put_sequential(uint8_t *slots, uint8_t *entries, int64_t first_entry, fastmod hsn,
                                 int64_t index_num,
                                 header_state *h, const int32_t *hashes, const int64_t *phy,
                                 const int64_t *ts, Py_ssize_t from, Py_ssize_t to, int every_put) {
    Py_ssize_t i = from;
    for (; i < to && h->count < index_num; i++) {
        int32_t key_hash = index_hash_of(hashes[i]);
        /* The slot table is read at random: fetch a later key's slot while this one works. */
        if (i + PREFETCH_AHEAD < to)
            __builtin_prefetch(slots + (size_t)SLOT_SIZE * mod_of(index_hash_of(hashes[i + PREFETCH_AHEAD]), hsn), 1);
        uint8_t *slot = slots + (size_t)SLOT_SIZE * mod_of(key_hash, hsn);
        int32_t slot_value = load_i32(slot + SLOT_NEWEST_ENTRY_OFFSET);
        if (slot_value <= 0 || slot_value > h->count)
            slot_value = 0;
        write_entry(entries + (size_t)ENTRY_SIZE * (size_t)(h->count - first_entry), key_hash, phy[i],
                    time_diff_of(ts[i], h->bts), slot_value);
        store_i32(slot + SLOT_NEWEST_ENTRY_OFFSET, (int32_t)h->count);
        if (h->count <= 1) {
            h->bphy = phy[i];
            h->bts = ts[i];
        }
        if (slot_value == 0 || every_put)
            h->hsc = (int32_t)((uint32_t)h->hsc + 1u); /* Java int increment */
        h->count++;
        h->ephy = phy[i];
        h->ets = ts[i];
    }
    return i;
}

/* Above this many keys the slot table is copied to huge-page memory for the loop: random
 * reads of a 20 MB table in 4 KiB file pages miss the TLB on almost every put (measured:
 * 0.71 s vs 0.41 s for 20M keys on the default geometry). */
#define SLOT_COPY_MIN_KEYS 100000
#define HUGE_PAGE (2u << 20)
/* With a file descriptor, entries are assembled in a buffer of this many and written with
 * pwrite: the kernel then copies whole pages into the page cache, where stores through the map
 * first fault each page in and zero it (the faults were most of a fresh process's build:
 * 20M keys, 1.27 s through the map, 0.75 s through pwrite; 8K to 128K entries a chunk differ
 * by less than the noise). */
#define STREAM_CHUNK_ENTRIES 32768

static uint8_t *huge_alloc(size_t len) {
    size_t rounded = (len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    uint8_t *p = NULL;
    if (posix_memalign((void **)&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

/* 0, or the errno of the failure; a short transfer is retried from where it stopped. */
static int pwrite_all(int fd, const uint8_t *buf, size_t len, int64_t offset) {
    while (len > 0) {
        ssize_t done = pwrite(fd, buf, len, (off_t)offset);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (done == 0)
            return EIO;
        buf += done;
        len -= (size_t)done;
        offset += done;
    }
    return 0;
}

static int pread_all(int fd, uint8_t *buf, size_t len, int64_t offset) {
    while (len > 0) {
        ssize_t done = pread(fd, buf, len, (off_t)offset);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (done == 0)
            return EIO; /* the file is shorter than the geometry: it changed under us */
        buf += done;
        len -= (size_t)done;
        offset += done;
    }
    return 0;
}

/* ---- the streamed put on several threads ----------------------------------------------------
 *
 * putKey's only dependence between keys is the chain: a key's prev_index is the entry number of
 * the newest earlier key in its slot, and the slot then holds the key's own entry number. Keys
 * in different slots never meet. So, once the header's begin timestamp is fixed (it changes only
 * while index_count <= 1; those first puts go through put_sequential), the loop splits in two:
 *  1. the chains, by slot range: every thread reads all hashes in key order but follows only the
 *     slots of its range, writing each of its keys' prev_index and its slots' newest entries;
 *  2. the entries, by key range: every thread assembles and pwrites its own span of the entries.
 * Entry numbers are known up front (the first one, plus the key's position), so both phases write
 * exactly the bytes put_sequential writes; the tests compare the two on random inputs. */
#define PAR_MAX_THREADS 16

typedef struct {
    const int32_t *hashes;
    const int64_t *phy, *ts;
    Py_ssize_t n;           /* keys to put, all of which fit */
    int64_t first_entry;    /* the entry number of hashes[0] */
    int64_t bts;            /* the header's begin timestamp, fixed for these keys */
    fastmod hsn;
    uint32_t slot_count;
    uint8_t *slots;         /* the slot table: each thread of phase 1 writes only its range */
    int32_t *prev;          /* prev_index of each key: phase 1 writes it, phase 2 reads it */
    int every_put;
    int fd;
    int64_t entries_offset;
    int nthreads;
    uint32_t new_slots[PAR_MAX_THREADS];    /* phase 1: the puts that counted in hash_slot_count */
    int err[PAR_MAX_THREADS];               /* phase 2: 0, -1 (no memory) or an errno */
} par_put;

/* Phase 1, part t: the chains of the slots [lo, hi). */
static void par_chains(par_put *p, int t) {
    uint32_t lo = (uint32_t)((uint64_t)p->slot_count * t / p->nthreads);
    uint32_t hi = (uint32_t)((uint64_t)p->slot_count * (t + 1) / p->nthreads);
    uint32_t counted = 0;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        if (i + PREFETCH_AHEAD < p->n) {
            uint32_t ahead = mod_of(index_hash_of(p->hashes[i + PREFETCH_AHEAD]), p->hsn);
            if (ahead >= lo && ahead < hi)
                __builtin_prefetch(p->slots + (size_t)SLOT_SIZE * ahead, 1);
        }
        uint32_t s = mod_of(index_hash_of(p->hashes[i]), p->hsn);
        if (s < lo || s >= hi)
            continue;
        int64_t entry = p->first_entry + i;
        uint8_t *slot = p->slots + (size_t)SLOT_SIZE * s;
        int32_t slot_value = load_i32(slot + SLOT_NEWEST_ENTRY_OFFSET);
        if (slot_value <= 0 || slot_value > entry)
            slot_value = 0;
        p->prev[i] = slot_value;
        store_i32(slot + SLOT_NEWEST_ENTRY_OFFSET, (int32_t)entry);
        if (slot_value == 0 || p->every_put)
            counted++;
    }
    p->new_slots[t] = counted;
}

/* Phase 2, part t: the entries of the keys [from, to), assembled and written chunk by chunk. */
static void par_entries(par_put *p, int t) {
    Py_ssize_t from = (Py_ssize_t)((int64_t)p->n * t / p->nthreads);
    Py_ssize_t to = (Py_ssize_t)((int64_t)p->n * (t + 1) / p->nthreads);
    uint8_t *chunk = malloc((size_t)ENTRY_SIZE * STREAM_CHUNK_ENTRIES);
    int err = chunk ? 0 : -1;
    for (Py_ssize_t i = from; !err && i < to; i += STREAM_CHUNK_ENTRIES) {
        Py_ssize_t end = to - i < STREAM_CHUNK_ENTRIES ? to : i + STREAM_CHUNK_ENTRIES;
        for (Py_ssize_t k = i; k < end; k++)
            write_entry(chunk + (size_t)ENTRY_SIZE * (size_t)(k - i), index_hash_of(p->hashes[k]), p->phy[k],
                        time_diff_of(p->ts[k], p->bts), p->prev[k]);
        err = pwrite_all(p->fd, chunk, (size_t)ENTRY_SIZE * (size_t)(end - i),
                         p->entries_offset + (int64_t)ENTRY_SIZE * (p->first_entry + i));
    }
    free(chunk);
    p->err[t] = err;
}

typedef struct {
    par_put *p;
    void (*part)(par_put *, int);
    int id;
} par_job;

static void *par_run(void *arg) {
    par_job *j = arg;
    j->part(j->p, j->id);
    return NULL;
}

/* Runs part(p, t) for every t: parts 1.. on threads of their own, part 0 on this one, and any
 * part whose thread could not be started here too, after part 0. */
static void par_phase(par_put *p, void (*part)(par_put *, int)) {
    par_job jobs[PAR_MAX_THREADS];
    pthread_t tid[PAR_MAX_THREADS];
    int started[PAR_MAX_THREADS] = {0};
    for (int t = 0; t < p->nthreads; t++) {
        jobs[t].p = p;
        jobs[t].part = part;
        jobs[t].id = t;
    }
    for (int t = 1; t < p->nthreads; t++)
        started[t] = pthread_create(&tid[t], NULL, par_run, &jobs[t]) == 0;
    part(p, 0);
    for (int t = 1; t < p->nthreads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            part(p, t);
    }
}

/* Puts hashes[0, n) (all of which fit, and index_count > 1 already) on `nthreads` threads; the
 * slot table `slots` is the caller's copy, for it to write back. Returns 0, -1 when memory runs
 * out, or an errno. */
static int put_parallel(int fd, Py_ssize_t hsn, int64_t entries_offset, uint8_t *slots, header_state *h,
                        const int32_t *hashes, const int64_t *phy, const int64_t *ts, Py_ssize_t n,
                        int every_put, int nthreads) {
    par_put p = {hashes, phy, ts, n, h->count, h->bts, fastmod_of((uint32_t)hsn), (uint32_t)hsn, slots, NULL,
                 every_put, fd, entries_offset, nthreads, {0}, {0}};
    p.prev = (int32_t *)huge_alloc(sizeof(int32_t) * (size_t)n);
    if (!p.prev)
        return -1;
    par_phase(&p, par_chains);
    par_phase(&p, par_entries);
    free(p.prev);
    int err = 0;
    uint32_t counted = 0;
    for (int t = 0; t < nthreads; t++) {
        if (!err)
            err = p.err[t];
        counted += p.new_slots[t];
    }
    if (err)
        return err;
    h->hsc = (int32_t)((uint32_t)h->hsc + counted); /* Java int increments */
    h->count += n;
    h->ephy = phy[n - 1];
    h->ets = ts[n - 1];
    return 0;
}

/* put_sequential of keys [*i, stop) through the descriptor, STREAM_CHUNK_ENTRIES at a time
 * assembled in `chunk` and written with pwrite; *i moves past the keys put. 0 or an errno. */
static int put_chunked(int fd, uint8_t *slots, uint8_t *chunk, int64_t entries_offset, fastmod nslots,
                       int64_t index_num, header_state *h, const int32_t *hashes, const int64_t *phy,
                       const int64_t *ts, Py_ssize_t *i, Py_ssize_t stop, int every_put) {
    int err = 0;
    while (!err && *i < stop && h->count < index_num) {
        int64_t first = h->count;
        Py_ssize_t to = stop - *i < STREAM_CHUNK_ENTRIES ? stop : *i + STREAM_CHUNK_ENTRIES;
        *i = put_sequential(slots, chunk, first, nslots, index_num, h, hashes, phy, ts, *i, to, every_put);
        err = pwrite_all(fd, chunk, (size_t)ENTRY_SIZE * (size_t)(h->count - first),
                         entries_offset + (int64_t)ENTRY_SIZE * first);
    }
    return err;
}

/* The put loop through the file descriptor: slot table read into huge-page memory, entries
 * written chunk by chunk in order, slot table written back last. Returns 0, -1 when memory
 * runs out, or an errno. On an error the slot table on disk is the old one, so a reader
 * using the old header still sees a consistent file. (A writer thread overlapping pwrite with
 * the loop was tried: no faster on a loaded 2-core machine, so the loop writes its own chunks.) */
static int put_streamed(int fd, Py_ssize_t hsn, int64_t index_num, header_state *h,
                        const int32_t *hashes, const int64_t *phy, const int64_t *ts, Py_ssize_t n,
                        int every_put, int nthreads) {
    size_t slots_len = (size_t)SLOT_SIZE * hsn;
    int64_t entries_offset = HEADER_SIZE + (int64_t)slots_len;
    uint8_t *slots = huge_alloc(slots_len);
    uint8_t *chunk = malloc((size_t)ENTRY_SIZE * STREAM_CHUNK_ENTRIES);
    int err = (!slots || !chunk) ? -1 : pread_all(fd, slots, slots_len, HEADER_SIZE);
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
    /* Blocks for everything about to be written, in one call: spares ext4 its block reservation
     * page by page during the writes (measured on 20M keys, 10 alternating runs each, twice:
     * 0.35 and 0.41 s with, 0.42 and 0.44 s without). Only a hint, except that a full disk
     * fails here, before anything is written. */
    if (!err) {
        int64_t room = index_num - h->count, last = h->count + (n < room ? (int64_t)n : room);
        int64_t end = entries_offset + (int64_t)ENTRY_SIZE * (last > 0 ? last : 0);
        if (fallocate(fd, FALLOC_FL_KEEP_SIZE, HEADER_SIZE, end - HEADER_SIZE) != 0 && errno == ENOSPC)
            err = ENOSPC;
    }
#endif
    fastmod nslots = fastmod_of((uint32_t)hsn);
    Py_ssize_t i = 0;
    /* One thread puts the keys that move the begin timestamp (index_count <= 1), then, when the
     * rest are enough to share, put_parallel puts all of them that fit; one thread the rest. */
    Py_ssize_t head = h->count <= 1 ? (Py_ssize_t)(2 - h->count) : 0;
    if (!err)
        err = put_chunked(fd, slots, chunk, entries_offset, nslots, index_num, h, hashes, phy, ts, &i,
                          head < n ? head : n, every_put);
    if (!err && h->count > 1) {
        int64_t room = index_num - h->count;
        Py_ssize_t fit = n - i < room ? n - i : (Py_ssize_t)(room > 0 ? room : 0);
        /* The caller decides when threads pay (rmqlab.formats.indexfile.THREADED_PUT_KEYS). */
        int nt = nthreads < PAR_MAX_THREADS ? nthreads : PAR_MAX_THREADS;
        if ((Py_ssize_t)nt > fit)
            nt = (int)fit;
        if (nt > 1) {
            err = put_parallel(fd, hsn, entries_offset, slots, h, hashes + i, phy + i, ts + i, fit, every_put, nt);
            i += fit;
        }
    }
    if (!err)
        err = put_chunked(fd, slots, chunk, entries_offset, nslots, index_num, h, hashes, phy, ts, &i, n,
                          every_put);
    if (!err)
        err = pwrite_all(fd, slots, slots_len, HEADER_SIZE);
    free(slots);
    free(chunk);
    return err;
}

/* put_entries(buffer, hash_slot_num, index_num,
 *             (begin_ts, end_ts, begin_phy, end_phy, hash_slot_count, index_count),
 *             hashes int32[n], phy int64[n], ts int64[n], every_put, fd=-1, java_hashes=0,
 *             threads=1)
 *   -> new header tuple
 * Puts keys in order until the file is full, exactly as n calls of putKey. `hashes` are index
 * hashes (>= 0, checked), or with java_hashes raw String.hashCode values (any int32), mapped
 * here so that the caller needs no extra pass over them. With fd >= 0 (the
 * file that `buffer` maps from offset 0; Linux's page cache keeps the two coherent) a large
 * batch is written through the descriptor instead of the map, on up to `threads` threads
 * (put_parallel) when it is large enough to share; the header is the caller's. */
static PyObject *put_entries(PyObject *self, PyObject *args) {
    Py_buffer file, hb, pb, tb;
    Py_ssize_t hsn, index_num;
    header_state h;
    int every_put, fd = -1, java_hashes = 0, threads = 1;
    if (!PyArg_ParseTuple(args, "w*nn(LLLLLL)y*y*y*p|ipi", &file, &hsn, &index_num, &h.bts, &h.ets,
                          &h.bphy, &h.ephy, &h.hsc, &h.count, &hb, &pb, &tb, &every_put, &fd,
                          &java_hashes, &threads))
        return NULL;
    PyObject *result = NULL;
    if (check_geometry(file.len, hsn, index_num) < 0)
        goto done;
    Py_ssize_t n = hb.len / (Py_ssize_t)sizeof(int32_t);
    if (hb.len % (Py_ssize_t)sizeof(int32_t) || pb.len != (Py_ssize_t)sizeof(int64_t) * n ||
        tb.len != (Py_ssize_t)sizeof(int64_t) * n) {
        PyErr_SetString(PyExc_ValueError, "hashes (int32), phy_offsets and timestamps (int64) differ in length");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n && !java_hashes; k++) {
        if (((const int32_t *)hb.buf)[k] < 0) {
            PyErr_Format(PyExc_ValueError, "index hash %zd is negative; index hashes are abs(hashCode)", k);
            goto done;
        }
    }
    if (h.count < 0) {
        PyErr_SetString(PyExc_ValueError, "index_count must be >= 0");
        goto done;
    }
    if (fd >= 0) {
        int err;
        Py_BEGIN_ALLOW_THREADS
        err = put_streamed(fd, hsn, index_num, &h, hb.buf, pb.buf, tb.buf, n, every_put, threads);
        Py_END_ALLOW_THREADS
        if (err < 0) {
            PyErr_NoMemory();
            goto done;
        }
        if (err > 0) {
            errno = err;
            PyErr_SetFromErrno(PyExc_OSError);
            goto done;
        }
    } else {
        uint8_t *file_slots = (uint8_t *)file.buf + HEADER_SIZE;
        uint8_t *entries = file_slots + (size_t)SLOT_SIZE * hsn;
        size_t slots_len = (size_t)SLOT_SIZE * hsn;
        Py_BEGIN_ALLOW_THREADS
        uint8_t *slots = n >= SLOT_COPY_MIN_KEYS ? huge_alloc(slots_len) : NULL;
        if (slots)
            memcpy(slots, file_slots, slots_len);
        put_sequential(slots ? slots : file_slots, entries, 0, fastmod_of((uint32_t)hsn), index_num, &h,
                       hb.buf, pb.buf, tb.buf, 0, n, every_put);
        if (slots) {
            memcpy(file_slots, slots, slots_len);
            free(slots);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("(LLLLLL)", h.bts, h.ets, h.bphy, h.ephy, h.hsc, h.count);
done:
    PyBuffer_Release(&file);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&tb);
    return result;
}

/* put_one(buffer, hash_slot_num, index_num, header6, key_hash, phy, ts, every_put) -> header6,
 * or None when the file is full. One putKey; like the broker's IndexHeader setters it also
 * writes the header fields into the buffer (after a put all six equal the in-memory values). */
static PyObject *put_one(PyObject *self, PyObject *args) {
    Py_buffer file;
    Py_ssize_t hsn, index_num;
    header_state h;
    int32_t key_hash;
    int64_t phy, ts;
    int every_put;
    if (!PyArg_ParseTuple(args, "w*nn(LLLLLL)iLLp", &file, &hsn, &index_num, &h.bts, &h.ets, &h.bphy,
                          &h.ephy, &h.hsc, &h.count, &key_hash, &phy, &ts, &every_put))
        return NULL;
    PyObject *result = NULL;
    if (check_geometry(file.len, hsn, index_num) < 0)
        goto done;
    if (key_hash < 0 || h.count < 0) {
        PyErr_SetString(PyExc_ValueError, "index hash and index_count must be >= 0");
        goto done;
    }
    if (h.count >= index_num) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    {
        uint8_t *base = file.buf, *slots = base + HEADER_SIZE;
        put_sequential(slots, slots + (size_t)SLOT_SIZE * hsn, 0, fastmod_of((uint32_t)hsn), index_num, &h,
                       &key_hash, &phy, &ts, 0, 1, every_put);
        store_i64(base + HEADER_BEGIN_TIMESTAMP_OFFSET, h.bts);
        store_i64(base + HEADER_END_TIMESTAMP_OFFSET, h.ets);
        store_i64(base + HEADER_BEGIN_PHY_OFFSET_OFFSET, h.bphy);
        store_i64(base + HEADER_END_PHY_OFFSET_OFFSET, h.ephy);
        store_i32(base + HEADER_HASH_SLOT_COUNT_OFFSET, (int32_t)h.hsc);
        store_i32(base + HEADER_INDEX_COUNT_OFFSET, (int32_t)h.count);
    }
    result = Py_BuildValue("(LLLLLL)", h.bts, h.ets, h.bphy, h.ephy, h.hsc, h.count);
done:
    PyBuffer_Release(&file);
    return result;
}

/* Walks this many chains in lockstep: each round issues a prefetch for every walk's next entry
 * before reading any, so their cache misses overlap (a look-up is ~6 dependent misses). */
#define WALK_GROUP 16

typedef struct {
    const uint8_t *slots, *entries;
    fastmod nslots;
    int64_t index_num, count, begin_ts, begin, end;
    int32_t max_num;
} walk_params;

/* One group of walks; results appended to `out` in key order. Same checks, in the same order,
 * as IndexFile.selectPhyOffset (and IndexFile._walk in Python). */
static int walk_group(const walk_params *w, const int32_t *hashes, const int32_t *rooms, Py_ssize_t m,
                      int64_t *starts, int32_t *reads, vec64 *out, vec64 *tmp_off, vec64 *tmp_key) {
    int32_t cur[WALK_GROUP], found[WALK_GROUP], nread[WALK_GROUP], limit[WALK_GROUP];
    int64_t steps[WALK_GROUP];
    int active[WALK_GROUP], live = 0;
    const uint8_t *slot_at[WALK_GROUP];
    tmp_off->len = tmp_key->len = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        active[j] = hashes[j] >= 0;
        slot_at[j] = active[j] ? w->slots + (size_t)SLOT_SIZE * mod_of((uint32_t)hashes[j], w->nslots) : NULL;
        if (active[j])
            __builtin_prefetch(slot_at[j]);
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        limit[j] = rooms == NULL ? w->max_num : rooms[j];
        found[j] = nread[j] = cur[j] = 0;
        steps[j] = 0;
        if (!active[j])
            continue;
        cur[j] = load_i32(slot_at[j] + SLOT_NEWEST_ENTRY_OFFSET);
        if (cur[j] <= 0 || cur[j] > w->count || w->count <= 1) {
            active[j] = 0;
            continue;
        }
        if (cur[j] < w->index_num)
            __builtin_prefetch(w->entries + (size_t)ENTRY_SIZE * (size_t)cur[j]);
        live++;
    }
    while (live > 0) {
        for (Py_ssize_t j = 0; j < m; j++) {
            if (!active[j])
                continue;
            int stop = 0;
            /* steps = reads since the last result: index_num of them means a cycle that the
             * broker would never leave (a matching cycle is followed until max_num, as Java does) */
            if (found[j] >= limit[j] || cur[j] >= w->index_num || steps[j] >= w->index_num) {
                stop = 1;
            } else {
                steps[j]++;
                const uint8_t *e = w->entries + (size_t)ENTRY_SIZE * (size_t)cur[j];
                int32_t time_diff = load_i32(e + ENTRY_TIME_DIFF_OFFSET), prev = load_i32(e + ENTRY_PREV_INDEX_OFFSET);
                nread[j]++;
                if (time_diff < 0) {
                    stop = 1;
                } else {
                    int64_t time_read = (int64_t)((uint64_t)w->begin_ts + (uint64_t)((int64_t)time_diff * 1000));
                    if (load_i32(e + ENTRY_KEY_HASH_OFFSET) == hashes[j] && time_read >= w->begin && time_read <= w->end) {
                        if (vec_push(tmp_off, load_i64(e + ENTRY_PHY_OFFSET_OFFSET)) < 0 || vec_push(tmp_key, j) < 0)
                            return -1;
                        found[j]++;
                        steps[j] = 0;
                    }
                    if (prev <= 0 || prev > w->count || prev == cur[j] || time_read < w->begin) {
                        stop = 1;
                    } else {
                        cur[j] = prev;
                        if (prev < w->index_num)
                            __builtin_prefetch(w->entries + (size_t)ENTRY_SIZE * (size_t)prev);
                    }
                }
            }
            if (stop) {
                active[j] = 0;
                live--;
            }
        }
    }
    /* Results came out interleaved by round; each key's own order is kept. Regroup by key. */
    int64_t at[WALK_GROUP + 1];
    at[0] = (int64_t)out->len;
    for (Py_ssize_t j = 0; j < m; j++) {
        starts[j] = at[j];
        reads[j] = nread[j];
        at[j + 1] = at[j] + found[j];
    }
    size_t need = (size_t)at[m];
    if (vec_reserve(out, need) < 0)
        return -1;
    for (size_t r = 0; r < tmp_off->len; r++)
        out->data[at[tmp_key->data[r]]++] = tmp_off->data[r];
    out->len = need;
    return 0;
}

/* select_many(buffer, hash_slot_num, index_num, index_count, begin_timestamp,
 *             hashes int32[n], max_num, begin, end[, rooms int32[n]])
 *   -> (starts int64[n+1], offsets int64[], read int32[n])
 * n walks of selectPhyOffset. Each walk is bounded by index_count reads (a cycle ends it).
 * `rooms`, when given, is each walk's own max_num: the room left in a list that earlier files
 * filled in part (queryOffset hands every file the shared list). */
static PyObject *select_many(PyObject *self, PyObject *args) {
    Py_buffer file, hb, rb = {0};
    Py_ssize_t hsn, index_num;
    long long count, begin_ts, begin, end;
    int max_num;
    PyObject *rooms_obj = Py_None;
    if (!PyArg_ParseTuple(args, "y*nnLLy*iLL|O", &file, &hsn, &index_num, &count, &begin_ts, &hb,
                          &max_num, &begin, &end, &rooms_obj))
        return NULL;
    PyObject *result = NULL, *starts_b = NULL, *read_b = NULL, *offsets_b = NULL;
    vec64 out = {NULL, 0, 0}, tmp_off = {NULL, 0, 0}, tmp_key = {NULL, 0, 0};
    int oom = 0;
    Py_ssize_t n = hb.len / (Py_ssize_t)sizeof(int32_t);
    if (rooms_obj != Py_None) {
        if (PyObject_GetBuffer(rooms_obj, &rb, PyBUF_SIMPLE) < 0)
            goto done;
        if (rb.len != hb.len) {
            PyErr_Format(PyExc_ValueError, "rooms: %zd bytes for %zd hashes", rb.len, n);
            goto done;
        }
    }
    if (check_geometry(file.len, hsn, index_num) < 0)
        goto done;
    starts_b = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    read_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!starts_b || !read_b)
        goto done;
    {
        walk_params w;
        w.slots = (const uint8_t *)file.buf + HEADER_SIZE;
        w.entries = w.slots + (size_t)SLOT_SIZE * hsn;
        w.nslots = fastmod_of((uint32_t)hsn);
        w.index_num = index_num;
        w.count = count;
        w.begin_ts = begin_ts;
        w.begin = begin;
        w.end = end;
        w.max_num = max_num;
        const int32_t *hashes = hb.buf, *rooms = rb.buf;
        int64_t *starts = (int64_t *)PyBytes_AS_STRING(starts_b);
        int32_t *reads = (int32_t *)PyBytes_AS_STRING(read_b);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < n && !oom; k += WALK_GROUP) {
            Py_ssize_t m = n - k < WALK_GROUP ? n - k : WALK_GROUP;
            oom = walk_group(&w, hashes + k, rooms == NULL ? NULL : rooms + k, m, starts + k, reads + k, &out,
                             &tmp_off, &tmp_key) < 0;
        }
        starts[n] = (int64_t)out.len;
        Py_END_ALLOW_THREADS
    }
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    offsets_b = PyBytes_FromStringAndSize((const char *)out.data, (Py_ssize_t)(out.len * sizeof(int64_t)));
    if (!offsets_b)
        goto done;
    result = PyTuple_Pack(3, starts_b, offsets_b, read_b);
done:
    free(out.data);
    free(tmp_off.data);
    free(tmp_key.data);
    Py_XDECREF(starts_b);
    Py_XDECREF(read_b);
    Py_XDECREF(offsets_b);
    PyBuffer_Release(&file);
    PyBuffer_Release(&hb);
    if (rb.obj != NULL)
        PyBuffer_Release(&rb);
    return result;
}

/* Scratch arrays of the single walks (select_one, select_key), kept from call to call: a
 * look-up then allocates nothing but its answer. They are shared under the GIL, which both
 * entries hold (the module does not declare itself free-threading safe, so a free-threaded
 * build enables the GIL when importing it); but building the answer list may start a garbage
 * collection, whose finalizers may run Python code, look-ups included (on this thread or, once
 * the GIL is handed over, another): a look-up that finds the scratch in use walks with arrays of
 * its own. An array a long answer grew past SCRATCH_KEEP elements is given back after the call. */
#define SCRATCH_KEEP 4096
static vec64 scratch[3];
static int scratch_busy;

static void vec_done(vec64 *v, size_t keep) {
    v->len = 0;
    if (v->cap > keep) {
        free(v->data);
        v->data = NULL;
        v->cap = 0;
    }
}

/* One selectPhyOffset walk (walk_group with a single key, so no second copy of its checks) ->
 * a new list of int, or NULL with an exception set. */
static PyObject *walk_one(const walk_params *w, int32_t key_hash) {
    vec64 own[3] = {{NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}};
    int shared = !scratch_busy;
    vec64 *v = shared ? scratch : own;
    int64_t start;
    int32_t nread;
    PyObject *list = NULL;
    scratch_busy |= shared;
    v[0].len = 0;
    if (walk_group(w, &key_hash, NULL, 1, &start, &nread, &v[0], &v[1], &v[2]) < 0) {
        PyErr_NoMemory();
    } else {
        list = PyList_New((Py_ssize_t)v[0].len);
        for (size_t i = 0; list && i < v[0].len; i++) {
            PyObject *x = PyLong_FromLongLong(v[0].data[i]);
            if (!x) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, x);
        }
    }
    for (int k = 0; k < 3; k++)
        vec_done(&v[k], shared ? SCRATCH_KEEP : 0);
    if (shared)
        scratch_busy = 0;
    return list;
}

/* select_one(buffer, hash_slot_num, index_num, index_count, begin_timestamp, key_hash,
 *            max_num, begin, end) -> list of int: one selectPhyOffset walk, for single look-ups
 * where building arrays would cost more than the walk. */
static PyObject *select_one(PyObject *self, PyObject *args) {
    Py_buffer file;
    Py_ssize_t hsn, index_num;
    long long count, begin_ts, begin, end;
    int max_num;
    int32_t key_hash;
    if (!PyArg_ParseTuple(args, "y*nnLLiiLL", &file, &hsn, &index_num, &count, &begin_ts, &key_hash,
                          &max_num, &begin, &end))
        return NULL;
    PyObject *list = NULL;
    if (check_geometry(file.len, hsn, index_num) == 0) {
        walk_params w = {(const uint8_t *)file.buf + HEADER_SIZE, NULL, fastmod_of((uint32_t)hsn),
                         index_num, count, begin_ts, begin, end, max_num};
        w.entries = w.slots + (size_t)SLOT_SIZE * hsn;
        list = walk_one(&w, key_hash);
    }
    PyBuffer_Release(&file);
    return list;
}

/* max_num as a Java int compares it, after int(obj) as Python converts: any value <= 0 returns
 * nothing (every negative one becomes -1), and no list can reach 2^31 entries, so larger values
 * behave as INT32_MAX. The one definition: rmqlab.formats.indexfile._clamp_max_num calls
 * clamp_max_num below. 0, or -1 with an exception set. */
static int max_num_of(PyObject *obj, int32_t *out) {
    PyObject *v = PyNumber_Long(obj);
    if (!v)
        return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0 || x > INT32_MAX)
        *out = INT32_MAX;
    else if (overflow < 0 || x < 0)
        *out = -1;
    else
        *out = (int32_t)x;
    return 0;
}

static PyObject *clamp_max_num(PyObject *self, PyObject *obj) {
    int32_t max_num;
    return max_num_of(obj, &max_num) < 0 ? NULL : PyLong_FromLong(max_num);
}

/* int(obj) if a Java long holds it, else ValueError naming `name`: the rule and the message of
 * rmqlab.jvm.longs.check_long, which the rest of rmqlab uses; the tests hold the two equal.
 * 0, or -1 with an exception set. */
static int java_long_of(const char *name, PyObject *obj, long long *out) {
    PyObject *v = PyNumber_Long(obj);
    if (!v)
        return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        PyErr_Format(PyExc_ValueError, "%s=%S does not fit in a Java long (signed 64-bit)", name, v);
    Py_DECREF(v);
    return overflow || (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* A header field from IndexFile's in-memory header dict, read at each call so that a put
 * between two look-ups can never leave a stale copy behind. */
static PyObject *str_index_count, *str_begin_timestamp;

static int header_field(PyObject *header, PyObject *name, long long *out) {
    PyObject *v = PyDict_GetItemWithError(header, name); /* borrowed */
    if (!v) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, name);
        return -1;
    }
    /* the Overflow form: PyLong_AsLongLong takes a slow path through bytes for every int of
     * more than one digit, as a timestamp is */
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        PyErr_Format(PyExc_OverflowError, "header %S=%S does not fit in a long", name, v);
    return overflow || (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* select_key(lookup, key, max_num, begin, end) -> list of int
 * IndexFile.select_phy_offsets in one call: `lookup` is [buffer, hash_slot_num, index_num,
 * header dict], fixed for an open file; IndexFile.close puts the closed file's error message
 * (a str) in place of the buffer, so a look-up bound to the list before the close raises it as
 * a ValueError, before any argument is looked at. Then, in the order the Python code checked
 * them: `key` must be a str (java_hash's TypeError), its index hash is String.hashCode with
 * RocketMQ's abs rule; max_num is clamped (max_num_of); begin and end must be Java longs
 * (java_long_of). Then the walk of select_one. Vectorcall: no argument tuple, no format
 * string, no Python frame. */
static PyObject *select_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "select_key takes 5 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *lookup = args[0], *key = args[1];
    if (!PyList_CheckExact(lookup) || PyList_GET_SIZE(lookup) != 4 || !PyDict_Check(PyList_GET_ITEM(lookup, 3))) {
        PyErr_SetString(PyExc_TypeError, "lookup must be [buffer, hash_slot_num, index_num, header dict]");
        return NULL;
    }
    if (PyUnicode_Check(PyList_GET_ITEM(lookup, 0))) {   /* closed: the file's own message */
        PyErr_SetObject(PyExc_ValueError, PyList_GET_ITEM(lookup, 0));
        return NULL;
    }
    if (!PyUnicode_Check(key)) {
        PyObject *type_name = PyType_GetName(Py_TYPE(key));
        if (type_name) {
            PyErr_Format(PyExc_TypeError, "java_hash needs a str, got %U", type_name);
            Py_DECREF(type_name);
        }
        return NULL;
    }
    if (ensure_ready(key) < 0)
        return NULL;
    int32_t key_hash = index_hash_of((int32_t)hash_str(key)), max_num;
    /* the list's items held for the call: an argument's __index__ may run Python that closes
     * the file, which replaces the list's first item */
    PyObject *map = PyList_GET_ITEM(lookup, 0), *header = PyList_GET_ITEM(lookup, 3);
    Py_ssize_t hsn = PyLong_AsSsize_t(PyList_GET_ITEM(lookup, 1));
    if (hsn == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t index_num = PyLong_AsSsize_t(PyList_GET_ITEM(lookup, 2));
    if (index_num == -1 && PyErr_Occurred())
        return NULL;
    Py_INCREF(map);
    Py_INCREF(header);
    /* The slot's cache line is requested now and read by the walk after the checks below: a
     * look-up in a large file waits on about six reads from memory one after the other, and
     * this hides the checks behind the first. (A prefetch never faults. A map that gives no
     * buffer here raises below, after the arguments' errors, in their order.) */
    Py_buffer file;
    int have_file = PyObject_GetBuffer(map, &file, PyBUF_SIMPLE) == 0;
    if (!have_file)
        PyErr_Clear();
    else if (hsn > 0 && (long long)file.len >= HEADER_SIZE + (long long)SLOT_SIZE * hsn)
        __builtin_prefetch((const uint8_t *)file.buf + HEADER_SIZE +
                           (size_t)SLOT_SIZE * ((uint32_t)key_hash % (uint64_t)hsn));
    PyObject *list = NULL;
    long long begin, end, count, begin_ts;
    if (max_num_of(args[2], &max_num) < 0 || java_long_of("begin", args[3], &begin) < 0 ||
        java_long_of("end", args[4], &end) < 0)
        goto done;
    if (header_field(header, str_index_count, &count) < 0 || header_field(header, str_begin_timestamp, &begin_ts) < 0)
        goto done;
    if (!have_file && PyObject_GetBuffer(map, &file, PyBUF_SIMPLE) < 0)
        goto done;
    have_file = 1;
    if (check_geometry(file.len, hsn, index_num) == 0) {
        walk_params w = {(const uint8_t *)file.buf + HEADER_SIZE, NULL, fastmod_of((uint32_t)hsn),
                         index_num, count, begin_ts, begin, end, max_num};
        w.entries = w.slots + (size_t)SLOT_SIZE * hsn;
        list = walk_one(&w, key_hash);
    }
done:
    if (have_file)
        PyBuffer_Release(&file);
    Py_DECREF(map);
    Py_DECREF(header);
    return list;
}

/* check_file(buffer, hash_slot_num, index_num, count) -> tuple
 * The invariants of IndexFile.problems and verify's own index checks in one pass over the slots
 * and one over the entries 1 .. count-1 (count = min(index_count, index_num)); its NumPy twin,
 * IndexFile._invariants_numpy, is the model the tests compare it with. Each check is (first, flagged): the first flagged element (-1 for none) and
 * how many there are. Returns, in order:
 *   occupied           slots holding a non-zero value
 *   longest_chain      the most entries with a non-negative key_hash in one slot (by hash)
 *   slot_out_of_range  slot values outside 0 .. count-1                      (slot index)
 *   wrong_head         slots whose head entry hashes to another slot         (slot index)
 *   negative_hash      entries with key_hash < 0                             (entry number - 1)
 *   negative_time      entries with time_diff < 0
 *   bad_prev           prev_index outside 0 .. number-1
 *   prev_slot          prev_index linking entries of different slots
 *   twice              entries referenced more than once by slots and prev_index
 *   unreached          entries referenced by none
 *   time_order         entries whose older chain entry has the greater time_diff (entry 1's
 *                      counted as 0: it is measured from a seed)
 * Memory: a byte an entry and 4 bytes a slot. */
typedef struct {
    int64_t first, count;
} flagged;

static inline void flag(flagged *f, int64_t i) {
    if (f->first < 0)
        f->first = i;
    f->count++;
}

static inline int64_t slot_of_hash(int32_t h, Py_ssize_t hsn) { return h >= 0 ? (int64_t)h % hsn : -1; }

static PyObject *check_file(PyObject *self, PyObject *args) {
    Py_buffer file;
    Py_ssize_t hsn, index_num, count;
    if (!PyArg_ParseTuple(args, "y*nnn", &file, &hsn, &index_num, &count))
        return NULL;
    PyObject *res = NULL;
    uint8_t *refs = NULL;
    uint32_t *chains = NULL;
    if (check_geometry(file.len, hsn, index_num) < 0)
        goto done;
    if (count < 0 || count > index_num) {
        PyErr_Format(PyExc_ValueError, "count %zd is outside 0 .. index_num (%zd)", count, index_num);
        goto done;
    }
    const uint8_t *slots = (const uint8_t *)file.buf + HEADER_SIZE;
    const uint8_t *entries = slots + (size_t)SLOT_SIZE * hsn;
    refs = calloc((size_t)(count > 0 ? count : 1), 1);
    chains = calloc((size_t)hsn, sizeof(uint32_t));
    if (!refs || !chains) {
        PyErr_NoMemory();
        goto done;
    }
    flagged out_of_range = {-1, 0}, wrong_head = {-1, 0}, neg_hash = {-1, 0}, neg_time = {-1, 0},
            bad_prev = {-1, 0}, prev_slot = {-1, 0}, twice = {-1, 0}, unreached = {-1, 0}, time_order = {-1, 0};
    int64_t occupied = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < hsn; i++) {
        int64_t v = load_i32(slots + (size_t)SLOT_SIZE * i);
        if (v != 0)
            occupied++;
        if (v < 0 || v >= count) {
            flag(&out_of_range, i);
            continue;
        }
        if (v > 0) {
            if (refs[v] < 2)
                refs[v]++;
            if (slot_of_hash(load_i32(entries + (size_t)ENTRY_SIZE * v + ENTRY_KEY_HASH_OFFSET), hsn) != i)
                flag(&wrong_head, i);
        }
    }
    for (int64_t num = 1; num < count; num++) {
        const uint8_t *e = entries + (size_t)ENTRY_SIZE * num;
        int32_t h = load_i32(e + ENTRY_KEY_HASH_OFFSET);
        int32_t td = load_i32(e + ENTRY_TIME_DIFF_OFFSET);
        int64_t prev = load_i32(e + ENTRY_PREV_INDEX_OFFSET);
        if (h < 0)
            flag(&neg_hash, num - 1);
        else
            chains[h % hsn]++;
        if (td < 0)
            flag(&neg_time, num - 1);
        if (prev < 0 || prev >= num) {
            flag(&bad_prev, num - 1);
        } else if (prev > 0) {
            const uint8_t *older = entries + (size_t)ENTRY_SIZE * prev;
            if (slot_of_hash(load_i32(older + ENTRY_KEY_HASH_OFFSET), hsn) != slot_of_hash(h, hsn))
                flag(&prev_slot, num - 1);
            if (refs[prev] < 2)
                refs[prev]++;
            int64_t older_td = prev == 1 ? 0 : load_i32(older + ENTRY_TIME_DIFF_OFFSET);
            int64_t own_td = num == 1 ? 0 : td;
            if (older_td > own_td)
                flag(&time_order, num - 1);
        }
    }
    for (int64_t num = 1; num < count; num++) {
        if (refs[num] > 1)
            flag(&twice, num - 1);
        else if (refs[num] == 0)
            flag(&unreached, num - 1);
    }
    Py_END_ALLOW_THREADS
    uint32_t longest = 0;
    for (Py_ssize_t i = 0; i < hsn; i++)
        if (chains[i] > longest)
            longest = chains[i];
    res = Py_BuildValue("(LI(LL)(LL)(LL)(LL)(LL)(LL)(LL)(LL)(LL))", (long long)occupied, (unsigned int)longest,
                        (long long)out_of_range.first, (long long)out_of_range.count,
                        (long long)wrong_head.first, (long long)wrong_head.count,
                        (long long)neg_hash.first, (long long)neg_hash.count,
                        (long long)neg_time.first, (long long)neg_time.count,
                        (long long)bad_prev.first, (long long)bad_prev.count,
                        (long long)prev_slot.first, (long long)prev_slot.count,
                        (long long)twice.first, (long long)twice.count,
                        (long long)unreached.first, (long long)unreached.count,
                        (long long)time_order.first, (long long)time_order.count);
done:
    free(refs);
    free(chains);
    PyBuffer_Release(&file);
    return res;
}

static PyMethodDef methods[] = {
    {"put_one", put_one, METH_VARARGS,
     "put_one(buffer, hash_slot_num, index_num, header6, key_hash, phy, ts, every_put) -> header6 or None"},
    {"select_one", select_one, METH_VARARGS,
     "select_one(buffer, hash_slot_num, index_num, index_count, begin_ts, key_hash, max_num, begin, end) -> list"},
    {"select_key", (PyCFunction)(void (*)(void))select_key, METH_FASTCALL,
     "select_key(lookup, key, max_num, begin, end) -> list: IndexFile.select_phy_offsets in C;"
     " lookup = (buffer, hash_slot_num, index_num, header dict)"},
    {"clamp_max_num", clamp_max_num, METH_O,
     "clamp_max_num(max_num) -> int: int(max_num) as a Java int compares it: -1 for any negative"
     " value, 2**31-1 for any larger one"},
    {"put_entries", put_entries, METH_VARARGS,
     "put_entries(buffer, hash_slot_num, index_num, header6, hashes, phy, ts, every_put, fd=-1,"
     " java_hashes=False, threads=1) -> header6"},
    {"check_file", check_file, METH_VARARGS,
     "check_file(buffer, hash_slot_num, index_num, count) -> (occupied, longest_chain, then (first, count) of"
     " nine invariants): IndexFile.problems and verify's index checks in one pass"},
    {"select_many", select_many, METH_VARARGS,
     "select_many(buffer, hash_slot_num, index_num, index_count, begin_ts, hashes, max_num, begin, end[, rooms])"
     " -> (starts, offsets, entries_read) as bytes of int64/int64/int32"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_indexcore",
                                    "IndexFile put and select loops in C.", -1, methods};

/* The layout facts above, exported so that Python can check them against its declarations. */
#define NAMED(constant) {#constant, constant}
static const struct {
    const char *name;
    long value;
} exported_constants[] = {
    NAMED(HEADER_BEGIN_TIMESTAMP_OFFSET), NAMED(HEADER_END_TIMESTAMP_OFFSET),
    NAMED(HEADER_BEGIN_PHY_OFFSET_OFFSET), NAMED(HEADER_END_PHY_OFFSET_OFFSET),
    NAMED(HEADER_HASH_SLOT_COUNT_OFFSET), NAMED(HEADER_INDEX_COUNT_OFFSET), NAMED(HEADER_SIZE),
    NAMED(SLOT_NEWEST_ENTRY_OFFSET), NAMED(SLOT_SIZE),
    NAMED(ENTRY_KEY_HASH_OFFSET), NAMED(ENTRY_PHY_OFFSET_OFFSET), NAMED(ENTRY_TIME_DIFF_OFFSET),
    NAMED(ENTRY_PREV_INDEX_OFFSET), NAMED(ENTRY_SIZE),
};
#undef NAMED

PyMODINIT_FUNC PyInit__indexcore(void) {
    str_index_count = PyUnicode_InternFromString("index_count");
    str_begin_timestamp = PyUnicode_InternFromString("begin_timestamp");
    if (!str_index_count || !str_begin_timestamp)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    for (size_t i = 0; m != NULL && i < sizeof exported_constants / sizeof exported_constants[0]; i++)
        if (PyModule_AddIntConstant(m, exported_constants[i].name, exported_constants[i].value) < 0)
            Py_CLEAR(m);
    return m;
}
