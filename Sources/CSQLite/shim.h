#ifndef VITALS_CSQLITE_SHIM_H
#define VITALS_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import. */
static inline int csqlite_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}
static inline int csqlite_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *blob, int length) {
    return sqlite3_bind_blob(stmt, index, blob, length, SQLITE_TRANSIENT);
}
#endif
