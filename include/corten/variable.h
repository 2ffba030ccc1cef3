/* SPDX-License-Identifier: Apache-2.0 */
/* corten/variable.h: a variable holds one value of any type, behind a type descriptor.
 *
 * A type is a static ct_type; its address is its identity, so asking a variable for a type costs
 * one pointer compare and no registry exists. A variable starts empty; ct_var_get_mutable
 * creates the value the first time it is asked for (a tensor created this way holds no memory:
 * see ct_tensor_mutable_data). The value lives until ct_var_clear, ct_var_free, an erase from its
 * scope, or its scope's teardown, and its destroy runs exactly once whichever comes first.
 *
 * Thread-safety: a variable is not locked. Any number of threads may call ct_var_get, ct_var_is,
 * ct_var_type, and ct_var_get_mutable of the type it already holds, on one variable (these only
 * read it); a call that may create or destroy its value (get_mutable on an empty variable,
 * clear, free) must not run alongside any other call on the same variable. */
#ifndef CORTEN_VARIABLE_H
#define CORTEN_VARIABLE_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/export.h>
#include <corten/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_tensor ct_tensor;

/* A type a variable can hold; identity is this address, so define each one once, static const.
 *   name     shown in error messages ("ct_tensor", "my_vocab")
 *   size     bytes of the object; align its alignment (0 means alignof(max_align_t))
 *   init     builds the object in zero-filled storage; NULL: zero-filled is the initial value
 *   destroy  releases what the object owns (not the storage itself); NULL: nothing to release */
typedef struct ct_type {
  const char *name;
  size_t size, align;
  void (*init)(void *obj);
  void (*destroy)(void *obj);
} ct_type;

/* The built-in types. A value of each is created by ct_var_get_mutable like any other.
 *   ct_tensor_type      holds a ct_tensor, with unset dims and no memory (corten/tensor.h)
 *   ct_int64_type       holds an int64_t, starting at 0
 *   ct_scope_list_type  holds a ct_scope_list, the step scopes of an RNN, starting empty; its
 *                       functions are in corten/step_scopes.h */
extern CT_API const ct_type ct_tensor_type;
extern CT_API const ct_type ct_int64_type;
typedef struct ct_scope_list ct_scope_list;
extern CT_API const ct_type ct_scope_list_type;

typedef struct ct_var ct_var;

/* A standalone, empty variable, owned by the caller: free it with ct_var_free. (Variables made
 * by a scope belong to the scope.)
 * Errors (NULL returned):
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the variable */
CT_NODISCARD CT_API ct_var *ct_var_new(void);

/* Destroys the value (if any) and the variable. NULL is a no-op.
 * Errors (recorded in the last error only; nothing is returned):
 *   CT_ERR_INVALID_ARGUMENT  v belongs to a scope: it is left alone; erase it from its scope
 *                            with ct_scope_erase_vars */
CT_API void ct_var_free(ct_var *v);

/* The held value as `type`, creating it when the variable is empty (storage zero-filled, then
 * type->init). The value belongs to the variable: the pointer stays valid until the value is
 * cleared or the variable freed, erased or torn down with its scope.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  v or type is NULL, or type has size 0 or an align that is not a
 *                            power of two
 *   CT_ERR_TYPE_MISMATCH     the variable holds another type; the value is left alone
 *   CT_ERR_OUT_OF_MEMORY     no memory for the value; the variable stays empty */
CT_API void *ct_var_get_mutable(ct_var *v, const ct_type *type);

/* The held value as `type`, never creating it. Costs a pointer compare when it succeeds. The
 * value still belongs to the variable, as for ct_var_get_mutable.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  v or type is NULL
 *   CT_ERR_UNINITIALIZED     the variable is empty
 *   CT_ERR_TYPE_MISMATCH     the variable holds another type */
CT_API const void *ct_var_get(const ct_var *v, const ct_type *type);

/* Whether v holds a value of exactly this type. false for NULL v or type, or an empty
 * variable. */
CT_API bool ct_var_is(const ct_var *v, const ct_type *type);

/* The held type; NULL when empty (or v is NULL). */
CT_API const ct_type *ct_var_type(const ct_var *v);

/* Destroys the value; the variable stays, empty. NULL or an empty variable is a no-op. */
CT_API void ct_var_clear(ct_var *v);

/* The variable's name when it belongs to a scope ("" for a standalone variable or NULL v). The
 * text stays valid until the variable is renamed or erased. */
CT_API const char *ct_var_name(const ct_var *v);

/* ct_var_get_mutable(v, &ct_tensor_type) and ct_var_get(v, &ct_tensor_type), typed; their
 * errors are those two functions'. The tensor lives inside the variable: never pass it to
 * ct_tensor_free. */
CT_API ct_tensor *ct_var_tensor(ct_var *v);
CT_API const ct_tensor *ct_var_get_tensor(const ct_var *v);

/* ---- Inline fast paths --------------------------------------------------------------------------
 * Reading a held value is one pointer compare, so it is done inline: these macros stand in for
 * the functions above when called directly, and fall back to them for everything else (an empty
 * variable, another type, NULL), which then reports the error. The functions stay exported for
 * function pointers and foreign-language bindings; `(ct_var_get)(v, t)` calls one explicitly.
 * The head of a variable is therefore part of the ABI: a type pointer, then the value pointer. */
typedef struct ct__var_head {
  const ct_type *type;
  void *obj;
} ct__var_head;

/* The fast paths behind the macros: the held value on a hit, the exported function otherwise. */
static inline const void *ct__var_get_inline(const ct_var *v, const ct_type *type) {
  const ct__var_head *h = (const ct__var_head *)(const void *)v;
  if (CT_LIKELY(v != NULL && type != NULL && h->type == type)) return h->obj;
  return (ct_var_get)(v, type);
}

static inline void *ct__var_get_mutable_inline(ct_var *v, const ct_type *type) {
  const ct__var_head *h = (const ct__var_head *)(const void *)v;
  if (CT_LIKELY(v != NULL && type != NULL && h->type == type)) return h->obj;
  return (ct_var_get_mutable)(v, type);
}

#define ct_var_get(v, type) ct__var_get_inline((v), (type))
#define ct_var_get_mutable(v, type) ct__var_get_mutable_inline((v), (type))
#define ct_var_get_tensor(v) ((const ct_tensor *)ct__var_get_inline((v), &ct_tensor_type))
#define ct_var_tensor(v) ((ct_tensor *)ct__var_get_mutable_inline((v), &ct_tensor_type))

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_VARIABLE_H */
