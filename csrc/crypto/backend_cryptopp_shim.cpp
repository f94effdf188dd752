/*
 * crypto/backend_cryptopp_shim.cpp — the Crypto++ shim (see backend_cryptopp_shim.h):
 * Crypto++'s own classes, as its benchmark (cryptest b2) uses them, behind a
 * C interface. No exception leaves a function of this file.
 */
#include "crypto/backend_cryptopp_shim.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>

#include <cryptopp/aes.h>
#include <cryptopp/algparam.h>
#include <cryptopp/argnames.h>
#include <cryptopp/chachapoly.h>
#include <cryptopp/cpu.h>
#include <cryptopp/des.h>
#include <cryptopp/gcm.h>
#include <cryptopp/modes.h>
#include <cryptopp/tea.h>

extern "C" {
#include "crypto/transform.h"
}

using namespace CryptoPP;

struct pcb_cryptopp {
    int family, mode, encrypt;
    std::unique_ptr<SymmetricCipher> block;              /* ECB/CBC/CTR */
    std::unique_ptr<AuthenticatedSymmetricCipher> aead;  /* GCM, (X)ChaCha20-Poly1305 */
    uint8_t iv[24];  /* the last IV: a stream past the AEAD's length limit restarts at it */
    size_t iv_len;
};

namespace {

void say(char *err, size_t err_len, const char *what)
{
    std::snprintf(err, err_len, "Crypto++: %s", what);
}

/* Runs f, turning any exception into err and `fail`. */
template <class F> int guarded(char *err, size_t err_len, int fail, F f)
{
    try {
        return f();
    } catch (const std::exception &e) {
        say(err, err_len, e.what());
    } catch (...) {
        say(err, err_len, "unknown exception");
    }
    return fail;
}

template <class BC> SymmetricCipher *block_mode(int mode, bool enc)
{
    switch (mode) {
    case PCB_MODE_ECB:
        if (enc)
            return new typename ECB_Mode<BC>::Encryption;
        return new typename ECB_Mode<BC>::Decryption;
    case PCB_MODE_CBC:
        if (enc)
            return new typename CBC_Mode<BC>::Encryption;
        return new typename CBC_Mode<BC>::Decryption;
    default:
        return new typename CTR_Mode<BC>::Encryption;
    }
}

template <class A> AuthenticatedSymmetricCipher *aead_mode(bool enc)
{
    if (enc)
        return new typename A::Encryption;
    return new typename A::Decryption;
}

void make(pcb_cryptopp *h)
{
    const bool enc = h->encrypt != 0;
    switch (h->family) {
    case PCB_FAM_AES:
        if (h->mode == PCB_MODE_GCM)
            h->aead.reset(aead_mode<GCM<AES>>(enc));
        else
            h->block.reset(block_mode<AES>(h->mode, enc));
        break;
    case PCB_FAM_DES: h->block.reset(block_mode<DES>(h->mode, enc)); break;
    case PCB_FAM_DESEDE: h->block.reset(block_mode<DES_EDE3>(h->mode, enc)); break;
    case PCB_FAM_TEA: h->block.reset(block_mode<TEA>(h->mode, enc)); break;
    case PCB_FAM_XTEA: h->block.reset(block_mode<XTEA>(h->mode, enc)); break;
    case PCB_FAM_CHACHA: h->aead.reset(aead_mode<ChaCha20Poly1305>(enc)); break;
    default: h->aead.reset(aead_mode<XChaCha20Poly1305>(enc)); break;
    }
}

SimpleKeyingInterface &keying(pcb_cryptopp *h)
{
    if (h->aead)
        return *h->aead;
    return *h->block;
}

StreamTransformation &stream(pcb_cryptopp *h)
{
    if (h->aead)
        return *h->aead;
    return *h->block;
}

} // namespace

extern "C" void pcb_cryptopp_probe(char *version, size_t version_len)
{
    int v = LibraryVersion();
    std::snprintf(version, version_len, "%d.%d.%d", v / 100, v / 10 % 10, v % 10);
    (void)pcb_cryptopp_hw_aes();
}

extern "C" int pcb_cryptopp_hw_aes(void)
{
#if CRYPTOPP_BOOL_X86 || CRYPTOPP_BOOL_X32 || CRYPTOPP_BOOL_X64
    return HasAESNI() ? 1 : 0;
#elif CRYPTOPP_BOOL_ARM32 || CRYPTOPP_BOOL_ARMV8
    return HasAES() ? 1 : 0;
#else
    return -1;
#endif
}

extern "C" int pcb_cryptopp_key(pcb_cryptopp **hp, int family, int mode, int encrypt,
                                const uint8_t *key, size_t key_len, unsigned rounds, char *err,
                                size_t err_len)
{
    return guarded(err, err_len, 0, [&] {
        pcb_cryptopp *h = *hp;
        if (h == nullptr) {
            std::unique_ptr<pcb_cryptopp> made(new pcb_cryptopp());
            made->family = family, made->mode = mode, made->encrypt = encrypt;
            make(made.get());
            h = *hp = made.release();
        }
        /* CBC, CTR and the AEADs take an IV with their key: a zero one, replaced by
         * pcb_cryptopp_reset before any data (their ECB counterparts take none). */
        static const uint8_t zero[24] = {0};
        SimpleKeyingInterface &k = keying(h);
        AlgorithmParameters params = MakeParameters(Name::Rounds(), (int)rounds, false);
        if (k.IsResynchronizable())
            params(Name::IV(), ConstByteArrayParameter(zero, k.IVSize()), false);
        k.SetKey(key, key_len, params);
        return 1;
    });
}

extern "C" int pcb_cryptopp_reset(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len, char *err,
                                  size_t err_len)
{
    return guarded(err, err_len, 0, [&] {
        if (iv == nullptr || !keying(h).IsResynchronizable())
            return 1;
        keying(h).Resynchronize(iv, (int)iv_len);
        if (iv_len <= sizeof h->iv) {
            std::memcpy(h->iv, iv, iv_len);
            h->iv_len = iv_len;
        }
        return 1;
    });
}

extern "C" int pcb_cryptopp_update(pcb_cryptopp *h, const uint8_t *in, uint8_t *out, size_t len,
                                   char *err, size_t err_len)
{
    return guarded(err, err_len, 0, [&] {
        try {
            stream(h).ProcessData(out, in, len);
        } catch (const InvalidArgument &) {
            /* As openssl speed does (and crypto/cipher for EVP): an AEAD stream that
             * reached its message-length limit starts over at the same IV. */
            if (!h->aead || h->iv_len == 0)
                throw;
            h->aead->Resynchronize(h->iv, (int)h->iv_len);
            stream(h).ProcessData(out, in, len);
        }
        return 1;
    });
}

extern "C" int pcb_cryptopp_seal(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len,
                                 const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                                 uint8_t *out, char *err, size_t err_len)
{
    return guarded(err, err_len, 0, [&] {
        h->aead->EncryptAndAuthenticate(out, out + len, 16, iv, (int)iv_len, aad, aad_len, in,
                                        len);
        return 1;
    });
}

extern "C" int pcb_cryptopp_open(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len,
                                 const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                                 uint8_t *out, char *err, size_t err_len)
{
    const size_t m = len - 16;
    int rc = guarded(err, err_len, -1, [&] {
        return h->aead->DecryptAndVerify(out, in + m, 16, iv, (int)iv_len, aad, aad_len, in, m)
                   ? 1 : 0;
    });
    if (rc != 1)
        std::memset(out, 0, m);
    return rc;
}

extern "C" void pcb_cryptopp_free(pcb_cryptopp *h)
{
    try {
        delete h; /* Crypto++'s SecBlocks wipe the key schedules */
    } catch (...) {
    }
}
