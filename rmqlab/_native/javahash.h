/* Java's String.hashCode (h = 31*h + unit over UTF-16 code units, wrapping at 32 bits) over
 * byte-sized units, UTF-16 units, Python str and UTF-8 text, shared by the C accelerators that
 * hash strings (rmqlab._jhash, rmqlab._dispatchcore, rmqlab._indexcore). See jhash.c for how the folds keep the dependency chain
 * short. */
#ifndef RMQLAB_JAVAHASH_H
#define RMQLAB_JAVAHASH_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* SSE2 is part of x86-64; other targets use the portable 64-bit word code. */
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define JH_SSE2 1
#else
#define JH_SSE2 0
#endif

#define P1 ((uint32_t)31u)
#define P2 ((uint32_t)961u)
#define P3 ((uint32_t)29791u)
#define P4 ((uint32_t)923521u)
#define P8 ((uint32_t)(P4 * P4))
#define P16 ((uint32_t)(P8 * P8))


static inline int ctz32(uint32_t x)   /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
#endif
}

static inline uint32_t fold8(uint32_t h, uint32_t u0, uint32_t u1, uint32_t u2, uint32_t u3,
                             uint32_t u4, uint32_t u5, uint32_t u6, uint32_t u7)
{
    uint32_t a = u0 * P3 + u1 * P2 + u2 * P1 + u3;
    uint32_t b = u4 * P3 + u5 * P2 + u6 * P1 + u7;
    return h * P8 + a * P4 + b;
}

static inline uint32_t fold4(uint32_t h, uint32_t u0, uint32_t u1, uint32_t u2, uint32_t u3)
{
    return h * P4 + (u0 * P3 + u1 * P2 + u2 * P1 + u3);
}

/* Eight byte-sized units (ASCII or Latin-1) in one 64-bit word, first unit in the low byte:
 * u0*31^7 + ... + u7, mod 2^32, with three multiplies instead of seven. Pairs of bytes become
 * 16-bit lanes b0*31+b1 (< 2^13), pairs of those 32-bit lanes (< 2^23); the last multiply puts
 * lo*31^4 + hi in the top half of the 64-bit product. Lanes cannot carry into each other. */
static inline uint32_t swar8(uint64_t w)
{
    const uint64_t m8 = UINT64_C(0x00FF00FF00FF00FF), m16 = UINT64_C(0x0000FFFF0000FFFF);
    uint64_t x = (w & m8) * 31 + ((w >> 8) & m8);
    uint64_t y = (x & m16) * 961 + ((x >> 16) & m16);
    return (uint32_t)((y * (((uint64_t)P4 << 32) | 1)) >> 32);
}

static inline uint64_t ld_le64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return ((uint64_t)p[0]) | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24)
         | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48)
         | ((uint64_t)p[7] << 56);
#else
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
#endif
}

#if JH_SSE2
/* Sixteen byte-sized units: the same pairing as swar8, done by pmaddwd (16x16->32 multiply-add
 * of neighbours, exact here because every operand is below 2^15). */
static inline uint32_t fold16(uint32_t h, __m128i v)
{
    const __m128i z = _mm_setzero_si128();
    const __m128i k31 = _mm_set1_epi32((1 << 16) | 31);    /* 16-bit lanes 31, 1, 31, 1, ... */
    const __m128i k961 = _mm_set1_epi32((1 << 16) | 961);
    const uint64_t K = ((uint64_t)P4 << 32) | 1;
    __m128i q = _mm_packs_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(v, z), k31),
                                _mm_madd_epi16(_mm_unpackhi_epi8(v, z), k31));
    __m128i r = _mm_madd_epi16(q, k961);                    /* four 4-unit partial sums */
    uint64_t a = (uint64_t)_mm_cvtsi128_si64(r);
    uint64_t b = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(r, r));
    uint32_t ta = (uint32_t)((a * K) >> 32), tb = (uint32_t)((b * K) >> 32);
    return h * P16 + ta * P8 + tb;
}
#endif

/* A code point as Java stores it: one unit in the BMP (lone surrogates included), else a pair. */
static inline uint32_t step_cp(uint32_t h, uint32_t c)
{
    if (c > 0xFFFF) {
        c -= 0x10000;
        h = h * 31 + (0xD800 + (c >> 10));
        return h * 31 + (0xDC00 + (c & 0x3FF));
    }
    return h * 31 + c;
}

/* Latin-1 (PyUnicode kind 1) and ASCII: every byte is one UTF-16 unit. */
static inline uint32_t hash_u8units(uint32_t h, const uint8_t *p, Py_ssize_t n)
{
#if JH_SSE2
    for (; n >= 16; p += 16, n -= 16)
        h = fold16(h, _mm_loadu_si128((const __m128i *)p));
#endif
    for (; n >= 8; p += 8, n -= 8)
        h = h * P8 + swar8(ld_le64(p));
    if (n >= 4) { h = fold4(h, p[0], p[1], p[2], p[3]); p += 4; n -= 4; }
    while (n-- > 0) h = h * 31 + *p++;
    return h;
}

/* UCS2 (kind 2) is already UTF-16 without pairs. */
static inline uint32_t hash_u16units(uint32_t h, const uint16_t *p, Py_ssize_t n)
{
    for (; n >= 8; p += 8, n -= 8)
        h = fold8(h, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
    if (n >= 4) { h = fold4(h, p[0], p[1], p[2], p[3]); p += 4; n -= 4; }
    while (n-- > 0) h = h * 31 + *p++;
    return h;
}

/* ---- Python str --------------------------------------------------------------------- */

/* UCS4 code points from a Python str (kind 4): all <= 0x10FFFF by construction. */
static inline uint32_t hash_ucs4_str(uint32_t h, const Py_UCS4 *p, Py_ssize_t n)
{
    while (n >= 4) {
        if ((p[0] | p[1] | p[2] | p[3]) <= 0xFFFF) {
            h = fold4(h, p[0], p[1], p[2], p[3]);
        } else {
            h = step_cp(h, p[0]); h = step_cp(h, p[1]);
            h = step_cp(h, p[2]); h = step_cp(h, p[3]);
        }
        p += 4; n -= 4;
    }
    while (n-- > 0) h = step_cp(h, *p++);
    return h;
}

/* Strings that are not "ready" exist only before Python 3.12 (legacy wstr API). */
static inline int ensure_ready(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) return -1;
#else
    (void)s;
#endif
    return 0;
}

/* String.hashCode of a ready Python str, whatever its storage kind (the one definition behind
 * rmqlab.jvm.hashcode.java_hash and the index look-up's key hash). */
static inline uint32_t hash_str(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *d = PyUnicode_DATA(s);
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND: return hash_u8units(0, (const uint8_t *)d, n);
    case PyUnicode_2BYTE_KIND: return hash_u16units(0, (const uint16_t *)d, n);
    default:                   return hash_ucs4_str(0, (const Py_UCS4 *)d, n);
    }
}

/* ---- UTF-8 (Arrow) ---------------------------------------------------------------------- */

/* Continues h over the UTF-16 units of UTF-8 text. Strict UTF-8, as Arrow requires: overlong
 * forms, encoded surrogates and code points past U+10FFFF are rejected rather than guessed at.
 * Returns 0, or -1 for malformed input. */
static inline int hash_utf8_from(uint32_t h, const uint8_t *p, Py_ssize_t n, uint32_t *out)
{
    const uint8_t *end = p + n;
    while (p < end) {
        /* Count the ASCII bytes ahead, sixteen at a time where the string is long enough. */
        Py_ssize_t rem = end - p, k = 0;
#if JH_SSE2
        if (rem >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            int m = _mm_movemask_epi8(v);
            if (m == 0) { h = fold16(h, v); p += 16; continue; }
            k = ctz32((uint32_t)m);
        } else
#endif
        {
            if (rem >= 8) {
                uint64_t w = ld_le64(p), hi = w & UINT64_C(0x8080808080808080);
                if (hi == 0) { h = h * P8 + swar8(w); p += 8; continue; }
            }
            while (k < rem && p[k] < 0x80) k++;
        }
        h = hash_u8units(h, p, k);
        p += k;
        if (p >= end) break;

        uint32_t c = *p;            /* a lead byte >= 0x80 */
        if (c < 0xC2) {
            return -1;
        } else if (c < 0xE0) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return -1;
            h = h * 31 + (((c & 0x1F) << 6) | (p[1] & 0x3F));
            p += 2;
        } else if (c < 0xF0) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return -1;
            if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)) return -1;
            h = h * 31 + (((c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F));
            p += 3;
        } else if (c < 0xF5) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80
                || (p[3] & 0xC0) != 0x80) return -1;
            if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)) return -1;
            uint32_t cp = ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12)
                        | ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
            h = step_cp(h, cp);
            p += 4;
        } else {
            return -1;
        }
    }
    *out = h;
    return 0;
}

static inline int hash_utf8(const uint8_t *p, Py_ssize_t n, uint32_t *out)
{
    return hash_utf8_from(0, p, n, out);
}

#endif
