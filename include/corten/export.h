/* SPDX-License-Identifier: Apache-2.0 */
/* corten/export.h: the compiler attributes of the public API, each behind one macro.
 *
 * The public headers spell no compiler attribute themselves: they use these macros, defined here
 * once, each with a fallback that expands to nothing (or to the plain expression) on a compiler
 * that lacks the attribute. So the headers compile as C11 or C++ with any compiler, and a new
 * compiler is taught in this one place.
 *
 *   CT_API             marks a declaration the shared library exports. The library is built
 *                      with hidden visibility and CORTEN_BUILDING defined (CMakeLists.txt), so
 *                      only declarations marked CT_API (all of them named ct_*) leave it. For
 *                      a program using corten, and for compilers without GCC's visibility
 *                      attribute, it is empty.
 *   CT_NODISCARD       before a declaration: ignoring the result is a bug. It marks the
 *                      constructors whose result the caller owns (ct_tensor_new, ct_scope_new
 *                      ...), where a dropped result is a leak. [[nodiscard]] in C++17 and C23,
 *                      warn_unused_result with GCC and clang (which a cast to void does not
 *                      silence on GCC), nothing elsewhere.
 *   CT_PRINTF(f, a)    after a declaration: argument f is a printf format whose arguments start
 *                      at argument a (counted from 1), so the compiler checks every call.
 *   CT_LIKELY(x)       the condition x, with a hint that it is usually true, for the inline fast
 *                      paths in the headers (corten/variable.h).
 *
 * No function is marked nonnull: every one of them accepts NULL and reports it
 * (CT_ERR_INVALID_ARGUMENT, or a documented no-op), and the attribute would let the compiler
 * delete those very checks. */
#ifndef CORTEN_EXPORT_H
#define CORTEN_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define CT__GNU_ATTRIBUTES 1
#else
#define CT__GNU_ATTRIBUTES 0
#endif

#if defined(CORTEN_BUILDING) && CT__GNU_ATTRIBUTES
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

#if defined(__cplusplus) && __cplusplus >= 201703L
#define CT_NODISCARD [[nodiscard]]
#elif CT__GNU_ATTRIBUTES
#define CT_NODISCARD __attribute__((warn_unused_result))
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L
#define CT_NODISCARD [[nodiscard]]
#else
#define CT_NODISCARD
#endif

#if CT__GNU_ATTRIBUTES
#define CT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT__ALWAYS_INLINE __attribute__((always_inline))
#else
#define CT__ALWAYS_INLINE
#define CT_PRINTF(fmt, args)
#define CT_LIKELY(x) (x)
#endif

#endif /* CORTEN_EXPORT_H */
