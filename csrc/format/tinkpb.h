/*
 * format/tinkpb.h — Tink's keyset messages in protobuf wire format, without
 * a protobuf library.
 *
 * Owns: encoding and strictly decoding the five messages of Tink's
 * proto/tink.proto, aes_siv.proto, aes_gcm.proto and chacha20_poly1305.proto
 * a keyset needs: Keyset (primary_key_id = 1, repeated Key key = 2), its Key
 * (KeyData key_data = 1, status = 2, key_id = 3, output_prefix_type = 4),
 * KeyData (type_url = 1, bytes value = 2, key_material_type = 3), the key
 * protos inside KeyData.value (AesSivKey and ChaCha20Poly1305Key: version =
 * 1, key_value = 2; AesGcmKey: version = 1, key_value = 3), KeysetInfo
 * (primary_key_id = 1, repeated KeyInfo = 2 of type_url, status, key_id,
 * output_prefix_type) and EncryptedKeyset (encrypted_keyset = 2,
 * keyset_info = 3). Decoding refuses what a strict reader must: unknown
 * fields, a singular field twice, a wire type that is not the field's,
 * lengths past the end, varints over 10 bytes or over the field's range,
 * and keysets Tink would refuse (no key, key ids not unique, no enabled
 * primary); messages name the field ("Keyset.key[1].key_data.type_url").
 * Encoding writes fields in number order and omits proto3 defaults, as
 * Tink's generated code does. Pure functions: thread-safe. Lengths are bytes.
 */
#ifndef PCB_FORMAT_TINKPB_H
#define PCB_FORMAT_TINKPB_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define PCB_TINK_MAX_KEYS 32   /* a keyset with more keys is refused */
#define PCB_TINK_URL_CAP 96    /* type URLs longer than this are refused */
#define PCB_TINK_KEY_CAP 64    /* key_value longer than this is refused */

#define PCB_TINK_URL_PREFIX "type.googleapis.com/google.crypto.tink."
#define PCB_TINK_AES_SIV "type.googleapis.com/google.crypto.tink.AesSivKey"
#define PCB_TINK_AES_GCM "type.googleapis.com/google.crypto.tink.AesGcmKey"
#define PCB_TINK_CHACHA "type.googleapis.com/google.crypto.tink.ChaCha20Poly1305Key"

/* tink.proto's enums (the values on the wire). */
enum { PCB_TINK_ENABLED = 1, PCB_TINK_DISABLED = 2, PCB_TINK_DESTROYED = 3 };
enum { PCB_TINK_PREFIX_TINK = 1, PCB_TINK_PREFIX_LEGACY = 2, PCB_TINK_PREFIX_RAW = 3,
       PCB_TINK_PREFIX_CRUNCHY = 4 };
enum { PCB_TINK_SYMMETRIC = 1 };

/* One key of a Keyset (with its material) or of a KeysetInfo (key_len 0,
 * version and material 0). */
typedef struct {
    char type_url[PCB_TINK_URL_CAP + 1]; /* NUL-terminated */
    uint32_t key_id;
    uint32_t status;        /* KeyStatusType */
    uint32_t output_prefix; /* OutputPrefixType */
    uint32_t material;      /* KeyData.key_material_type */
    uint32_t version;       /* the key proto's version */
    uint8_t key_value[PCB_TINK_KEY_CAP];
    size_t key_len;
} pcb_tink_key;

typedef struct {
    uint32_t primary_key_id;
    size_t n;
    pcb_tink_key key[PCB_TINK_MAX_KEYS];
} pcb_tink_keyset;

/* The key proto's field number of key_value for a type URL (2 or 3), or 0
 * for a type this codec does not know. */
int pcb_tinkpb_key_value_field(const char *type_url);
/* A short name for a type URL: "AesSivKey" (the part after the last '.'). */
const char *pcb_tinkpb_type_name(const char *type_url);

/* Appends the serialized Keyset (key material included) to out. 1, or 0
 * when out of memory (out->failed) or a key's type is unknown. */
int pcb_tinkpb_keyset_encode(const pcb_tink_keyset *k, pcb_buf *out);
/* Appends a serialized EncryptedKeyset: encrypted_keyset = ct[0..ct_len),
 * keyset_info from k's metadata (no key material). 1, or 0 out of memory. */
int pcb_tinkpb_encrypted_encode(const uint8_t *ct, size_t ct_len, const pcb_tink_keyset *k,
                                pcb_buf *out);

/* Decodes a serialized Keyset into *k: its keys [0..n) are set, the rest
 * left as they were (the caller wipes what k held before, and k after use).
 * 1, or 0 with a message in err[0..cap) (k then partly written). */
int pcb_tinkpb_keyset_decode(const uint8_t *p, size_t n, pcb_tink_keyset *k, char *err,
                             size_t cap);
/* Decodes a serialized EncryptedKeyset: *ct points into p; *info gets the
 * keyset_info (info->n = 0 and *has_info = 0 when absent). 1, or 0 with a
 * message in err. */
int pcb_tinkpb_encrypted_decode(const uint8_t *p, size_t n, const uint8_t **ct, size_t *ct_len,
                                pcb_tink_keyset *info, int *has_info, char *err, size_t cap);

#endif /* PCB_FORMAT_TINKPB_H */
