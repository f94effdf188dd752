/*
 * store/codec.h — how a store turns plain names and values into what its
 * map and file hold, and back.
 *
 * Owns: choosing the codec once at open from the options (pcb_codec in
 * internal.h: names plain / AES-SIV / SIV as Base64 text, values plain /
 * Base64 text / AEAD / AEAD as Base64 text, and the file layout), the value
 * nonces (pooled from OpenSSL's DRBG, dropped after fork; faithful mode
 * draws each from the CSPRNG as Tink does), Tink's output prefix, AES-SIV
 * names with the store name as associated data, AEAD values with the
 * encoded name as associated data, the checks a name or value must pass,
 * and the names entries are described by in messages. All with the store's
 * lock held. Lengths are bytes.
 */
#ifndef PCB_STORE_CODEC_H
#define PCB_STORE_CODEC_H

#include "store/aead.h"
#include "store/internal.h"

/* The codec of a store opened with these options. */
pcb_codec pcb_codec_choose(const pcb_store_options *o);

/* A fresh value nonce. 1, or 0 with st set. */
int pcb_codec_nonce(pcb_store *s, uint8_t nonce[NONCE_LEN], pcb_status *st);

/* The record name of a plain name, into out (reset). */
int pcb_codec_name(pcb_store *s, const char *name, size_t len, pcb_buf *out, pcb_status *st);
/* The plain name of a record, into out (reset); DecryptionError naming the
 * entry if it does not open. */
int pcb_codec_plain_name(pcb_store *s, const rec_header *r, pcb_buf *out, pcb_status *st);
/* The associated data of a value stored under record name sname (the file's
 * text of the name): a pointer into sname or s->scratch; NULL when out of memory. */
const uint8_t *pcb_codec_value_aad(pcb_store *s, const uint8_t *sname, size_t slen,
                                   size_t *aad_len);
/* The record value of a plaintext serialization, into out (reset). */
int pcb_codec_seal_value(pcb_store *s, const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                         size_t len, pcb_buf *out, pcb_status *st);
/* The plaintext of a record's value, into out (reset); DecryptionError
 * naming the entry if it does not open. */
int pcb_codec_open_value(pcb_store *s, const rec_header *r, const uint8_t *aad, size_t aad_len,
                         pcb_buf *out, pcb_status *st);
/* At open of a file whose value keyset is an earlier release's text (no
 * Tink type URL; a Tink keyset's type URL is checked as it opens, in
 * keyset.c): refuses (StoreFormatError naming both options) values sealed
 * with the other value AEAD than the options say. The first entry that
 * authenticates under either AEAD decides; an entry that opens under
 * neither (tampered) is skipped, up to 64 of them. Such a file without value
 * entries opens with either option, and its first commit writes a Tink
 * keyset naming the option used. 1, or 0 with st set. */
int pcb_codec_check_value_aead(pcb_store *s, pcb_status *st);
/* The value AEAD the options did not choose (NULL if this OpenSSL lacks
 * it), and the error refusing a file sealed with it, naming both options. */
const EVP_CIPHER *pcb_codec_other_aead(const pcb_store *s);
int pcb_codec_aead_mismatch(const pcb_store *s, pcb_status *st);
/* A name for messages: the plain name if known, else the start of its text. */
void pcb_codec_describe(const pcb_store *s, const rec_header *r, char *out, size_t cap);

/* Checks a name and value may be written: not reserved, and no NUL where
 * the XML holds them as text. 1, or 0 with st set. */
int pcb_codec_check_name(const pcb_store *s, const char *name, size_t len, pcb_status *st);
int pcb_codec_check_put(const pcb_store *s, const char *name, size_t nl, const uint8_t *v,
                        size_t vl, pcb_status *st);

#endif /* PCB_STORE_CODEC_H */
