/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_pb.c: the reader of ONNX's protobuf messages (onnx/onnx_model.h), for untrusted
 * input. Field numbers and types are those of onnx.proto (ONNX 1.12, as Debian's libonnx-dev
 * installs it). A message is a run of (tag, value) pairs; the reader walks each message once,
 * decodes the fields it knows and skips the others by their wire type, so it never recurses into
 * what it does not read. Every varint is at most 10 bytes, every length is checked against the
 * bytes left, and a failure names the field path and the byte offset. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include "onnx/onnx_wire.h"

/* ---- The arena: names and small arrays, freed with the model ---------------------------------- */

struct ox_arena {
  struct ox_arena *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

static void *arena_alloc(ox_model *m, size_t n) {
  n = (n + 15) & ~(size_t)15;
  ox_arena *a = m->arena;
  if (a == NULL || a->cap - a->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    ox_arena *b = ct__malloc(sizeof *b + cap);
    if (b == NULL) return NULL;
    b->next = a;
    b->used = 0;
    b->cap = cap;
    m->arena = a = b;
  }
  void *p = a->data + a->used;
  a->used += n;
  return p;
}

const char *ox_cstr(ox_model *m, ox_span s) {
  char *c = arena_alloc(m, s.n + 1);
  if (c == NULL) return NULL;
  if (s.n) memcpy(c, s.p, s.n);
  c[s.n] = '\0';
  return c;
}

bool ox_eq(ox_span s, const char *c) { return strlen(c) == s.n && memcmp(s.p, c, s.n) == 0; }

void ox_model_free(ox_model *m) {
  for (ox_arena *a = m->arena, *next; a != NULL; a = next) {
    next = a->next;
    free(a);
  }
  free(m->opsets);
  free(m->nodes);
  free(m->inits);
  free(m->inputs);
  free(m->outputs);
  memset(m, 0, sizeof *m);
}

/* ---- Messages -------------------------------------------------------------------------------- */

static ct_status parse_tensor(rd *r, ox_span s, ox_tensor *t);

static ct_status parse_entry(rd *r, ox_span s, ox_span *key, ox_span *value) {
  pos_t sv = enter(r, s, ".external_data");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    if (f == 1 || f == 2) {
      st = expect(r, wt, WT_LEN, f == 1 ? "key" : "value");
      if (st == CT_OK) st = span(r, f == 1 ? key : value);
    } else {
      st = skip(r, wt);
    }
  }
  leave(r, sv);
  return st;
}

/* external_data's key/value pairs: location, offset, length (checksum ignored). */
static ct_status external_entry(rd *r, ox_tensor *t, ox_span key, ox_span value) {
  if (ox_eq(key, "location")) {
    t->location = value;
    return CT_OK;
  }
  if (!ox_eq(key, "offset") && !ox_eq(key, "length")) return CT_OK;
  int64_t v = 0;
  if (value.n == 0 || value.n > 18) return bad(r, "external_data '%.*s' is not a number", (int)key.n, key.p);
  for (size_t i = 0; i < value.n; i++) {
    if (value.p[i] < '0' || value.p[i] > '9') {
      return bad(r, "external_data '%.*s' is not a number", (int)key.n, key.p);
    }
    v = v * 10 + (value.p[i] - '0');
  }
  if (ox_eq(key, "offset")) t->ext_offset = v;
  else t->ext_length = v;
  return CT_OK;
}

static ct_status parse_tensor(rd *r, ox_span s, ox_tensor *t) {
  *t = (ox_tensor){.msg = s, .ext_offset = -1, .ext_length = -1};
  pos_t sv = enter(r, s, "%s", "");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    uint64_t v = 0;
    ox_span x;
    switch (f) {
      case 1: /* dims, packed or not */
        if (wt == WT_LEN) {
          if ((st = span(r, &x)) != CT_OK) break;
          pos_t in = enter(r, x, ".dims");
          while (st == CT_OK && r->p < r->end) {
            if (t->rank >= CT_MAX_RANK) {
              st = bad(r, "more than %d dims (corten's CT_MAX_RANK)", CT_MAX_RANK);
              break;
            }
            st = read_int(r, WT_VARINT, &t->dims[t->rank++]);
          }
          leave(r, in);
        } else {
          if (t->rank >= CT_MAX_RANK) {
            st = bad(r, "more than %d dims (corten's CT_MAX_RANK)", CT_MAX_RANK);
            break;
          }
          st = read_int(r, wt, &t->dims[t->rank++]);
        }
        break;
      case 2:
        if ((st = expect(r, wt, WT_VARINT, "data_type")) == CT_OK && (st = varint(r, &v)) == CT_OK) {
          t->data_type = (int32_t)v;
        }
        break;
      case 8:
        if ((st = expect(r, wt, WT_LEN, "name")) == CT_OK) st = span(r, &t->name);
        break;
      case 9:
        if ((st = expect(r, wt, WT_LEN, "raw_data")) == CT_OK) st = span(r, &t->raw);
        t->has_raw = true;
        break;
      case 13: {
        ox_span key = {0}, value = {0};
        if ((st = expect(r, wt, WT_LEN, "external_data")) == CT_OK) st = span(r, &x);
        if (st == CT_OK) st = parse_entry(r, x, &key, &value);
        if (st == CT_OK) st = external_entry(r, t, key, value);
        break;
      }
      case 14:
        if ((st = expect(r, wt, WT_VARINT, "data_location")) == CT_OK && (st = varint(r, &v)) == CT_OK) {
          t->external = v == 1;
        }
        break;
      default: st = skip(r, wt);
    }
  }
  for (int k = 0; st == CT_OK && k < t->rank; k++) {
    if (t->dims[k] < 0) st = bad(r, "dim %d is %lld: dims cannot be negative", k, (long long)t->dims[k]);
  }
  leave(r, sv);
  return st;
}

/* The values of a repeated int64 (ints) or float (floats) field, packed or not, appended to
 * a's arrays (sized by parse_attr's first pass). */
static ct_status repeated_num(rd *r, int wt, bool is_float, ox_attr *a) {
  size_t *n = is_float ? &a->n_floats : &a->n_ints;
  if (wt != WT_LEN) {
    ct_status st = is_float ? (wt == WT_I32 ? fixed(r, 4, &a->floats[*n])
                                            : bad(r, "a float with wire type %d", wt))
                            : read_int(r, wt, &a->ints[*n]);
    if (st == CT_OK) (*n)++;
    return st;
  }
  ox_span x;
  ct_status st = span(r, &x);
  if (st != CT_OK) return st;
  if (is_float && x.n % 4 != 0) return bad(r, "packed floats of %zu bytes", x.n);
  pos_t in = enter(r, x, "%s", "");
  while (st == CT_OK && r->p < r->end) {
    st = is_float ? fixed(r, 4, &a->floats[*n]) : read_int(r, WT_VARINT, &a->ints[*n]);
    if (st == CT_OK) (*n)++;
  }
  leave(r, in);
  return st;
}

/* The most entries the repeated fields of attribute message s can hold (each takes a byte at
 * least), so its arrays are allocated once: *nf floats, *ni ints, *ns strings. */
static ct_status count_repeated(rd *r, ox_span s, size_t *nf, size_t *ni, size_t *ns) {
  pos_t sv = enter(r, s, "%s", "");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  *nf = *ni = *ns = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    const uint8_t *at = r->p;
    if ((st = skip(r, wt)) != CT_OK) break;
    size_t bytes = (size_t)(r->p - at);
    if (f == 7) *nf += wt == WT_LEN ? bytes / 4 : 1;
    if (f == 8) *ni += wt == WT_LEN ? bytes : 1;
    if (f == 9) *ns += 1;
  }
  leave(r, sv);
  return st;
}

static ct_status parse_attr(rd *r, ox_span s, ox_attr *a) {
  size_t nf, ni, ns;
  ct_status st = count_repeated(r, s, &nf, &ni, &ns);
  if (st != CT_OK) return st;
  a->floats = arena_alloc(r->m, nf * sizeof *a->floats + 1);
  a->ints = arena_alloc(r->m, ni * sizeof *a->ints + 1);
  a->strings = arena_alloc(r->m, ns * sizeof *a->strings + 1);
  if (a->floats == NULL || a->ints == NULL || a->strings == NULL) return oom();
  pos_t sv = enter(r, s, "%s", "");
  bool more;
  int f = 0, wt = 0;
  uint64_t v = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    ox_span x;
    switch (f) {
      case 1: if ((st = expect(r, wt, WT_LEN, "name")) == CT_OK) st = span(r, &a->name); break;
      case 20:
        if ((st = expect(r, wt, WT_VARINT, "type")) == CT_OK && (st = varint(r, &v)) == CT_OK) {
          a->type = (int)v;
        }
        break;
      case 2: if ((st = expect(r, wt, WT_I32, "f")) == CT_OK) st = fixed(r, 4, &a->f); break;
      case 3: if ((st = expect(r, wt, WT_VARINT, "i")) == CT_OK) st = read_int(r, wt, &a->i); break;
      case 4: if ((st = expect(r, wt, WT_LEN, "s")) == CT_OK) st = span(r, &a->s); break;
      case 5:
        if ((st = expect(r, wt, WT_LEN, "t")) == CT_OK) st = span(r, &x);
        if (st == CT_OK) st = parse_tensor(r, x, &a->t);
        break;
      case 7: st = repeated_num(r, wt, true, a); break;
      case 8: st = repeated_num(r, wt, false, a); break;
      case 9:
        if ((st = expect(r, wt, WT_LEN, "strings")) == CT_OK) st = span(r, &a->strings[a->n_strings]);
        if (st == CT_OK) a->n_strings++;
        break;
      default: st = skip(r, wt);
    }
  }
  leave(r, sv);
  return st;
}

static ct_status parse_names(rd *r, int wt, ox_span **arr, size_t *n, const char *field) {
  ox_span x;
  ct_status st = expect(r, wt, WT_LEN, field);
  if (st == CT_OK) st = span(r, &x);
  if (st != CT_OK) return st;
  ox_span *e = push((void **)arr, n, sizeof **arr);
  if (e == NULL) return oom();
  *e = x;
  return CT_OK;
}

static ct_status parse_node(rd *r, ox_span s, ox_node *nd) {
  pos_t sv = enter(r, s, "%s", "");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    ox_span x;
    switch (f) {
      case 1: st = parse_names(r, wt, &nd->in, &nd->n_in, "input"); break;
      case 2: st = parse_names(r, wt, &nd->out, &nd->n_out, "output"); break;
      case 3: if ((st = expect(r, wt, WT_LEN, "name")) == CT_OK) st = span(r, &nd->name); break;
      case 4: if ((st = expect(r, wt, WT_LEN, "op_type")) == CT_OK) st = span(r, &nd->op_type); break;
      case 7: if ((st = expect(r, wt, WT_LEN, "domain")) == CT_OK) st = span(r, &nd->domain); break;
      case 5: {
        if ((st = expect(r, wt, WT_LEN, "attribute")) != CT_OK || (st = span(r, &x)) != CT_OK) break;
        ox_attr *a = push((void **)&nd->attr, &nd->n_attr, sizeof *a);
        if (a == NULL) return leave(r, sv), oom();
        size_t len = path_push(r, "attribute", nd->n_attr - 1);
        st = parse_attr(r, x, a);
        r->path[len] = '\0';
        break;
      }
      default: st = skip(r, wt);
    }
  }
  leave(r, sv);
  return st;
}

/* Moves a node's growable arrays into the arena, so the model frees them with it. */
static ct_status settle_node(rd *r, ox_node *nd) {
  ox_span *in = NULL, *out = NULL;
  ox_attr *attr = NULL;
  if (nd->n_in && (in = arena_alloc(r->m, nd->n_in * sizeof *in)) != NULL) {
    memcpy(in, nd->in, nd->n_in * sizeof *in);
  }
  if (nd->n_out && (out = arena_alloc(r->m, nd->n_out * sizeof *out)) != NULL) {
    memcpy(out, nd->out, nd->n_out * sizeof *out);
  }
  if (nd->n_attr && (attr = arena_alloc(r->m, nd->n_attr * sizeof *attr)) != NULL) {
    memcpy(attr, nd->attr, nd->n_attr * sizeof *attr);
  }
  free(nd->in);
  free(nd->out);
  free(nd->attr);
  nd->in = in;
  nd->out = out;
  nd->attr = attr;
  if ((nd->n_in && in == NULL) || (nd->n_out && out == NULL) || (nd->n_attr && attr == NULL)) {
    nd->n_in = nd->n_out = nd->n_attr = 0;
    return oom();
  }
  return CT_OK;
}

static ct_status parse_shape(rd *r, ox_span s, ox_value *v) {
  pos_t sv = enter(r, s, ".shape");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  v->rank = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    if (f != 1) {
      st = skip(r, wt);
      continue;
    }
    ox_span d;
    if ((st = expect(r, wt, WT_LEN, "dim")) != CT_OK || (st = span(r, &d)) != CT_OK) break;
    if (v->rank >= CT_MAX_RANK) {
      st = bad(r, "more than %d dims (corten's CT_MAX_RANK)", CT_MAX_RANK);
      break;
    }
    int64_t value = -1;
    pos_t in = enter(r, d, ".dim[%d]", v->rank);
    while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
      if (f == 1 && wt == WT_VARINT) st = read_int(r, wt, &value);
      else st = skip(r, wt);
    }
    leave(r, in);
    v->dims[v->rank++] = value < 0 ? -1 : value;
  }
  leave(r, sv);
  return st;
}

static ct_status parse_value(rd *r, ox_span s, ox_value *v) {
  *v = (ox_value){.rank = -1};
  pos_t sv = enter(r, s, "%s", "");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    ox_span x;
    if (f == 1) {
      if ((st = expect(r, wt, WT_LEN, "name")) == CT_OK) st = span(r, &v->name);
    } else if (f == 2) { /* TypeProto: only tensor_type (1) is read */
      if ((st = expect(r, wt, WT_LEN, "type")) != CT_OK || (st = span(r, &x)) != CT_OK) break;
      pos_t ty = enter(r, x, ".type");
      while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
        ox_span tt;
        if (f != 1 || wt != WT_LEN) {
          v->not_tensor |= f == 4 || f == 5 || f == 8 || f == 9;
          st = skip(r, wt);
          continue;
        }
        if ((st = span(r, &tt)) != CT_OK) break;
        pos_t in = enter(r, tt, ".tensor_type");
        while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
          uint64_t e = 0;
          ox_span sh;
          if (f == 1 && wt == WT_VARINT) {
            if ((st = varint(r, &e)) == CT_OK) v->elem_type = (int32_t)e;
          } else if (f == 2 && wt == WT_LEN) {
            if ((st = span(r, &sh)) == CT_OK) st = parse_shape(r, sh, v);
          } else {
            st = skip(r, wt);
          }
        }
        leave(r, in);
      }
      leave(r, ty);
    } else {
      st = skip(r, wt);
    }
  }
  leave(r, sv);
  return st;
}

static ct_status parse_graph(rd *r, ox_span s) {
  ox_model *m = r->m;
  pos_t sv = enter(r, s, "graph");
  ct_status st = CT_OK;
  bool more;
  int f = 0, wt = 0;
  while (st == CT_OK && (st = tag(r, &f, &wt, &more)) == CT_OK && more) {
    ox_span x;
    if (f != 1 && f != 5 && f != 11 && f != 12 && f != 15) {
      st = skip(r, wt);
      continue;
    }
    if ((st = expect(r, wt, WT_LEN, "a repeated message")) != CT_OK || (st = span(r, &x)) != CT_OK) break;
    switch (f) {
      case 1: {
        ox_node *nd = push((void **)&m->nodes, &m->n_nodes, sizeof *nd);
        if (nd == NULL) return leave(r, sv), oom();
        size_t len = path_push(r, "node", m->n_nodes - 1);
        st = parse_node(r, x, nd);
        if (st == CT_OK) st = settle_node(r, nd);
        else settle_node(r, nd);
        r->path[len] = '\0';
        break;
      }
      case 5: {
        ox_tensor *t = push((void **)&m->inits, &m->n_inits, sizeof *t);
        if (t == NULL) return leave(r, sv), oom();
        size_t len = path_push(r, "initializer", m->n_inits - 1);
        st = parse_tensor(r, x, t);
        r->path[len] = '\0';
        break;
      }
      case 11: case 12: {
        ox_value *v = f == 11 ? push((void **)&m->inputs, &m->n_inputs, sizeof *v)
                              : push((void **)&m->outputs, &m->n_outputs, sizeof *v);
        if (v == NULL) return leave(r, sv), oom();
        size_t len = path_push(r, f == 11 ? "input" : "output",
                               (f == 11 ? m->n_inputs : m->n_outputs) - 1);
        st = parse_value(r, x, v);
        r->path[len] = '\0';
        break;
      }
      default: m->n_sparse++;
    }
  }
  leave(r, sv);
  return st;
}

ct_status ox_parse(const uint8_t *p, size_t n, const char *what, ox_model *m) {
  memset(m, 0, sizeof *m);
  rd r = {.base = p, .p = p, .end = p + n, .what = what, .m = m};
  bool more, graph = false;
  int f = 0, wt = 0;
  ct_status st = CT_OK;
  while (st == CT_OK && (st = tag(&r, &f, &wt, &more)) == CT_OK && more) {
    ox_span x;
    if (f == 1) {
      uint64_t v = 0;
      if ((st = expect(&r, wt, WT_VARINT, "ir_version")) == CT_OK && (st = varint(&r, &v)) == CT_OK) {
        m->ir_version = (int64_t)v;
      }
    } else if (f == 8 || f == 7 || f == 25) {
      if ((st = expect(&r, wt, WT_LEN, f == 8 ? "opset_import" : f == 7 ? "graph" : "functions")) != CT_OK ||
          (st = span(&r, &x)) != CT_OK) {
        break;
      }
      if (f == 25) {
        m->n_functions++;
      } else if (f == 7) {
        if (graph) st = bad(&r, "a second graph");
        else st = parse_graph(&r, x);
        graph = true;
      } else {
        ox_opset_id *o = push((void **)&m->opsets, &m->n_opsets, sizeof *o);
        if (o == NULL) {
          st = oom();
          break;
        }
        pos_t in = enter(&r, x, "opset_import[%zu]", m->n_opsets - 1);
        while (st == CT_OK && (st = tag(&r, &f, &wt, &more)) == CT_OK && more) {
          if (f == 1 && wt == WT_LEN) st = span(&r, &o->domain);
          else if (f == 2 && wt == WT_VARINT) st = read_int(&r, wt, &o->version);
          else st = skip(&r, wt);
        }
        leave(&r, in);
      }
    } else {
      st = skip(&r, wt);
    }
  }
  if (st == CT_OK && !graph) st = bad(&r, "no graph (field 7): not an ONNX model");
  if (st != CT_OK) ox_model_free(m);
  return st;
}

ct_status ox_parse_tensor(const uint8_t *p, size_t n, const char *what, ox_tensor *t) {
  rd r = {.base = p, .p = p, .end = p + n, .what = what};
  return parse_tensor(&r, (ox_span){p, n}, t);
}
