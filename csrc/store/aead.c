/*
 * store/aead.c — the store's AEAD blobs (see aead.h).
 */
#include "store/aead.h"

#include <string.h>

int pcb_aead_pair_new(pcb_aead_pair *a, const EVP_CIPHER *c, const uint8_t *key, pcb_status *st)
{
    a->enc = EVP_CIPHER_CTX_new();
    a->dec = EVP_CIPHER_CTX_new();
    if (a->enc == NULL || a->dec == NULL
        || !EVP_EncryptInit_ex2(a->enc, c, key, NULL, NULL)
        || !EVP_DecryptInit_ex2(a->dec, c, key, NULL, NULL))
        return pcb_fail_openssl(st, "AEAD key setup");
    return 1;
}

void pcb_aead_pair_free(pcb_aead_pair *a)
{
    EVP_CIPHER_CTX_free(a->enc);
    EVP_CIPHER_CTX_free(a->dec);
    a->enc = a->dec = NULL;
}

int pcb_store_seal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t nonce[NONCE_LEN],
                   const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                   uint8_t *out, pcb_status *st)
{
    const pcb_bytes ad = {aad, aad_len};
    memcpy(out, nonce, NONCE_LEN);
    return pcb_aead_seal(ctx, key, nonce, &ad, 1, in, len, out + NONCE_LEN, st);
}

int pcb_store_unseal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *aad, size_t aad_len,
                     const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    const pcb_bytes ad = {aad, aad_len};
    return pcb_aead_open(ctx, key, in, &ad, 1, in + NONCE_LEN, len - NONCE_LEN, out, st);
}

