/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/params.c: parameter dictionaries to and from scopes, single tensors to and from
 * files, and listing what a file holds.
 *
 * Loading is staged: the reader checks every byte and builds every tensor first; only then is
 * the scope touched, in steps that can be undone (creating missing variables) followed by steps
 * that cannot fail (moving each tensor into its variable). Saving checks every variable before
 * the temporary file is created. Listing streams: each tensor is shown to the caller's visitor
 * and freed before the next is read. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/params.h>
#include <corten/variable.h>

#include "common/alloc.h"
#include "common/common.h"
#include "interop/params_format.h"

/* ---- Loading --------------------------------------------------------------------------------- */

typedef struct staging {
  uint64_t count, n;
  char **names;
  ct_tensor **tensors;
} staging;

static ct_status stage_begin(void *ctx, ct__params_kind kind, uint64_t count) {
  staging *st = ctx;
  (void)kind;
  /* count was checked against the input's size: at most one entry per 48 bytes */
  st->names = ct__calloc(count ? (size_t)count : 1, sizeof *st->names);
  st->tensors = ct__calloc(count ? (size_t)count : 1, sizeof *st->tensors);
  if (st->names == NULL || st->tensors == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_params_load: no host memory to stage %llu tensors",
                     (unsigned long long)count);
  }
  st->count = count;
  return CT_OK;
}

static ct_status stage_entry(void *ctx, const ct__params_pos *pos, const char *name,
                             ct_tensor *t) {
  staging *st = ctx;
  char *copy = ct__strdup(name != NULL ? name : "");
  (void)pos;
  if (copy == NULL || st->n >= st->count) {
    free(copy);
    ct_tensor_free(t);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_params_load: no host memory for a tensor name");
  }
  st->names[st->n] = copy;
  st->tensors[st->n] = t;
  st->n++;
  return CT_OK;
}

static void staging_free(staging *st) {
  for (uint64_t i = 0; i < st->n; i++) {
    free(st->names[i]);
    ct_tensor_free(st->tensors[i]);
  }
  free(st->names);
  free(st->tensors);
}

/* Puts every staged tensor into its local variable of scope, or changes nothing. */
static ct_status commit(ct_scope *scope, staging *st, const char *label) {
  size_t n = (size_t)st->n;
  ct_var **vars = ct__calloc(n ? n : 1, sizeof *vars);
  const char **created = ct__calloc(n ? n : 1, sizeof *created);
  size_t ncreated = 0;
  ct_status s = CT_OK;
  if (vars == NULL || created == NULL) {
    s = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_params_load: %s: no host memory to commit %zu tensors",
                  label, n);
  }
  /* 1. An existing variable must be empty or hold a tensor. */
  for (size_t i = 0; i < n && s == CT_OK; i++) {
    ct_var *v = ct_scope_find_local_var(scope, st->names[i]);
    const ct_type *type = ct_var_type(v);
    if (v != NULL && type != NULL && type != &ct_tensor_type) {
      s = ct__error(CT_ERR_TYPE_MISMATCH,
                    "ct_params_load: %s: tensor %zu ('%s'): the scope's variable of that name "
                    "holds %s, not a tensor; erase it or load into another scope (nothing was "
                    "loaded)",
                    label, i, st->names[i], type->name ? type->name : "another type");
    }
    vars[i] = v;
  }
  /* 2. Create the missing variables; undo on failure. */
  for (size_t i = 0; i < n && s == CT_OK; i++) {
    if (vars[i] != NULL) continue;
    vars[i] = ct_scope_var(scope, st->names[i]);
    if (vars[i] == NULL) {
      s = ct_last_status();
    } else {
      created[ncreated++] = st->names[i];
    }
  }
  if (s != CT_OK) {
    if (ncreated > 0) {
      ct_status keep = ct_last_status();
      char msg[512];
      snprintf(msg, sizeof msg, "%s", ct_last_error());
      ct_scope_erase_vars(scope, created, ncreated);
      ct__error(keep, "%s", msg);
    }
  } else {
    /* 3. Cannot fail: each variable is empty or holds a tensor, which lives inside it. */
    for (size_t i = 0; i < n; i++) ct_tensor_move(ct_var_tensor(vars[i]), st->tensors[i]);
  }
  free(vars);
  free(created);
  return s;
}

static ct_status load_dict(ct__params_src *src, ct_scope *scope) {
  staging st = {0, 0, NULL, NULL};
  ct__params_sink sink = {.begin = stage_begin, .entry = stage_entry, .ctx = &st};
  ct_status s = ct__params_read(src, CT__PARAMS_DICT, &sink);
  if (s == CT_OK) s = commit(scope, &st, src->label);
  staging_free(&st);
  return s;
}

ct_status ct_params_load(const char *path, ct_scope *scope) {
  if (path == NULL || scope == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_params_load: the %s is NULL",
                     path == NULL ? "path" : "scope");
  }
  ct__params_src src;
  ct_status s = ct__params_src_file(&src, path);
  if (s != CT_OK) return s;
  s = load_dict(&src, scope);
  ct__params_src_close(&src);
  return s;
}

ct_status ct_params_load_memory(const void *buf, size_t len, ct_scope *scope) {
  if ((buf == NULL && len > 0) || scope == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_params_load_memory: the %s is NULL",
                     scope == NULL ? "scope" : "buffer");
  }
  ct__params_src src;
  ct__params_src_memory(&src, buf, len);
  return load_dict(&src, scope);
}

static ct_status keep_tensor(void *ctx, const ct__params_pos *pos, const char *name,
                             ct_tensor *t) {
  (void)pos;
  (void)name;
  *(ct_tensor **)ctx = t;
  return CT_OK;
}

static ct_status load_tensor(ct__params_src *src, ct_tensor *t) {
  ct_tensor *got = NULL;
  ct__params_sink sink = {.begin = NULL, .entry = keep_tensor, .ctx = &got};
  ct_status s = ct__params_read(src, CT__PARAMS_TENSOR, &sink);
  if (s == CT_OK) ct_tensor_move(t, got);
  ct_tensor_free(got);
  return s;
}

ct_status ct_tensor_load(const char *path, ct_tensor *t) {
  if (path == NULL || t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_load: the %s is NULL",
                     path == NULL ? "path" : "tensor");
  }
  ct__params_src src;
  ct_status s = ct__params_src_file(&src, path);
  if (s != CT_OK) return s;
  s = load_tensor(&src, t);
  ct__params_src_close(&src);
  return s;
}

ct_status ct_tensor_load_memory(const void *buf, size_t len, ct_tensor *t) {
  if ((buf == NULL && len > 0) || t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_load_memory: the %s is NULL",
                     t == NULL ? "tensor" : "buffer");
  }
  ct__params_src src;
  ct__params_src_memory(&src, buf, len);
  return load_tensor(&src, t);
}

/* ---- Listing --------------------------------------------------------------------------------- */

typedef struct listing {
  const ct_params_visitor *visitor; /* NULL: check only */
  const ct__params_src *src;
} listing;

/* Returns s, the status a visitor function stopped the read with. Its own message stands when it
 * recorded one (the last error was cleared before the call); otherwise the message names the
 * input, who was being shown (who: "" or "tensor 3 ('p4'): ") and the function. */
static ct_status visitor_stopped(const listing *l, ct_status s, const char *who, const char *fn) {
  if (ct_last_status() == s) return s;
  return ct__error(s,
                   "%s: %sthe visitor's %s function returned %d (%s): the read stopped there; "
                   "record a message with the status to say why",
                   l->src->label, who, fn, (int)s, ct_status_str(s));
}

static ct_status list_begin(void *ctx, ct__params_kind kind, uint64_t count) {
  listing *l = ctx;
  if (l->visitor == NULL || l->visitor->begin == NULL) return CT_OK;
  ct_params_info info = {.kind = kind == CT__PARAMS_DICT ? CT_PARAMS_DICT : CT_PARAMS_TENSOR,
                         .count = count,
                         .nbytes = l->src->size};
  ct_clear_error();
  ct_status s = l->visitor->begin(l->visitor->ctx, &info);
  return s == CT_OK ? CT_OK : visitor_stopped(l, s, "", "begin");
}

static ct_status list_entry(void *ctx, const ct__params_pos *pos, const char *name,
                            ct_tensor *t) {
  listing *l = ctx;
  ct_status s = CT_OK;
  if (l->visitor != NULL && l->visitor->entry != NULL) {
    ct_dtype dtype = ct_tensor_dtype(t);
    ct_params_entry e = {.index = pos->index,
                         .name = name,
                         .dtype = dtype,
                         .dims = ct_tensor_dims(t),
                         .nbytes = (uint64_t)ct_tensor_numel(t) * ct_dtype_size(dtype),
                         .offset = pos->record,
                         .data_offset = pos->data,
                         .tensor = t};
    ct_clear_error();
    s = l->visitor->entry(l->visitor->ctx, &e);
    if (s != CT_OK) {
      char who[128], shown[72];
      if (name != NULL) {
        snprintf(who, sizeof who, "tensor %" PRIu64 " ('%s'): ", pos->index,
                 ct__params_name_shown(name, shown, sizeof shown));
      } else {
        snprintf(who, sizeof who, "the tensor: ");
      }
      s = visitor_stopped(l, s, who, "entry");
    }
  }
  ct_tensor_free(t);
  return s;
}

static ct_status inspect(ct__params_src *src, const ct_params_visitor *visitor) {
  listing l = {.visitor = visitor, .src = src};
  ct__params_sink sink = {.begin = list_begin, .entry = list_entry, .ctx = &l};
  return ct__params_read(src, CT__PARAMS_ANY, &sink);
}

ct_status ct_params_inspect(const char *path, const ct_params_visitor *visitor) {
  if (path == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_params_inspect: the path is NULL: give the path of a parameter file");
  }
  ct__params_src src;
  ct_status s = ct__params_src_file(&src, path);
  if (s != CT_OK) return s;
  s = inspect(&src, visitor);
  ct__params_src_close(&src);
  return s;
}

ct_status ct_params_inspect_memory(const void *buf, size_t len, const ct_params_visitor *visitor) {
  if (buf == NULL && len > 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_params_inspect_memory: the buffer is NULL but len is %zu: pass the "
                     "bytes, or len 0",
                     len);
  }
  ct__params_src src;
  ct__params_src_memory(&src, buf, len);
  return inspect(&src, visitor);
}

/* ---- Saving ---------------------------------------------------------------------------------- */

/* Checks that t can be written: memory that covers its dims. who names it for messages. */
static ct_status check_savable(const ct_tensor *t, const char *what, const char *who) {
  if (!ct_tensor_has_memory(t)) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     "%s: %s holds no memory: give it data (ct_tensor_mutable_data) or leave it "
                     "out; nothing was written",
                     what, who);
  }
  if (ct_tensor_data(t, ct_tensor_dtype(t)) == NULL) {
    ct_status s = ct_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    return ct__error(s, "%s: %s: %s; nothing was written", what, who, msg);
  }
  return CT_OK;
}

/* Writes t's record, through a host copy when its memory is on a device. */
static ct_status write_tensor(ct__params_out *o, const ct_tensor *t, const char *what) {
  if (ct_tensor_place(t).kind != CT_DEVICE_CUDA) return ct__params_out_record(o, t, what);
  ct_tensor *host = ct_tensor_new();
  ct_status s = host ? ct_tensor_copy(host, t, ct_cpu()) : ct_last_status();
  if (s == CT_OK) s = ct__params_out_record(o, host, what);
  ct_tensor_free(host);
  return s;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names to save: the caller's, checked, or the scope's local tensor variables, sorted. */
static ct_status collect_names(const ct_scope *scope, const char *const *names, size_t n,
                               const char ***out, size_t *count) {
  const char *what = "ct_params_save";
  if (names != NULL) {
    const char **sorted = ct__malloc((n ? n : 1) * sizeof *sorted);
    if (sorted == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
    for (size_t i = 0; i < n; i++) {
      if (names[i] == NULL || names[i][0] == '\0') {
        free(sorted);
        return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: names[%zu] is %s: give variable names",
                         what, i, names[i] == NULL ? "NULL" : "empty");
      }
      sorted[i] = names[i];
    }
    qsort(sorted, n, sizeof *sorted, cmp_str);
    for (size_t i = 1; i < n; i++) {
      if (strcmp(sorted[i - 1], sorted[i]) == 0) {
        ct_status s = ct__error(CT_ERR_INVALID_ARGUMENT,
                                "%s: '%s' is named twice: a parameter file holds each name once",
                                what, sorted[i]);
        free(sorted);
        return s;
      }
    }
    free(sorted);
    *out = (const char **)names;
    *count = n;
    return CT_OK;
  }
  size_t total = ct_scope_local_var_names(scope, NULL, 0);
  const char **all = ct__malloc((total ? total : 1) * sizeof *all);
  if (all == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
  size_t got = ct_scope_local_var_names(scope, all, total);
  if (got > total) got = total;
  size_t k = 0;
  for (size_t i = 0; i < got; i++) {
    if (ct_var_is(ct_scope_find_local_var(scope, all[i]), &ct_tensor_type)) all[k++] = all[i];
  }
  *out = all;
  *count = k;
  return CT_OK;
}

/* Resolves every name to a tensor that can be written. */
static ct_status resolve(const ct_scope *scope, const char **list, size_t count, bool local,
                         const ct_tensor **tensors) {
  const char *what = "ct_params_save";
  for (size_t i = 0; i < count; i++) {
    ct_var *v = local ? ct_scope_find_local_var(scope, list[i]) : ct_scope_find_var(scope, list[i]);
    if (v == NULL) {
      return ct__error(CT_ERR_NOT_FOUND,
                       "%s: no variable '%s' in the scope or its ancestors; nothing was written",
                       what, list[i]);
    }
    const ct_type *type = ct_var_type(v);
    if (type != &ct_tensor_type) {
      return ct__error(type ? CT_ERR_TYPE_MISMATCH : CT_ERR_UNINITIALIZED,
                       "%s: variable '%s' holds %s, not a tensor; nothing was written", what,
                       list[i], type ? (type->name ? type->name : "another type") : "nothing");
    }
    tensors[i] = ct_var_get_tensor(v);
    char who[96];
    snprintf(who, sizeof who, "variable '%.60s'", list[i]);
    ct_status s = check_savable(tensors[i], what, who);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}

static ct_status write_dict(const char *path, const char **list, size_t count,
                            const ct_tensor **tensors) {
  const char *what = "ct_params_save";
  ct__params_out *o = ct__malloc(sizeof *o);
  if (o == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
  ct_status s = ct__params_out_open(o, path, what);
  if (s != CT_OK) {
    free(o);
    return s;
  }
  s = ct__params_out_u64(o, CT__PARAMS_DICT_MAGIC, what);
  if (s == CT_OK) s = ct__params_out_u64(o, 0, what);
  if (s == CT_OK) s = ct__params_out_u64(o, count, what);
  for (size_t i = 0; i < count && s == CT_OK; i++) {
    size_t len = strlen(list[i]);
    s = ct__params_out_u64(o, len, what);
    if (s == CT_OK) s = ct__params_out_write(o, list[i], len, what);
  }
  if (s == CT_OK) s = ct__params_out_u64(o, count, what);
  for (size_t i = 0; i < count && s == CT_OK; i++) s = write_tensor(o, tensors[i], what);
  if (s == CT_OK) {
    s = ct__params_out_commit(o, what);
  } else {
    ct__params_out_abort(o);
  }
  free(o);
  return s;
}

ct_status ct_params_save(const char *path, const ct_scope *scope, const char *const *names,
                         size_t n) {
  if (path == NULL || path[0] == '\0' || scope == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_params_save: the %s is %s",
                     scope == NULL ? "scope" : "path",
                     scope == NULL || path == NULL ? "NULL" : "empty");
  }
  const char **list = NULL;
  size_t count = 0;
  ct_status s = collect_names(scope, names, n, &list, &count);
  if (s != CT_OK) return s;
  const ct_tensor **tensors = ct__malloc((count ? count : 1) * sizeof *tensors);
  if (tensors == NULL) {
    s = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_params_save: no host memory for %zu tensors", count);
  }
  if (s == CT_OK) s = resolve(scope, list, count, names == NULL, tensors);
  if (s == CT_OK) s = write_dict(path, list, count, tensors);
  free(tensors);
  if (names == NULL) free(list);
  return s;
}

ct_status ct_tensor_save(const char *path, const ct_tensor *t) {
  const char *what = "ct_tensor_save";
  if (path == NULL || path[0] == '\0' || t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the %s is %s", what,
                     t == NULL ? "tensor" : "path", t == NULL || path == NULL ? "NULL" : "empty");
  }
  ct_status s = check_savable(t, what, "the tensor");
  if (s != CT_OK) return s;
  ct__params_out *o = ct__malloc(sizeof *o);
  if (o == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
  s = ct__params_out_open(o, path, what);
  if (s == CT_OK) {
    s = write_tensor(o, t, what);
    if (s == CT_OK) {
      s = ct__params_out_commit(o, what);
    } else {
      ct__params_out_abort(o);
    }
  }
  free(o);
  return s;
}
