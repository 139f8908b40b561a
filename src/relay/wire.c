/* SPDX-License-Identifier: MIT */
/* What both ends of the relay protocol share: names, paths, the token and its HMAC (docs/relay.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "relay/proto.h"

static int name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int relay_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > RELAY_MAX_NAME || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

int relay_path_ok(const char *s, size_t n)
{
	unsigned depth = 0;
	size_t i = 0;

	if (n == 0 || n > RELAY_MAX_PATH)
		return 0;
	while (i < n) {
		size_t b = i;
		while (i < n && s[i] != '/') {
			unsigned char c = (unsigned char)s[i];
			if (!name_char(c) && c != '+')
				return 0; /* NUL, '/', controls, '\\' ... */
			i++;
		}
		size_t len = i - b;
		if (len == 0 || (len == 1 && s[b] == '.') ||
		    (len == 2 && s[b] == '.' && s[b + 1] == '.'))
			return 0; /* absolute, "//", ".", ".." */
		if (++depth > RELAY_MAX_DEPTH)
			return 0;
		if (i < n)
			i++; /* the '/' */
		if (i == n && s[n - 1] == '/')
			return 0;
	}
	return 1;
}

void relay_mac(const unsigned char *token, size_t tlen,
	       const unsigned char nonce[RELAY_NONCE], const unsigned char *msg,
	       size_t mlen, unsigned char mac[RELAY_MAC])
{
	unsigned char buf[RELAY_NONCE + RELAY_MAX_PREAUTH];
	unsigned int outl = RELAY_MAC;

	if (mlen > RELAY_MAX_PREAUTH)
		mlen = RELAY_MAX_PREAUTH;
	memcpy(buf, nonce, RELAY_NONCE);
	memcpy(buf + RELAY_NONCE, msg, mlen);
	if (!HMAC(EVP_sha256(), token, (int)tlen, buf, RELAY_NONCE + mlen, mac,
		  &outl))
		memset(mac, 0, RELAY_MAC); /* never equal to a real MAC's */
}

int relay_mac_equal(const unsigned char *a, const unsigned char *b)
{
	return CRYPTO_memcmp(a, b, RELAY_MAC) == 0;
}

int relay_random(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int relay_token_load(const char *path, unsigned char *buf, size_t cap,
		     const char **why)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	*why = "cannot open the token file";
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = "the token file is not a regular file";
		return -EINVAL;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		*why = "the token file is readable by others (chmod 600 it)";
		return -EPERM;
	}
	n = read(fd, buf, cap);
	close(fd);
	*why = "cannot read the token file";
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	*why = "the token must hold 16 to 4096 bytes of secret";
	if (n < (ssize_t)RELAY_TOKEN_MIN || (size_t)n >= cap ||
	    n > (ssize_t)RELAY_TOKEN_MAX)
		return -EINVAL;
	return (int)n;
}

int relay_split_addr(const char *addr, char *host, size_t hn, char *port,
		     size_t pn)
{
	const char *colon, *h = addr;
	size_t hl;

	if (addr[0] == '[') {
		const char *e = strchr(addr, ']');
		if (!e || e[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hl = (size_t)(e - h);
		colon = e + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
	}
	if (hl == 0 || hl >= hn || !colon[1] || strlen(colon + 1) >= pn)
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	strcpy(port, colon + 1);
	return 0;
}
