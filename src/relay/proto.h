/* SPDX-License-Identifier: MIT */
/* The relay's wire protocol (docs/relay.md): frame types, limits, byte order, names and the HMAC, shared by the relay and its senders. */
#ifndef STRATA_RELAY_PROTO_H
#define STRATA_RELAY_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define RELAY_VERSION 1u
#define RELAY_HDR 8u                /* u32 type, u32 payload length */
#define RELAY_CHUNK (1u << 20)      /* most file bytes in one WRITE */
#define RELAY_MAX_FRAME (RELAY_CHUNK + 4096u) /* payload, after auth */
#define RELAY_MAX_PREAUTH 1024u     /* payload of a HELLO */
#define RELAY_NONCE 32u
#define RELAY_MAC 32u               /* HMAC-SHA256 */
#define RELAY_SID 16u               /* session id */
#define RELAY_MAX_NAME 64u          /* host and trace names */
#define RELAY_MAX_PATH 256u         /* a file's path inside the trace */
#define RELAY_MAX_DEPTH 8u          /* components of such a path */
#define RELAY_MAX_OFFSET (1ull << 40) /* no file grows past 1 TiB */
#define RELAY_MAX_FILE_ID 65535u
#define RELAY_TOKEN_MIN 16u         /* bytes of secret in a token file */
#define RELAY_TOKEN_MAX 4096u

/* docs/relay.md §2: relay -> sender, then sender -> relay. */
enum relay_type {
	RELAY_CHALLENGE = 1, /* u32 version, u8 nonce[32] */
	RELAY_WELCOME = 2,   /* u64 applied, u32 n, n x (u32 id, u64 size) */
	RELAY_ACK = 3,       /* u64 seq: every frame up to it is applied */
	RELAY_ERROR = 4,     /* u32 errno, text; the relay then closes */
	RELAY_TSYNC = 5,     /* u32 id, u64 t1: the relay's clock at sending */
	RELAY_HELLO = 16,    /* u8 mac[32], u32 version, u8 sid[16], u32 flags,
			      * u16 n, host[n], u16 m, trace[m] */
	RELAY_CREATE = 17,   /* u64 seq, u32 id, u16 n, path[n] */
	RELAY_WRITE = 18,    /* u64 seq, u32 id, u64 offset, bytes */
	RELAY_CLOSE = 19,    /* u64 seq, u32 id, u64 size, u32 flags, u16 n, final[n] */
	RELAY_METADATA = 20, /* u64 seq, u16 n, path[n], text */
	RELAY_END = 21,      /* u64 seq */
	RELAY_PING = 22,     /* nothing */
	RELAY_WRITEZ = 23,   /* u64 seq, u32 id, u64 offset, u32 n, zstd frame
			      * of n bytes (n <= RELAY_CHUNK) */
	RELAY_TSYNC_REPLY = 24, /* u32 id, u64 t1, u64 t2, u64 t3: t1 echoed,
				 * the sender's clock at receiving and at
				 * answering (docs/relay.md §7) */
};

#define RELAY_HELLO_RESUME 1u     /* HELLO flags: continue session sid */
#define RELAY_HELLO_ZSTD 2u       /* HELLO flags: WRITEZ frames will come */
#define RELAY_HELLO_TSYNC 4u      /* HELLO flags: the sender answers TSYNC */
#define RELAY_TSYNC_LEN 12u       /* payload of a TSYNC */
#define RELAY_TSYNC_REPLY_LEN 28u /* payload of a TSYNC_REPLY */
/* The file the relay writes at the root of each trace it receives: its
 * estimate of the sender's clock offset (docs/relay.md §7). */
#define RELAY_CLOCK_FILE "clock-offset"
#define RELAY_CLOCK_TMP ".clock-offset.tmp"

/* Nanoseconds of CLOCK_MONOTONIC: what both ends stamp TSYNC frames with
 * (the trace clock of `--clock mono`, format.md §5). */
static inline uint64_t relay_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#define RELAY_CLOSE_UNLINK 1u     /* CLOSE flags: the file is dropped */
#define RELAY_SIZE_KEEP UINT64_MAX /* CLOSE size: leave it as written */

static inline void put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t get16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
/* (The protocol is little-endian: strata builds for x86-64 and other
 * little-endian Linux targets only, as its trace format does.) */

/* A host or trace name: 1 to 64 of [A-Za-z0-9._-], not starting with a
 * dot. 1 if valid. */
int relay_name_ok(const char *s, size_t n);
/* A file's path inside a trace (docs/relay.md §4): relative, at most 8
 * components of [A-Za-z0-9._+-], none empty, "." or "..". 1 if valid. */
int relay_path_ok(const char *s, size_t n);

/* HMAC-SHA256 of nonce || msg under the token. */
void relay_mac(const unsigned char *token, size_t tlen,
	       const unsigned char nonce[RELAY_NONCE], const unsigned char *msg,
	       size_t mlen, unsigned char mac[RELAY_MAC]);
/* Constant-time comparison of two MACs: 1 if equal. */
int relay_mac_equal(const unsigned char *a, const unsigned char *b);
/* Random bytes from the kernel: 0 or a negative errno. */
int relay_random(void *buf, size_t n);

/* Read a token file: its bytes, trailing newlines cut, RELAY_TOKEN_MIN
 * to RELAY_TOKEN_MAX of them. Returns the length, or a negative errno
 * with *why saying what is wrong (-EINVAL: too short or too long;
 * -EPERM: readable by others than its owner). */
int relay_token_load(const char *path, unsigned char *buf, size_t cap,
		     const char **why);

/* "HOST:PORT" or "[V6]:PORT" into host and port strings. 0 or -EINVAL. */
int relay_split_addr(const char *addr, char *host, size_t hn, char *port,
		     size_t pn);

#endif /* STRATA_RELAY_PROTO_H */
