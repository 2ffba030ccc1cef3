/* corten/corten.h: the whole public API of corten in one include. */
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
#include <corten/tensor.h>
#include <corten/scope.h>
#include <corten/dlpack.h>
#include <corten/params.h>

#define CORTEN_VERSION_MAJOR 0
#define CORTEN_VERSION_MINOR 1
#define CORTEN_VERSION_PATCH 0

#endif /* CORTEN_CORTEN_H */
