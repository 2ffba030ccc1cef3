/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/elementwise.cu: elementwise_{add,sub,mul,div} with numpy broadcasting, the
 * float32 activations, scale and the casts between float32, float16 and bfloat16, on the GPU:
 * the device code and launchers (launch.h) that ops/cuda/elementwise.c calls.
 *
 * One thread per output element (a grid-stride loop, grid.cuh). A broadcast output index
 * is split along the plan's merged dims into the two input offsets; same-shape inputs skip
 * that. float16 and bfloat16 load into float, compute there and round once on the store, with
 * half.h's conversions, the CPU's own (compiled for the device).
 *
 * Same-shape inputs whose buffers are 16-byte aligned (the pool's always are; a view's may not
 * be) are read and written 16 bytes at a time, 4 float32 or 8 half elements a thread a step:
 * scalar 4-byte loads keep too few bytes in flight to reach the memory's bandwidth (an H200
 * read 0.86 of a device-to-device copy's bandwidth with them). Each element's arithmetic is the
 * same either way, so the bits are too. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"
#include "ops/half.h"

namespace {

/* Element access by storage type. */
struct F32 {
  typedef float T;
  static __device__ __forceinline__ float load(const float *p, int64_t i) { return p[i]; }
  static __device__ __forceinline__ void store(float *p, int64_t i, float v) { p[i] = v; }
};
/* float16 (DT CT_FLOAT16) and bfloat16 (CT_BFLOAT16): 16 bits converted to and from float. */
template <int DT>
struct Half {
  typedef uint16_t T;
  static __device__ __forceinline__ float load(const uint16_t *p, int64_t i) {
    return DT == CT_FLOAT16 ? ct__half_to_float(p[i]) : ct__bf16_to_float(p[i]);
  }
  static __device__ __forceinline__ void store(uint16_t *p, int64_t i, float v) {
    p[i] = DT == CT_FLOAT16 ? ct__float_to_half(v) : ct__float_to_bf16(v);
  }
};
typedef Half<CT_FLOAT16> F16;
typedef Half<CT_BFLOAT16> BF16;

template <int OP>
__device__ __forceinline__ float binop(float a, float b) {
  if (OP == CT__CU_ADD) return a + b;
  if (OP == CT__CU_SUB) return a - b;
  if (OP == CT__CU_MUL) return a * b;
  return a / b; /* IEEE division: nvcc's default -prec-div=true */
}

/* Elementwise maps over same-shape buffers of storage type T: f takes and returns stored
 * values. map_flat goes element by element; map_vec goes 16 bytes at a time and needs every
 * buffer 16-byte aligned (aligned16). */
template <typename T>
union Vec16 {
  uint4 v;
  T e[16 / sizeof(T)];
};

inline bool aligned16(const void *a, const void *b, const void *c) {
  return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15u) == 0;
}

/* One input (y NULL) or two. */
template <typename T, typename F>
__device__ __forceinline__ T apply(const F &f, T a, const T *y, int64_t i) {
  if constexpr (F::arity == 1) {
    (void)y;
    (void)i;
    return f(a);
  } else {
    return f(a, y[i]);
  }
}

template <typename T, typename F>
__global__ void map_flat(T *o, const T *x, const T *y, int64_t n, F f) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) o[i] = apply(f, x[i], y, i);
}

template <typename T, typename F>
__global__ void map_vec(T *o, const T *x, const T *y, int64_t n, F f) {
  constexpr int W = 16 / sizeof(T);
  const int64_t nv = n / W;
  const uint4 *xv = reinterpret_cast<const uint4 *>(x);
  uint4 *ov = reinterpret_cast<uint4 *>(o);
  for (int64_t v = ct__cu_first(); v < nv; v += ct__cu_step()) {
    Vec16<T> a, r;
    a.v = xv[v];
    if constexpr (F::arity == 1) {
#pragma unroll
      for (int k = 0; k < W; k++) r.e[k] = f(a.e[k]);
    } else {
      Vec16<T> b;
      b.v = reinterpret_cast<const uint4 *>(y)[v];
#pragma unroll
      for (int k = 0; k < W; k++) r.e[k] = f(a.e[k], b.e[k]);
    }
    ov[v] = r.v;
  }
  /* The tail, fewer than W elements. */
  for (int64_t i = nv * W + ct__cu_first(); i < n; i += ct__cu_step()) {
    o[i] = apply(f, x[i], y, i);
  }
}

template <typename T, typename F>
void launch_map(T *o, const T *x, const T *y, int64_t n, F f, cudaStream_t stream) {
  if (aligned16(o, x, y)) {
    constexpr int W = 16 / sizeof(T);
    map_vec<T, F><<<ct__cu_blocks((n + W - 1) / W), ct__cu_threads, 0, stream>>>(o, x, y, n, f);
  } else {
    map_flat<T, F><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(o, x, y, n, f);
  }
}

/* binop on stored values of S. */
template <typename S, int OP>
struct BinaryF {
  static constexpr int arity = 2;
  typedef typename S::T T;
  __device__ __forceinline__ T operator()(T a, T b) const {
    T r;
    S::store(&r, 0, binop<OP>(S::load(&a, 0), S::load(&b, 0)));
    return r;
  }
};

/* The broadcast walk with index type I: 32-bit where every index and offset fits (a 64-bit
 * division costs several times a 32-bit one, and the walk divides once per dim an element). */
template <typename S, int OP, typename I>
__global__ void binary_bcast(typename S::T *o, const typename S::T *x, const typename S::T *y,
                             int64_t n, ct__cu_plan p) {
  I d[CT_MAX_RANK], sx[CT_MAX_RANK], sy[CT_MAX_RANK];
  for (int k = 0; k < p.rank; k++) d[k] = (I)p.d[k], sx[k] = (I)p.sx[k], sy[k] = (I)p.sy[k];
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    I rest = (I)i, ox = 0, oy = 0;
    for (int k = p.rank - 1; k >= 0; k--) {
      I q = rest / d[k], idx = rest - q * d[k];
      ox += idx * sx[k];
      oy += idx * sy[k];
      rest = q;
    }
    S::store(o, i, binop<OP>(S::load(x, ox), S::load(y, oy)));
  }
}

/* Whether the walk of n elements over plan p fits 32-bit indices (offsets stay below n's
 * inputs' sizes, which are at most n here: broadcast inputs are no larger than the output). */
inline bool bcast_fits_u32(int64_t n, const ct__cu_plan &p) {
  if (n > (int64_t)UINT32_MAX) return false;
  for (int k = 0; k < p.rank; k++) {
    if (p.sx[k] < 0 || p.sy[k] < 0 || p.sx[k] > (int64_t)UINT32_MAX ||
        p.sy[k] > (int64_t)UINT32_MAX) {
      return false;
    }
  }
  return true;
}

template <typename S, int OP>
void launch_binary(void *o, const void *x, const void *y, int64_t n, const ct__cu_plan *plan,
                   cudaStream_t stream) {
  typedef typename S::T T;
  if (plan == NULL) {
    launch_map(static_cast<T *>(o), static_cast<const T *>(x), static_cast<const T *>(y), n,
               BinaryF<S, OP>(), stream);
  } else if (bcast_fits_u32(n, *plan)) {
    binary_bcast<S, OP, uint32_t><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(o), static_cast<const T *>(x), static_cast<const T *>(y), n, *plan);
  } else {
    binary_bcast<S, OP, int64_t><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(o), static_cast<const T *>(x), static_cast<const T *>(y), n, *plan);
  }
}

template <typename S>
void launch_binary_op(int op, void *o, const void *x, const void *y, int64_t n,
                      const ct__cu_plan *plan, cudaStream_t stream) {
  switch (op) {
    case CT__CU_ADD: launch_binary<S, CT__CU_ADD>(o, x, y, n, plan, stream); break;
    case CT__CU_SUB: launch_binary<S, CT__CU_SUB>(o, x, y, n, plan, stream); break;
    case CT__CU_MUL: launch_binary<S, CT__CU_MUL>(o, x, y, n, plan, stream); break;
    default: launch_binary<S, CT__CU_DIV>(o, x, y, n, plan, stream); break;
  }
}

template <int OP>
struct UnaryF {
  static constexpr int arity = 1;
  __device__ __forceinline__ float operator()(float a) const {
    if (OP == CT__CU_RELU) return a < 0 ? 0.0f : a;
    if (OP == CT__CU_SIGMOID) return 1.0f / (1.0f + expf(-a));
    if (OP == CT__CU_TANH) return tanhf(a);
    if (OP == CT__CU_EXP) return expf(a);
    return logf(a);
  }
};

template <int OP>
void launch_unary(float *o, const float *x, int64_t n, cudaStream_t stream) {
  launch_map<float>(o, x, NULL, n, UnaryF<OP>(), stream);
}

struct ScaleF {
  static constexpr int arity = 1;
  float sc, bi;
  __device__ __forceinline__ float operator()(float a) const {
    return sc * a + bi; /* two roundings, as on the CPU: no FMA (--fmad=false) */
  }
};

template <typename From, typename To>
__global__ void cast_kernel(typename To::T *o, const typename From::T *x, int64_t n) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    To::store(o, i, From::load(x, i)); /* float holds every float16 / bfloat16 value exactly */
  }
}

template <typename From, typename To>
void launch_cast(void *o, const void *x, int64_t n, cudaStream_t stream) {
  cast_kernel<From, To><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
      static_cast<typename To::T *>(o), static_cast<const typename From::T *>(x), n);
}

template <typename From>
void launch_cast_from(void *o, ct_dtype to, const void *x, int64_t n, cudaStream_t stream) {
  switch (to) {
    case CT_FLOAT16: launch_cast<From, F16>(o, x, n, stream); break;
    case CT_BFLOAT16: launch_cast<From, BF16>(o, x, n, stream); break;
    default: launch_cast<From, F32>(o, x, n, stream); break;
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_binary(int op, ct_dtype dt, void *o, const void *x, const void *y,
                                     int64_t n, const ct__cu_plan *plan, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (dt) {
    case CT_FLOAT16: launch_binary_op<F16>(op, o, x, y, n, plan, stream); break;
    case CT_BFLOAT16: launch_binary_op<BF16>(op, o, x, y, n, plan, stream); break;
    default: launch_binary_op<F32>(op, o, x, y, n, plan, stream); break;
  }
  return cudaGetLastError();
}

namespace {
__global__ void clip_kernel(float *o, const float *x, int64_t n, double lo, double hi,
                            const float *lo_dev, const float *hi_dev) {
  if (lo_dev != NULL) lo = (double)lo_dev[0];
  if (hi_dev != NULL) hi = (double)hi_dev[0];
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    double v = (double)x[i]; /* NaN passes both tests and stays NaN, as on the CPU */
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    o[i] = (float)v;
  }
}
}  // namespace

extern "C" cudaError_t ct__cu_clip(float *o, const float *x, int64_t n, double lo, double hi,
                                   const float *lo_dev, const float *hi_dev,
                                   cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clip_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(o, x, n, lo, hi, lo_dev, hi_dev);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_unary(int op, float *o, const float *x, int64_t n,
                                    cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (op) {
    case CT__CU_RELU: launch_unary<CT__CU_RELU>(o, x, n, stream); break;
    case CT__CU_SIGMOID: launch_unary<CT__CU_SIGMOID>(o, x, n, stream); break;
    case CT__CU_TANH: launch_unary<CT__CU_TANH>(o, x, n, stream); break;
    case CT__CU_EXP: launch_unary<CT__CU_EXP>(o, x, n, stream); break;
    default: launch_unary<CT__CU_LOG>(o, x, n, stream); break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_scale(float *o, const float *x, int64_t n, float sc, float bi,
                                    cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  launch_map<float>(o, x, NULL, n, ScaleF{sc, bi}, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_cast(void *o, ct_dtype to, const void *x, ct_dtype from, int64_t n,
                                   cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (from) {
    case CT_FLOAT16: launch_cast_from<F16>(o, to, x, n, stream); break;
    case CT_BFLOAT16: launch_cast_from<BF16>(o, to, x, n, stream); break;
    default: launch_cast_from<F32>(o, to, x, n, stream); break;
  }
  return cudaGetLastError();
}
