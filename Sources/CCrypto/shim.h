#ifndef VITALS_CCRYPTO_SHIM_H
#define VITALS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#endif
