#ifndef VITALS_CXML2_SHIM_H
#define VITALS_CXML2_SHIM_H
/* libxml2's push parser and SAX2 callbacks: the streaming reader of Apple Health exports. */
#include <libxml/xmlversion.h>
/*
 * Debian's libxml2 is built with ICU, so its encoding header includes the system's
 * <unicode/ucnv.h>. Swift's Foundation carries its own ICU module with a different
 * UErrorCode, and a module that sees both fails to build. We never touch libxml2's ICU
 * converters (the structure that holds them is only ever used through pointers), so the
 * ICU part of the headers is left out.
 */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#endif
