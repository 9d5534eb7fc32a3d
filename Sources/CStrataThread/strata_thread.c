// CStrataThread is a header of static inline functions (include/strata_thread.h); SwiftPM needs
// one source file in a C target.
#include "strata_thread.h"
