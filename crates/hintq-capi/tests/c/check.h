/*
 * What the C tests share: CHECK(cond) ends the program with file, line, the condition and
 * errno when cond is false; FAILS/FAILS_NULL check that a call fails with -1 (or NULL) and
 * the given errno. Each test prints "ok ..." per passing case and exits 0 at the end.
 */
#ifndef HINTQ_TEST_CHECK_H
#define HINTQ_TEST_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; errno %d (%s)\n", __FILE__, __LINE__, \
                    #cond, errno, strerror(errno));                                        \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* The call fails with -1 (or NULL) and this errno. */
#define FAILS(call, err) CHECK((errno = 0, (call) == -1) && errno == (err))
#define FAILS_NULL(call, err) CHECK((errno = 0, (call) == NULL) && errno == (err))

#endif
