#ifndef STRATA_STRINGS_H
#define STRATA_STRINGS_H

#include <sqlite3.h>

/// Strata's string operators in SQL (`strata_fold`, `strata_match`) with a C fast path for
/// ASCII text. Whenever the text a result depends on has a byte >= 0x80 (or the operator is
/// MATCHES), the C function calls `fallback`, the Swift implementation, with the same
/// arguments: Unicode answers come from one implementation only.
typedef void (*strata_sql_function)(sqlite3_context *, int, sqlite3_value **);

/// Which fast path a function registered by `strata_register_string_function` takes.
typedef enum StrataStringFunctionKind {
    /// `strata_fold(value, options)`: ASCII lowercasing for `[c]`, identity for `[d]`.
    StrataStringFold = 1,
    /// `strata_match(op, options, lhs, rhs)`: CONTAINS (1), BEGINSWITH (2), ENDSWITH (3) and
    /// LIKE (4) on bytes. `options` bit 0x100 asks to fold `lhs` first (with the low bits).
    StrataStringMatch = 2,
} StrataStringFunctionKind;

/// `options` bit of `strata_match`: `lhs` arrives unfolded; fold it with the low bits first.
#define STRATA_MATCH_FOLD_LHS 0x100

/// Registers `name` (deterministic, UTF-8) with the fast path of `kind`; `fallback` receives
/// every call the fast path does not answer, and reads `box` with `strata_string_function_box`.
/// `destroy(box)` runs when SQLite drops the function (also when registration fails).
int strata_register_string_function(sqlite3 *db, const char *name, int argumentCount, StrataStringFunctionKind kind,
                                    void *box, strata_sql_function fallback, void (*destroy)(void *));

/// The `box` given at registration, inside `fallback`.
void *strata_string_function_box(sqlite3_context *context);

#endif
