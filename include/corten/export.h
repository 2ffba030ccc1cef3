/* corten/export.h: the visibility macro of the public API.
 *
 * The shared library is built with hidden visibility; only declarations marked CT_API (all of
 * them named ct_*) are exported. Static builds and consumers see CT_API as nothing special. */
#ifndef CORTEN_EXPORT_H
#define CORTEN_EXPORT_H

#if defined(CORTEN_BUILDING) && defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

#endif /* CORTEN_EXPORT_H */
