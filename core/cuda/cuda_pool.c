/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_pool.c: see cuda_pool.h and docs/design/cuda-memory.md.
 *
 * Bookkeeping. A segment is a doubly linked list of chunks in address order (prev/next); its
 * first chunk's record never changes while the segment lives (splits hand out the front part,
 * merges keep the lower record), so it doubles as the segment's entry in the pool's segment
 * list. Free chunks sit in two places: a treap per pool (small, large) ordered by (stream id,
 * size, address), where the best fit for a stream is one lower-bound search, and their stream's
 * list in the order they were freed, so that an event recorded after free number k cleans a
 * prefix of that list. Clean chunks belong to the pseudo-stream with id 0, which sorts first. */
#include "common/alloc.h"
#include "cuda/cuda_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct pstream pstream;

struct ct__pool_chunk {
  uintptr_t addr;
  size_t size;
  ct__pool_chunk *prev, *next;         /* address neighbours in the segment */
  ct__pool_chunk *seg_prev, *seg_next; /* the pool's segment list (first chunks only) */
  ct__pool_chunk *left, *right;        /* free treap */
  ct__pool_chunk *fprev, *fnext;       /* the owning stream's free list, oldest free first */
  pstream *stream;                     /* owner; the pool's clean entry when clean */
  uint64_t free_seq;                   /* the owner's free count when this chunk was freed */
  uint32_t prio;                       /* treap priority, a hash of the address */
  bool is_free, is_large;
};

/* A stream the pool has seen. */
struct pstream {
  uint64_t id;
  void *handle;
  ct__pool_chunk *fhead, *ftail; /* free chunks of this stream, in free order */
  size_t nfree;
  size_t nrefs;       /* chunk records owned (free or handed out) */
  uint64_t free_seq;  /* frees onto this stream so far */
  void *event;        /* pending event, recorded after free number event_seq; NULL when none */
  uint64_t event_seq;
  bool retired;       /* the stream is gone: releases of its chunks go clean */
  pstream *next;
};

struct ct__pool {
  pthread_mutex_t lock;
  ct__pool_backing b;
  ct__pool_chunk *roots[2]; /* free treaps: [0] small pool, [1] large pool */
  pstream clean;            /* id 0: chunks any stream may take */
  pstream *streams;         /* every other stream seen, newest first */
  pstream *last;            /* the stream of the last call, to skip the search */
  ct__pool_chunk *segments; /* first chunk of each segment */
  ct__pool_chunk *spare;    /* recycled chunk records, linked through next */
  ct__pool_stats st;
};

size_t ct__pool_round(size_t size) {
  if (size == 0) return CT__POOL_ROUND;
  if (size > SIZE_MAX - (CT__POOL_ROUND - 1)) return 0;
  return (size + CT__POOL_ROUND - 1) & ~(CT__POOL_ROUND - 1);
}

size_t ct__pool_chunk_size(const ct__pool_chunk *c) { return c->size; }

/* ---- Treap of free chunks ----------------------------------------------------------------- */

static uint32_t hash_addr(uintptr_t a) {
  uint64_t x = (uint64_t)a + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return (uint32_t)((x ^ (x >> 31)) >> 32);
}

/* Whether chunk a orders before (stream id, size, addr). */
static bool key_less(const ct__pool_chunk *a, uint64_t id, size_t size, uintptr_t addr) {
  if (a->stream->id != id) return a->stream->id < id;
  if (a->size != size) return a->size < size;
  return a->addr < addr;
}

static ct__pool_chunk *treap_insert(ct__pool_chunk *t, ct__pool_chunk *n) {
  if (t == NULL) return n;
  if (key_less(n, t->stream->id, t->size, t->addr)) {
    t->left = treap_insert(t->left, n);
    if (t->left->prio > t->prio) { /* rotate right */
      ct__pool_chunk *l = t->left;
      t->left = l->right;
      l->right = t;
      return l;
    }
  } else {
    t->right = treap_insert(t->right, n);
    if (t->right->prio > t->prio) { /* rotate left */
      ct__pool_chunk *r = t->right;
      t->right = r->left;
      r->left = t;
      return r;
    }
  }
  return t;
}

/* Joins two treaps whose keys are all of a's before all of b's. */
static ct__pool_chunk *treap_join(ct__pool_chunk *a, ct__pool_chunk *b) {
  if (a == NULL) return b;
  if (b == NULL) return a;
  if (a->prio > b->prio) {
    a->right = treap_join(a->right, b);
    return a;
  }
  b->left = treap_join(a, b->left);
  return b;
}

static ct__pool_chunk *treap_remove(ct__pool_chunk *t, const ct__pool_chunk *n) {
  if (t == n) return treap_join(t->left, t->right);
  if (key_less(n, t->stream->id, t->size, t->addr)) {
    t->left = treap_remove(t->left, n);
  } else {
    t->right = treap_remove(t->right, n);
  }
  return t;
}

/* The smallest free chunk of stream id with at least size bytes (lowest address on a tie). */
static ct__pool_chunk *treap_fit(ct__pool_chunk *t, uint64_t id, size_t size) {
  ct__pool_chunk *best = NULL;
  while (t != NULL) {
    if (key_less(t, id, size, 0)) {
      t = t->right;
    } else {
      best = t;
      t = t->left;
    }
  }
  return (best != NULL && best->stream->id == id) ? best : NULL;
}

/* ---- Chunk records and streams ------------------------------------------------------------ */

static ct__pool_chunk *record_new(ct__pool *p) {
  ct__pool_chunk *c = p->spare;
  if (c != NULL) {
    p->spare = c->next;
  } else {
    c = ct__malloc(sizeof *c);
    if (c == NULL) return NULL;
  }
  memset(c, 0, sizeof *c);
  c->stream = &p->clean;
  return c;
}

static void stream_drop_if_done(ct__pool *p, pstream *s) {
  if (s == &p->clean || !s->retired || s->nrefs != 0) return;
  for (pstream **pp = &p->streams; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  }
  if (p->last == s) p->last = NULL;
  free(s);
}

/* Moves a chunk record (not in any treap or list) to stream s. */
static void set_stream(ct__pool *p, ct__pool_chunk *c, pstream *s) {
  pstream *old = c->stream;
  if (old == s) return;
  c->stream = s;
  if (s != &p->clean) s->nrefs++;
  if (old != &p->clean) {
    old->nrefs--;
    stream_drop_if_done(p, old);
  }
}

static void record_recycle(ct__pool *p, ct__pool_chunk *c) {
  set_stream(p, c, &p->clean);
  c->next = p->spare;
  p->spare = c;
}

static pstream *stream_find(ct__pool *p, uint64_t id) {
  if (p->last != NULL && p->last->id == id) return p->last;
  for (pstream *s = p->streams; s != NULL; s = s->next) {
    if (s->id == id) return p->last = s;
  }
  return NULL;
}

static pstream *stream_get(ct__pool *p, ct__pool_stream key) {
  pstream *s = stream_find(p, key.id);
  if (s != NULL) return s;
  s = ct__calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->id = key.id;
  s->handle = key.handle;
  s->next = p->streams;
  p->streams = s;
  return p->last = s;
}

/* ---- Free chunks: treap + stream list ----------------------------------------------------- */

static void free_insert(ct__pool *p, ct__pool_chunk *c) {
  pstream *s = c->stream;
  c->is_free = true;
  c->left = c->right = NULL;
  c->prio = hash_addr(c->addr);
  p->roots[c->is_large] = treap_insert(p->roots[c->is_large], c);
  c->fnext = NULL;
  c->fprev = s->ftail;
  if (s->ftail) {
    s->ftail->fnext = c;
  } else {
    s->fhead = c;
  }
  s->ftail = c;
  s->nfree++;
  p->st.free_chunks++;
}

static void free_remove(ct__pool *p, ct__pool_chunk *c) {
  pstream *s = c->stream;
  p->roots[c->is_large] = treap_remove(p->roots[c->is_large], c);
  if (c->fprev) {
    c->fprev->fnext = c->fnext;
  } else {
    s->fhead = c->fnext;
  }
  if (c->fnext) {
    c->fnext->fprev = c->fprev;
  } else {
    s->ftail = c->fprev;
  }
  c->fprev = c->fnext = NULL;
  s->nfree--;
  p->st.free_chunks--;
  c->is_free = false;
}

/* Whether a free neighbour n may merge into a chunk of stream s: same stream, or clean (clean
 * memory is safe on any stream). */
static bool can_merge(const ct__pool *p, const ct__pool_chunk *n, const pstream *s) {
  return n != NULL && n->is_free && (n->stream == s || n->stream == &p->clean);
}

/* Frees chunk c (not in a treap) and merges it with the free neighbours it may join; the
 * result is filed under c's stream with free number seq. */
static void file_free(ct__pool *p, ct__pool_chunk *c, uint64_t seq) {
  pstream *s = c->stream;
  ct__pool_chunk *n = c->prev;
  if (can_merge(p, n, s)) { /* the lower record absorbs c */
    free_remove(p, n);
    set_stream(p, n, s);
    n->size += c->size;
    n->next = c->next;
    if (c->next) c->next->prev = n;
    record_recycle(p, c);
    c = n;
  }
  n = c->next;
  if (can_merge(p, n, s)) {
    free_remove(p, n);
    c->size += n->size;
    c->next = n->next;
    if (n->next) n->next->prev = c;
    record_recycle(p, n);
  }
  c->free_seq = seq;
  free_insert(p, c);
}

/* Makes the free chunks of s freed up to number seq clean (all of them for UINT64_MAX). */
static void clean_upto(ct__pool *p, pstream *s, uint64_t seq) {
  while (s->fhead != NULL && s->fhead->free_seq <= seq) {
    ct__pool_chunk *c = s->fhead;
    free_remove(p, c);
    set_stream(p, c, &p->clean);
    file_free(p, c, 0);
  }
}

/* ---- Segments ----------------------------------------------------------------------------- */

static size_t segment_size(size_t size) {
  if (size <= CT__POOL_SMALL_MAX) return CT__POOL_SMALL_SEGMENT;
  if (size < CT__POOL_MEDIUM_MAX) return CT__POOL_MEDIUM_SEGMENT;
  if (size > SIZE_MAX - (CT__POOL_LARGE_GRANULE - 1)) return 0;
  return (size + CT__POOL_LARGE_GRANULE - 1) & ~(CT__POOL_LARGE_GRANULE - 1);
}

/* Returns the whole-segment chunk c (free, clean, filed) to the backing. */
static ct_status segment_release(ct__pool *p, ct__pool_chunk *c) {
  free_remove(p, c);
  if (c->seg_prev) {
    c->seg_prev->seg_next = c->seg_next;
  } else {
    p->segments = c->seg_next;
  }
  if (c->seg_next) c->seg_next->seg_prev = c->seg_prev;
  ct_status s = p->b.free(p->b.ctx, (void *)c->addr, c->size);
  p->st.backing_frees++;
  p->st.reserved -= c->size;
  p->st.segments--;
  record_recycle(p, c);
  return s;
}

/* Waits for the device, cleans every cached chunk and returns every whole free segment. */
static ct_status release_cached(ct__pool *p) {
  ct_status first = p->b.synchronize(p->b.ctx);
  if (first != CT_OK) return first;
  for (pstream *s = p->streams; s != NULL; s = s->next) {
    if (s->event != NULL) {
      p->b.event_free(p->b.ctx, s->event);
      s->event = NULL;
    }
    clean_upto(p, s, UINT64_MAX);
  }
  ct__pool_chunk *c = p->clean.fhead;
  while (c != NULL) {
    ct__pool_chunk *next = c->fnext;
    if (c->prev == NULL && c->next == NULL) {
      ct_status s = segment_release(p, c);
      if (first == CT_OK) first = s;
    }
    c = next;
  }
  return first;
}

/* A new segment for a request of size bytes on stream s, as one chunk handed to the caller. */
static ct_status segment_new(ct__pool *p, size_t size, bool large, pstream *s,
                             ct__pool_chunk **out) {
  size_t seg = segment_size(size);
  void *ptr = NULL;
  if (seg == 0) return CT_ERR_OUT_OF_MEMORY;
  ct__pool_chunk *c = record_new(p);
  if (c == NULL) return CT_ERR_OUT_OF_MEMORY;
  ct_status st = p->b.alloc(p->b.ctx, seg, &ptr);
  if (st == CT_ERR_OUT_OF_MEMORY) { /* free the cache, then one more try */
    p->st.backing_failures++;
    p->st.retries++;
    st = release_cached(p);
    if (st == CT_OK) {
      st = p->b.alloc(p->b.ctx, seg, &ptr);
      if (st != CT_OK) p->st.backing_failures++;
    }
  } else if (st != CT_OK) {
    p->st.backing_failures++;
  }
  if (st != CT_OK) {
    record_recycle(p, c);
    return st;
  }
  p->st.backing_allocs++;
  p->st.reserved += seg;
  p->st.segments++;
  c->addr = (uintptr_t)ptr;
  c->size = seg;
  c->is_large = large;
  set_stream(p, c, s);
  c->seg_next = p->segments;
  if (p->segments) p->segments->seg_prev = c;
  p->segments = c;
  *out = c;
  return CT_OK;
}

/* ---- Streams across streams: events ------------------------------------------------------- */

/* For every other stream holding freed chunks: cleans those an event has cleared, and records an
 * event after the latest free where none is pending, so they clear later. */
static ct_status gate_streams(ct__pool *p, const pstream *self) {
  for (pstream *s = p->streams; s != NULL; s = s->next) {
    if (s == self || s->nfree == 0) continue;
    for (int pass = 0; pass < 2; pass++) {
      if (s->event == NULL) { /* pass 0: nothing pending; pass 1: the last one did not cover all */
        if (s->nfree == 0) break;
        ct_status st = p->b.event_record(p->b.ctx, s->handle, &s->event);
        if (st != CT_OK) {
          s->event = NULL;
          return st;
        }
        s->event_seq = s->free_seq;
        p->st.events++;
      }
      int done = p->b.event_query(p->b.ctx, s->event);
      if (done < 0) return (ct_status)done;
      if (!done) break;
      p->b.event_free(p->b.ctx, s->event);
      s->event = NULL;
      clean_upto(p, s, s->event_seq);
    }
  }
  return CT_OK;
}

/* Takes the best fit for s out of the free chunks: its own or a clean one, the smaller. *from
 * says whose it was. NULL when none fits. */
static ct__pool_chunk *take_fit(ct__pool *p, bool large, pstream *s, size_t size,
                                pstream **from) {
  ct__pool_chunk *own = treap_fit(p->roots[large], s->id, size);
  ct__pool_chunk *any = treap_fit(p->roots[large], 0, size);
  ct__pool_chunk *c = own;
  if (any != NULL && (own == NULL || any->size < own->size)) c = any;
  if (c == NULL) return NULL;
  *from = c->stream;
  free_remove(p, c);
  set_stream(p, c, s);
  return c;
}

/* ---- The pool ----------------------------------------------------------------------------- */

ct__pool *ct__pool_new(const ct__pool_backing *backing) {
  ct__pool *p = ct__calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  if (pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p);
    return NULL;
  }
  p->b = *backing;
  p->clean.id = 0;
  return p;
}

void ct__pool_free(ct__pool *p) {
  if (p == NULL) return;
  while (p->segments != NULL) {
    ct__pool_chunk *head = p->segments, *c = head;
    size_t size = 0;
    p->segments = head->seg_next;
    while (c != NULL) {
      ct__pool_chunk *next = c->next;
      size += c->size;
      if (c != head) free(c);
      c = next;
    }
    p->b.free(p->b.ctx, (void *)head->addr, size);
    free(head);
  }
  while (p->spare != NULL) {
    ct__pool_chunk *c = p->spare;
    p->spare = c->next;
    free(c);
  }
  while (p->streams != NULL) {
    pstream *s = p->streams;
    p->streams = s->next;
    if (s->event != NULL) p->b.event_free(p->b.ctx, s->event);
    free(s);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

ct_status ct__pool_alloc(ct__pool *p, size_t size, ct__pool_stream stream, ct__pool_chunk **out,
                         void **ptr) {
  size_t rounded = ct__pool_round(size);
  if (rounded == 0) return CT_ERR_OUT_OF_MEMORY;
  if (stream.id == 0) return CT_ERR_INVALID_ARGUMENT; /* id 0 is the clean pseudo-stream */
  bool large = rounded > CT__POOL_SMALL_MAX;
  ct_status st = CT_OK;
  pthread_mutex_lock(&p->lock);
  pstream *s = stream_get(p, stream), *from = s;
  if (s == NULL) {
    pthread_mutex_unlock(&p->lock);
    return CT_ERR_OUT_OF_MEMORY;
  }
  ct__pool_chunk *c = take_fit(p, large, s, rounded, &from);
  if (c == NULL) {
    st = gate_streams(p, s);
    if (st == CT_OK) c = take_fit(p, large, s, rounded, &from);
  }
  if (c == NULL && st == CT_OK) {
    st = segment_new(p, rounded, large, s, &c);
    /* A failed backing allocation synchronised the device and cleaned the cache before its
     * retry: a chunk that was waiting on another stream (and could not be released because a
     * neighbour in its segment is in use) may fit now. */
    if (st == CT_ERR_OUT_OF_MEMORY) {
      c = take_fit(p, large, s, rounded, &from);
      if (c != NULL) st = CT_OK;
    }
  }
  if (st != CT_OK) {
    pthread_mutex_unlock(&p->lock);
    return st;
  }
  /* Split off the rest when it is worth keeping: any rest in the small pool, more than the
   * small pool's largest request in the large one (smaller rests stay in the chunk). */
  size_t rest = c->size - rounded;
  if (rest > 0 && (!large || rest > CT__POOL_SMALL_MAX)) {
    ct__pool_chunk *r = record_new(p);
    if (r != NULL) { /* without a record the chunk is handed out whole */
      r->addr = c->addr + rounded;
      r->size = rest;
      r->is_large = large;
      r->prev = c;
      r->next = c->next;
      if (c->next) c->next->prev = r;
      c->next = r;
      c->size = rounded;
      set_stream(p, r, from);
      r->free_seq = c->free_seq;
      free_insert(p, r);
    }
  }
  c->is_free = false;
  p->st.in_use += c->size;
  pthread_mutex_unlock(&p->lock);
  *out = c;
  *ptr = (void *)c->addr;
  return CT_OK;
}

void ct__pool_release(ct__pool *p, ct__pool_chunk *c) {
  pthread_mutex_lock(&p->lock);
  p->st.in_use -= c->size;
  pstream *s = c->stream;
  uint64_t seq = 0;
  if (s->retired) {
    set_stream(p, c, &p->clean);
  } else if (s != &p->clean) {
    seq = ++s->free_seq;
  }
  file_free(p, c, seq);
  pthread_mutex_unlock(&p->lock);
}

ct_status ct__pool_empty_cache(ct__pool *p) {
  pthread_mutex_lock(&p->lock);
  ct_status st = release_cached(p);
  pthread_mutex_unlock(&p->lock);
  return st;
}

void ct__pool_stream_retire(ct__pool *p, uint64_t stream_id) {
  pthread_mutex_lock(&p->lock);
  pstream *s = stream_find(p, stream_id);
  if (s != NULL) {
    if (s->event != NULL) {
      p->b.event_free(p->b.ctx, s->event);
      s->event = NULL;
    }
    clean_upto(p, s, UINT64_MAX);
    s->retired = true;
    stream_drop_if_done(p, s);
  }
  pthread_mutex_unlock(&p->lock);
}

void ct__pool_get_stats(ct__pool *p, ct__pool_stats *out) {
  pthread_mutex_lock(&p->lock);
  *out = p->st;
  out->cached = p->st.reserved - p->st.in_use;
  pthread_mutex_unlock(&p->lock);
}
