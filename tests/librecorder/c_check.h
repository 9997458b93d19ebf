/* The C tests' check: on failure, names the condition, the line and memtrail's last error, and
 * returns 1 from main. */
#ifndef MEMTRAIL_TESTS_C_CHECK_H
#define MEMTRAIL_TESTS_C_CHECK_H

#include <stdio.h>

#include "memtrail/memtrail.h"

#define CHECK(condition)                                                                      \
    do {                                                                                      \
        if (!(condition)) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error %d: \"%s\"\n", __FILE__,     \
                    __LINE__, #condition, memtrail_last_error_code(), memtrail_last_error()); \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

#endif
