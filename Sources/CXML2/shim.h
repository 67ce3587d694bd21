#ifndef VITALS_CXML2_SHIM_H
#define VITALS_CXML2_SHIM_H
/* libxml2's push parser and SAX2 callbacks: the streaming reader of Apple Health exports. */
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#endif
