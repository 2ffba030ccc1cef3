/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/interop_impl.h: what the DLPack and parameter-file code share: the mapping
 * between corten dtypes and DLPack's (code, bits) pairs. */
#ifndef CORTEN_CORE_INTEROP_IMPL_H
#define CORTEN_CORE_INTEROP_IMPL_H

#include <stdint.h>

#include <corten/types.h>

/* DLPack's type codes, fixed by its ABI (kDLBool arrived in DLPack 0.8; the system header may be
 * older, so the value is spelled here). */
enum {
  CT__DL_INT = 0,
  CT__DL_UINT = 1,
  CT__DL_FLOAT = 2,
  CT__DL_OPAQUE = 3,
  CT__DL_BFLOAT = 4,
  CT__DL_COMPLEX = 5,
  CT__DL_BOOL = 6,
};

/* The corten dtype of a DLPack (code, bits) with one lane; CT_DTYPE_UNDEFINED when there is
 * none. Bool is accepted both as older TVM wrote it (uint, 1 bit) and as kDLBool (bool, 8 bits). */
ct_dtype ct__dtype_from_dl(uint8_t code, uint8_t bits);

/* The (code, bits) a parameter file stores for t, and a DLPack export carries: bool as kDLBool
 * with 8 bits (DLPack 1.x, current TVM). t must be a valid dtype. */
void ct__dtype_to_dl_file(ct_dtype t, uint8_t *code, uint8_t *bits);

/* "int", "uint", "float", "opaque handle", "bfloat", "complex", "bool", or "unknown" beyond
 * DLPack's codes; for messages. */
const char *ct__dl_code_name(uint8_t code);

#endif /* CORTEN_CORE_INTEROP_IMPL_H */
