// The ASCII fast path of Strata's string operators (see strata_strings.h). It must give the
// answers of StringMatching.swift exactly; it only answers where that is plain byte work:
// - folding ASCII text: `[c]` is ASCII lowercasing (Swift's lowercased() of ASCII), `[d]` and
//   NFC leave ASCII unchanged;
// - CONTAINS / BEGINSWITH / ENDSWITH compare UTF-8 bytes in Swift too: with an ASCII (folded)
//   left side, the same byte comparison here;
// - LIKE compares Unicode scalars in Swift: on an ASCII text, one byte is one scalar, and a
//   pattern byte >= 0x80 can match no text byte, as its scalar can match no ASCII scalar.
// Everything else (a non-ASCII left side, MATCHES) goes to the Swift fallback.

#include "strata_strings.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct StrataStringFunction {
    void *box;
    strata_sql_function fallback;
    void (*destroy)(void *);
    StrataStringFunctionKind kind;
} StrataStringFunction;

static int isASCII(const unsigned char *s, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        if (word & 0x8080808080808080ULL) return 0;
    }
    for (; i < n; i++) {
        if (s[i] & 0x80) return 0;
    }
    return 1;
}

static inline unsigned char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c; }

/// Text byte `i`, folded when `fold` (ASCII only reaches here).
#define AT(s, i, fold) ((fold) ? lower((s)[i]) : (s)[i])

static int beginsWith(const unsigned char *t, int tn, const unsigned char *p, int pn, int fold) {
    if (pn > tn) return 0;
    for (int i = 0; i < pn; i++) {
        if (AT(t, i, fold) != p[i]) return 0;
    }
    return 1;
}

static int endsWith(const unsigned char *t, int tn, const unsigned char *p, int pn, int fold) {
    if (pn > tn) return 0;
    return beginsWith(t + (tn - pn), pn, p, pn, fold);
}

static int contains(const unsigned char *t, int tn, const unsigned char *p, int pn, int fold) {
    if (pn == 0) return 1;
    for (int start = 0; start + pn <= tn; start++) {
        if (AT(t, start, fold) == p[0] && beginsWith(t + start, tn - start, p, pn, fold)) return 1;
    }
    return 0;
}

/// `*` any run, `?` one byte (one scalar of an ASCII text); backtracking on the last `*`, as
/// StringMatching.like.
static int like(const unsigned char *t, int tn, const unsigned char *p, int pn, int fold) {
    int ti = 0, pi = 0, starP = -1, starT = 0;
    while (ti < tn) {
        if (pi < pn && (p[pi] == '?' || (p[pi] != '*' && p[pi] == AT(t, ti, fold)))) {
            ti++;
            pi++;
        } else if (pi < pn && p[pi] == '*') {
            starP = pi;
            starT = ti;
            pi++;
        } else if (starP >= 0) {
            pi = starP + 1;
            starT++;
            ti = starT;
        } else {
            return 0;
        }
    }
    while (pi < pn && p[pi] == '*') pi++;
    return pi == pn;
}

static void foldFunction(StrataStringFunction *function, sqlite3_context *context, int argc, sqlite3_value **argv) {
    sqlite3_value *value = argv[0];
    if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || sqlite3_value_type(value) != SQLITE_TEXT) {
        sqlite3_result_value(context, value);
        return;
    }
    sqlite3_int64 options = sqlite3_value_int64(argv[1]);
    const unsigned char *text = sqlite3_value_text(value);
    int n = sqlite3_value_bytes(value);
    if (options == 0 || text == NULL) {
        sqlite3_result_value(context, value);
        return;
    }
    if (!isASCII(text, n)) {
        function->fallback(context, argc, argv);
        return;
    }
    int upper = -1;
    if (options & 1) {
        for (int i = 0; i < n; i++) {
            if (text[i] >= 'A' && text[i] <= 'Z') { upper = i; break; }
        }
    }
    if (upper < 0) {
        sqlite3_result_value(context, value);
        return;
    }
    unsigned char *folded = sqlite3_malloc(n > 0 ? n : 1);
    if (folded == NULL) {
        sqlite3_result_error_nomem(context);
        return;
    }
    memcpy(folded, text, (size_t)upper);
    for (int i = upper; i < n; i++) folded[i] = lower(text[i]);
    sqlite3_result_text(context, (const char *)folded, n, sqlite3_free);
}

static void matchFunction(StrataStringFunction *function, sqlite3_context *context, int argc, sqlite3_value **argv) {
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER || sqlite3_value_type(argv[1]) != SQLITE_INTEGER) {
        sqlite3_result_int(context, 0);
        return;
    }
    sqlite3_int64 op = sqlite3_value_int64(argv[0]);
    sqlite3_int64 options = sqlite3_value_int64(argv[1]);
    if (op < 1 || op > 4) {
        // MATCHES (an ICU expression), or a code the Swift side knows better.
        function->fallback(context, argc, argv);
        return;
    }
    if (sqlite3_value_type(argv[2]) != SQLITE_TEXT || sqlite3_value_type(argv[3]) != SQLITE_TEXT) {
        // Folding keeps a value that is not text as it is: not text, no match.
        sqlite3_result_int(context, 0);
        return;
    }
    const unsigned char *t = sqlite3_value_text(argv[2]);
    int tn = sqlite3_value_bytes(argv[2]);
    const unsigned char *p = sqlite3_value_text(argv[3]);
    int pn = sqlite3_value_bytes(argv[3]);
    if (t == NULL || p == NULL || !isASCII(t, tn)) {
        function->fallback(context, argc, argv);
        return;
    }
    int fold = (options & STRATA_MATCH_FOLD_LHS) && (options & 1);
    int result = 0;
    switch (op) {
    case 1: result = contains(t, tn, p, pn, fold); break;
    case 2: result = beginsWith(t, tn, p, pn, fold); break;
    case 3: result = endsWith(t, tn, p, pn, fold); break;
    case 4: result = like(t, tn, p, pn, fold); break;
    }
    sqlite3_result_int(context, result);
}

static void dispatch(sqlite3_context *context, int argc, sqlite3_value **argv) {
    StrataStringFunction *function = sqlite3_user_data(context);
    if (function->kind == StrataStringFold && argc == 2) {
        foldFunction(function, context, argc, argv);
    } else if (function->kind == StrataStringMatch && argc == 4) {
        matchFunction(function, context, argc, argv);
    } else {
        function->fallback(context, argc, argv);
    }
}

static void destroyFunction(void *pointer) {
    StrataStringFunction *function = pointer;
    if (function->destroy) function->destroy(function->box);
    free(function);
}

int strata_register_string_function(sqlite3 *db, const char *name, int argumentCount, StrataStringFunctionKind kind,
                                    void *box, strata_sql_function fallback, void (*destroy)(void *)) {
    StrataStringFunction *function = malloc(sizeof *function);
    if (function == NULL) {
        if (destroy) destroy(box);
        return SQLITE_NOMEM;
    }
    function->box = box;
    function->fallback = fallback;
    function->destroy = destroy;
    function->kind = kind;
    // sqlite3_create_function_v2 calls the destructor itself when it fails.
    return sqlite3_create_function_v2(db, name, argumentCount, SQLITE_UTF8 | SQLITE_DETERMINISTIC, function,
                                      dispatch, NULL, NULL, destroyFunction);
}

void *strata_string_function_box(sqlite3_context *context) {
    StrataStringFunction *function = sqlite3_user_data(context);
    return function->box;
}
