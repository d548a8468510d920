/* Big-endian loads and stores of Java's signed integers, shared by the C accelerators.
 * RocketMQ writes every integer big-endian (java.nio.ByteBuffer's default order). memcpy keeps
 * unaligned access defined; the compiler turns each into one load or store and a bswap. */
#ifndef RMQLAB_BIGENDIAN_H
#define RMQLAB_BIGENDIAN_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RMQLAB_BE32(v) (v)
#define RMQLAB_BE64(v) (v)
#else
#define RMQLAB_BE32(v) __builtin_bswap32(v)
#define RMQLAB_BE64(v) __builtin_bswap64(v)
#endif

static inline int32_t load_i32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return (int32_t)RMQLAB_BE32(v);
}

static inline int64_t load_i64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return (int64_t)RMQLAB_BE64(v);
}

/* Stores the low 32 bits of x, as Java's (int) cast would. */
static inline void store_i32(uint8_t *p, int64_t x) {
    uint32_t v = RMQLAB_BE32((uint32_t)x);
    memcpy(p, &v, 4);
}

static inline void store_i64(uint8_t *p, int64_t x) {
    uint64_t v = RMQLAB_BE64((uint64_t)x);
    memcpy(p, &v, 8);
}

#endif
