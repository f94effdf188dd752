/*
 * crypto/siv.c — AES-SIV (RFC 5297) on EVP AES-CBC, AES-ECB and AES-CTR (see siv.h).
 *
 * CMAC (NIST SP 800-38B) is CBC-MAC with a zero IV whose last block is
 * XORed with subkey K1 (complete block) or padded and XORed with K2. The
 * leading blocks go through one CBC update per chunk so long inputs run at
 * AES-NI CBC speed; only the last (tweaked) block is handled by hand.
 *
 * Short messages are where SIV's cost is per call, and in OpenSSL 3 setting
 * an IV on an EVP context is its most expensive step. So nothing here sets
 * one per message: the CBC context is never re-IV'd after keying; instead we
 * keep its chaining value (the last block it output) and XOR it into the
 * first block of the next CMAC, which is the same as starting from a zero
 * IV. And the CTR keystream of a short message is made by ECB-encrypting
 * its counter blocks; only long messages re-IV the CTR context, where that
 * cost vanishes against the data.
 */
#include "crypto/siv.h"

#include "crypto/evp.h"

#include <limits.h>
#include <string.h>
#include <openssl/crypto.h>

#define CHUNK 1024     /* scratch for CBC output nobody reads but the last block */
#define ECB_CTR_MAX 256 /* up to this many bytes, CTR runs as ECB over counter blocks */

static const uint8_t zero_block[16];


/* Doubling in GF(2^128), RFC 5297's dbl(). */
static void dbl(uint8_t b[16])
{
    uint8_t carry = b[0] >> 7;
    for (int i = 0; i < 15; i++)
        b[i] = (uint8_t)((b[i] << 1) | (b[i + 1] >> 7));
    b[15] = (uint8_t)((b[15] << 1) ^ (carry ? 0x87 : 0));
}

static inline void xor16(uint8_t *dst, const uint8_t *a)
{
    for (int i = 0; i < 16; i++)
        dst[i] ^= a[i];
}

/* Runs whole blocks through the CMAC chain (the CBC context keeps the state).
 * The first block of a CMAC is XORed with the context's chaining value first:
 * CBC then encrypts it as if the IV were zero. */
static int chain_blocks(pcb_siv *s, const uint8_t *in, size_t len, int *first)
{
    uint8_t scratch[CHUNK];
    size_t used = 0;
    int ok = 1;
    if (len > 0 && *first) {
        uint8_t b[16];
        int outl;
        memcpy(b, in, 16);
        xor16(b, s->chain);
        ok = EVP_EncryptUpdate(s->mac, scratch, &outl, b, 16);
        OPENSSL_cleanse(b, sizeof b);
        used = 16;
        *first = 0;
        in += 16;
        len -= 16;
    }
    while (ok && len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;
        int outl;
        ok = EVP_EncryptUpdate(s->mac, scratch, &outl, in, (int)n);
        used = used > n ? used : n;
        in += n;
        len -= n;
    }
    OPENSSL_cleanse(scratch, used); /* only what was written */
    return ok;
}

/*
 * mac = CMAC(K1, msg), where, if xor_end is not NULL, its 16 bytes are first
 * XORed into the last 16 bytes of msg (S2V's "xorend"; then len >= 16).
 */
static int cmac(pcb_siv *s, const uint8_t *msg, size_t len,
                const uint8_t *xor_end, uint8_t mac[16])
{
    uint8_t tail[32], last[16];
    size_t tail_len, head_len;
    int outl, first = 1, ok;

    if (s->chain_lost) { /* a failed update left the CBC state unknown */
        if (!EVP_EncryptInit_ex2(s->mac, NULL, NULL, zero_block, NULL))
            return 0;
        memset(s->chain, 0, 16);
        s->chain_lost = 0;
    }
    /* The tail holds the final block, plus the block before it when the
     * xorend span straddles two blocks; everything before is chained as is. */
    tail_len = len == 0 ? 0 : ((len - 1) % 16) + 1;
    if (xor_end != NULL && tail_len < 16)
        tail_len += 16;
    head_len = len - tail_len;
    s->chain_lost = 1; /* until the chain is known again below */
    if (!chain_blocks(s, msg, head_len, &first))
        return 0;
    memcpy(tail, msg + head_len, tail_len);
    if (xor_end != NULL)
        for (int i = 0; i < 16; i++)
            tail[tail_len - 16 + i] ^= xor_end[i];
    if (tail_len > 16) {
        if (!chain_blocks(s, tail, 16, &first))
            return 0;
        memmove(tail, tail + 16, tail_len - 16);
        tail_len -= 16;
    }
    if (tail_len == 16) {
        memcpy(last, tail, 16);
        xor16(last, s->sub1);
    } else {
        memset(last, 0, 16);
        memcpy(last, tail, tail_len);
        last[tail_len] = 0x80;
        xor16(last, s->sub2);
    }
    if (first)
        xor16(last, s->chain);
    ok = EVP_EncryptUpdate(s->mac, mac, &outl, last, 16);
    if (ok) {
        memcpy(s->chain, mac, 16);
        s->chain_lost = 0;
    }
    OPENSSL_cleanse(tail, sizeof tail);
    OPENSSL_cleanse(last, sizeof last);
    return ok;
}

int pcb_siv_new(pcb_siv *s, const EVP_CIPHER *cbc, const EVP_CIPHER *ecb, const EVP_CIPHER *ctr)
{
    memset(s, 0, sizeof *s);
    s->mac = EVP_CIPHER_CTX_new();
    s->ecb = EVP_CIPHER_CTX_new();
    s->ctr = EVP_CIPHER_CTX_new();
    if (s->mac == NULL || s->ecb == NULL || s->ctr == NULL
        || !EVP_EncryptInit_ex2(s->mac, cbc, NULL, NULL, NULL)
        || !EVP_EncryptInit_ex2(s->ecb, ecb, NULL, NULL, NULL)
        || !EVP_EncryptInit_ex2(s->ctr, ctr, NULL, NULL, NULL)
        || !EVP_CIPHER_CTX_set_padding(s->mac, 0)
        || !EVP_CIPHER_CTX_set_padding(s->ecb, 0)) {
        pcb_siv_free(s);
        return 0;
    }
    s->key_len = 2 * (size_t)EVP_CIPHER_get_key_length(cbc);
    return 1;
}

int pcb_siv_set_key(pcb_siv *s, const uint8_t *key, size_t key_len)
{
    const size_t half = key_len / 2;
    uint8_t l[16];
    int outl;

    if (key_len != s->key_len)
        return 0;
    s->chain_lost = 1;
    if (!EVP_EncryptInit_ex2(s->mac, NULL, key, zero_block, NULL)
        || !EVP_EncryptInit_ex2(s->ecb, NULL, key + half, NULL, NULL)
        || !EVP_EncryptInit_ex2(s->ctr, NULL, key + half, NULL, NULL)
        || !EVP_EncryptUpdate(s->mac, l, &outl, zero_block, 16))
        return 0;
    memcpy(s->chain, l, 16); /* the CBC state after L = E(K1, 0) */
    s->chain_lost = 0;
    memcpy(s->sub1, l, 16);
    dbl(s->sub1);
    memcpy(s->sub2, s->sub1, 16);
    dbl(s->sub2);
    OPENSSL_cleanse(l, sizeof l);
    return cmac(s, zero_block, 16, NULL, s->d0);
}

void pcb_siv_free(pcb_siv *s)
{
    EVP_CIPHER_CTX_free(s->mac);
    EVP_CIPHER_CTX_free(s->ecb);
    EVP_CIPHER_CTX_free(s->ctr);
    OPENSSL_cleanse(s, sizeof *s);
}

int pcb_s2v_add(pcb_siv *s, uint8_t d[16], const uint8_t *ad, size_t len)
{
    uint8_t mac[16];
    if (!cmac(s, ad, len, NULL, mac))
        return 0;
    dbl(d);
    xor16(d, mac);
    return 1;
}

int pcb_s2v_final(pcb_siv *s, const uint8_t d[16], const uint8_t *p, size_t len,
                  uint8_t v[16])
{
    uint8_t t[16];
    int ok;
    memcpy(t, d, 16);
    if (len >= 16) {
        ok = cmac(s, p, len, t, v);
    } else {
        /* T = dbl(D) xor pad(Sn) */
        dbl(t);
        for (size_t i = 0; i < len; i++)
            t[i] ^= p[i];
        t[len] ^= 0x80;
        ok = cmac(s, t, 16, NULL, v);
    }
    OPENSSL_cleanse(t, sizeof t);
    return ok;
}

/* CTR under K2 from Q = V with bits 63 and 31 cleared (RFC 5297 2.6); the
 * counter is Q + i as a 128-bit big-endian number, as OpenSSL's CTR counts. */
static int siv_ctr(pcb_siv *s, const uint8_t v[16], const uint8_t *in,
                   size_t len, uint8_t *out)
{
    uint8_t q[16];
    memcpy(q, v, 16);
    q[8] &= 0x7f;
    q[12] &= 0x7f;
    if (len > ECB_CTR_MAX) {
        if (!EVP_EncryptInit_ex2(s->ctr, NULL, NULL, q, NULL))
            return 0;
        return pcb_evp_update(s->ctr, out, NULL, in, len);
    }
    if (len == 0)
        return 1;
    uint8_t ks[ECB_CTR_MAX];
    size_t blocks = (len + 15) / 16;
    int outl, ok;
    for (size_t b = 0; b < blocks; b++) {
        memcpy(ks + 16 * b, q, 16);
        for (int i = 15; i >= 0 && ++q[i] == 0; i--)
            ;
    }
    ok = EVP_EncryptUpdate(s->ecb, ks, &outl, ks, (int)(16 * blocks));
    if (ok)
        for (size_t i = 0; i < len; i++)
            out[i] = in[i] ^ ks[i];
    OPENSSL_cleanse(ks, 16 * blocks);
    return ok;
}

int pcb_siv_encrypt(pcb_siv *s, const uint8_t d[16], const uint8_t *p,
                    size_t len, uint8_t *out)
{
    uint8_t v[16];
    if (!pcb_s2v_final(s, d, p, len, v))
        return 0;
    /* V first, then the ciphertext: p may alias out + 16 only if the caller
     * arranged it, so compute V before writing anything. */
    if (!siv_ctr(s, v, p, len, out + 16))
        return 0;
    memcpy(out, v, 16);
    return 1;
}

int pcb_siv_decrypt(pcb_siv *s, const uint8_t d[16], const uint8_t *in,
                    size_t len, uint8_t *out)
{
    uint8_t v[16], t[16];
    if (len < 16)
        return 0;
    memcpy(v, in, 16);
    if (!siv_ctr(s, v, in + 16, len - 16, out))
        return -1;
    if (!pcb_s2v_final(s, d, out, len - 16, t))
        return -1;
    if (CRYPTO_memcmp(t, v, 16) != 0) {
        OPENSSL_cleanse(out, len - 16);
        return 0;
    }
    return 1;
}
