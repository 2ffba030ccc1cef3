/* SPDX-License-Identifier: Apache-2.0 */
/* corten/corten.h: the whole public API of corten in one include.
 *
 * The headers are the manual, one per concept, each opening with what the concept is and the
 * thread-safety rule of its module. Above every declaration a comment says, in this order:
 *   - what it does and what it returns;
 *   - who owns what (objects made, taken or lent) and what a NULL argument does;
 *   - how it fails, one status code per line with the causes that give it, and what state a
 *     failure leaves:
 *       Errors (NULL returned):
 *         CT_ERR_INVALID_ARGUMENT  t is NULL, or dims has a negative extent
 *         CT_ERR_OUT_OF_MEMORY     no host memory for the tensor
 *     Every failure also sets the calling thread's ct_last_status() and ct_last_error()
 *     (corten/status.h); nothing aborts or prints. A function whose comment names no error
 *     cannot fail;
 *   - thread-safety, where it differs from the rule of its header.
 * Declarations that share one comment follow it without a blank line.
 *
 * Compiler attributes (visibility, format checks, unused results) are macros from
 * corten/export.h. */
#ifndef CORTEN_CORTEN_H
#define CORTEN_CORTEN_H

#include <corten/export.h>
#include <corten/status.h>
#include <corten/types.h>
#include <corten/memory.h>
#include <corten/cuda.h>
#include <corten/variable.h>
#include <corten/op.h>
#include <corten/program.h>
#include <corten/backward.h>
#include <corten/tensor.h>
#include <corten/scope.h>
#include <corten/step_scopes.h>
#include <corten/dlpack.h>
#include <corten/params.h>
#include <corten/expr.h>
#include <corten/comm.h>
#include <corten/onnx.h>
#include <corten/profile.h>
#include <corten/nn.h>

#define CORTEN_VERSION_MAJOR 0
#define CORTEN_VERSION_MINOR 1
#define CORTEN_VERSION_PATCH 0

#endif /* CORTEN_CORTEN_H */
