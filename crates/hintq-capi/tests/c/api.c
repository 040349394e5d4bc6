/*
 * Description: the contract of hintq.h, call by call: argument checks and errno, statemask,
 * timeouts, revoking, closing, per-thread default queues, and the hq_ API on every backend.
 *
 * Usage: api BACKEND...    checks the default queue (on HINTQ_BACKEND), then the hq_ API on
 *                          each named backend; prints one "ok ..." line per check group.
 *        api --bad-env     expects HINTQ_BACKEND to name no backend: calls that would
 *                          create a queue from it fail with EINVAL.
 * Exits 0 when every check passes, 1 at the first failure (with file, line and errno).
 */
#include <hintq.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

_Static_assert(sizeof(event_descr_t) == 2 * sizeof(int), "event_descr_t is { int; unsigned; }");

/* The two calls of the paper, on either the default queue (q NULL) or q. The hq_ calls must
 * behave as the paper's do, so every check of a queue runs through these. */
static int declare(hq_queue *q, int fd, int mask, int *state)
{
    return q ? hq_declare_interest(q, fd, mask, state) : declare_interest(fd, mask, state);
}

static int next(hq_queue *q, int max, event_descr_t *ev, struct timeval *tv)
{
    return q ? hq_get_next_event(q, max, ev, tv) : get_next_event(max, ev, tv);
}

static int close_fd(hq_queue *q, int fd)
{
    return q ? hq_close(q, fd) : hq_close_default(fd);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nonblocking_pipe(int p[2])
{
    CHECK(pipe(p) == 0);
    CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
}

static void drain(int fd)
{
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

/* Waits up to 2 s for an event on fd; returns its mask. Events of other descriptors are
 * not expected: each check uses fresh descriptors and revokes what it declared. */
static unsigned event_on(hq_queue *q, int fd)
{
    event_descr_t ev[4];
    struct timeval tv = {2, 0};
    int n = next(q, 4, ev, &tv);
    CHECK(n >= 1);
    CHECK(ev[0].fd == fd);
    return ev[0].mask;
}

/* No event arrives within 100 ms. */
static void quiet(hq_queue *q)
{
    event_descr_t ev[4];
    struct timeval tv = {0, 100000};
    CHECK(next(q, 4, ev, &tv) == 0);
}

static void bad_arguments(hq_queue *q)
{
    event_descr_t ev[4];
    struct timeval zero = {0, 0}, neg_sec = {-1, 0}, neg_usec = {0, -1};
    int p[2], state = -1;

    nonblocking_pipe(p);
    FAILS(next(q, 4, NULL, &zero), EINVAL);
    FAILS(next(q, 0, ev, &zero), EINVAL);
    FAILS(next(q, -1, ev, &zero), EINVAL);
    FAILS(next(q, 4, ev, &neg_sec), EINVAL);
    FAILS(next(q, 4, ev, &neg_usec), EINVAL);
    FAILS(declare(q, p[0], 0x100, &state), EINVAL);
    FAILS(declare(q, p[0], -1, &state), EINVAL);
    FAILS(declare(q, p[0], EVENT_READ | EVENT_HUP, &state), EINVAL); /* a state bit only */
    CHECK(state == -1);                                              /* untouched on failure */
    FAILS(declare(q, -1, EVENT_READ, &state), EBADF);
    FAILS(close_fd(q, -1), EBADF);

    /* A descriptor that is not open. */
    CHECK(close(p[1]) == 0);
    FAILS(declare(q, p[1], EVENT_READ, &state), EBADF);
    CHECK(close(p[0]) == 0);
}

static void statemask(hq_queue *q)
{
    int p[2], state = -1;

    nonblocking_pipe(p);
    CHECK(declare(q, p[0], EVENT_READ, &state) == 0);
    CHECK((state & EVENT_READ) == 0);
    CHECK(declare(q, p[0], 0, &state) == 0 && state == 0); /* a revoke stores 0 */

    /* Data queued before declare_interest is reported in the statemask (the paper's accept
     * race), and NULL is a valid statemask. */
    CHECK(write(p[1], "x", 1) == 1);
    CHECK(declare(q, p[0], EVENT_READ, NULL) == 0);
    CHECK(declare(q, p[0], EVENT_READ, &state) == 0);
    CHECK(state & EVENT_READ);
    CHECK(declare(q, p[1], EVENT_WRITE, &state) == 0);
    CHECK(state & EVENT_WRITE);
    CHECK(declare(q, p[1], 0, NULL) == 0);

    /* Drain the duplicate events the re-declarations may have caused, then revoke. */
    drain(p[0]);
    CHECK(close_fd(q, p[0]) == 0);
    CHECK(close(p[1]) == 0);
    quiet(q);
}

static void timeouts(hq_queue *q)
{
    event_descr_t ev[4];
    struct timeval zero = {0, 0}, short_wait = {0, 200000}, long_usec = {0, 1100000};
    int p[2];
    double t;

    nonblocking_pipe(p);
    CHECK(declare(q, p[0], EVENT_READ, NULL) == 0);

    t = now();
    CHECK(next(q, 4, ev, &zero) == 0);
    CHECK(now() - t < 0.1);

    t = now();
    CHECK(next(q, 4, ev, &short_wait) == 0);
    t = now() - t;
    CHECK(t >= 0.19 && t < 2.0);
    CHECK(short_wait.tv_sec == 0 && short_wait.tv_usec == 200000); /* not modified */

    /* tv_usec above 999999 counts as it says; an event ends the wait early. */
    CHECK(write(p[1], "x", 1) == 1);
    t = now();
    CHECK(next(q, 4, ev, &long_usec) == 1 && ev[0].fd == p[0] && (ev[0].mask & EVENT_READ));
    CHECK(now() - t < 1.0);

    drain(p[0]);
    CHECK(close_fd(q, p[0]) == 0);
    CHECK(close(p[1]) == 0);
}

static void events_and_revoke(hq_queue *q)
{
    int p[2], state;

    nonblocking_pipe(p);
    CHECK(declare(q, p[0], EVENT_READ, &state) == 0 && (state & EVENT_READ) == 0);
    quiet(q);

    CHECK(write(p[1], "ab", 2) == 2);
    CHECK(event_on(q, p[0]) & EVENT_READ);
    drain(p[0]);
    /* State-based backends may repeat the event once more before seeing the drain. */
    {
        event_descr_t ev[4];
        struct timeval zero = {0, 0};
        CHECK(next(q, 4, ev, &zero) >= 0);
    }

    /* Revoked: data that arrives afterwards gives no event. */
    CHECK(declare(q, p[0], 0, NULL) == 0);
    CHECK(write(p[1], "c", 1) == 1);
    quiet(q);

    /* Declared again: the pending data is in the statemask and an event may follow. */
    CHECK(declare(q, p[0], EVENT_READ, &state) == 0 && (state & EVENT_READ));
    drain(p[0]);

    /* Hang-up: the writer goes away. */
    CHECK(close(p[1]) == 0);
    CHECK(event_on(q, p[0]) & (EVENT_HUP | EVENT_READ));

    /* Closed through the queue: revoked, then closed. */
    CHECK(close_fd(q, p[0]) == 0);
    CHECK(fcntl(p[0], F_GETFD) == -1 && errno == EBADF);
    quiet(q);
}

static void check_queue(hq_queue *q, const char *what)
{
    bad_arguments(q);
    statemask(q);
    timeouts(q);
    events_and_revoke(q);
    printf("ok %s\n", what);
}

/* A second thread has its own default queue: it sees none of the main thread's events. */
static void *other_thread(void *arg)
{
    int fd = *(int *)arg;
    event_descr_t ev[4];
    struct timeval zero = {0, 0};
    int n = get_next_event(4, ev, &zero);
    int state;

    CHECK(n == 0);
    /* And the same descriptor can be declared on it independently. */
    CHECK(declare_interest(fd, EVENT_READ, &state) == 0 && (state & EVENT_READ));
    CHECK(get_next_event(4, ev, &zero) >= 0);
    CHECK(declare_interest(fd, 0, NULL) == 0);
    return NULL;
}

static void per_thread_queues(void)
{
    int p[2];
    pthread_t t;

    nonblocking_pipe(p);
    CHECK(write(p[1], "x", 1) == 1);
    CHECK(declare_interest(p[0], EVENT_READ, NULL) == 0);
    CHECK(pthread_create(&t, NULL, other_thread, &p[0]) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(event_on(NULL, p[0]) & EVENT_READ); /* still pending here */
    drain(p[0]);
    CHECK(hq_close_default(p[0]) == 0);
    CHECK(close(p[1]) == 0);
    printf("ok per-thread default queues\n");
}

static void hq_lifecycle(const char *name)
{
    hq_queue *q;
    const char *actual;
    char what[128];

    errno = 0;
    q = hq_queue_new(name);
    CHECK(q != NULL);
    actual = hq_backend_name(q);
    CHECK(actual != NULL);
    /* io_uring refused by the kernel falls back to epoll. */
    CHECK(strcmp(actual, name) == 0 || (strcmp(name, "uring") == 0 && strcmp(actual, "epoll") == 0));
    snprintf(what, sizeof what, "hq_queue %s (runs on %s)", name, actual);
    check_queue(q, what);
    hq_queue_free(q);
}

static void hq_null_and_unknown(void)
{
    event_descr_t ev[1];
    struct timeval zero = {0, 0};
    hq_queue *q;

    errno = 0;
    CHECK(hq_queue_new("no-such-backend") == NULL && errno == EINVAL);
    errno = 0;
    CHECK(hq_queue_new("") == NULL && errno == EINVAL);
    FAILS(hq_declare_interest(NULL, 0, EVENT_READ, NULL), EINVAL);
    FAILS(hq_get_next_event(NULL, 1, ev, &zero), EINVAL);
    FAILS(hq_close(NULL, 0), EINVAL);
    CHECK(fcntl(0, F_GETFD) >= 0); /* hq_close(NULL, fd) leaves fd open */
    errno = 0;
    CHECK(hq_backend_name(NULL) == NULL && errno == EINVAL);
    hq_queue_free(NULL);

    q = hq_queue_new(NULL); /* from HINTQ_BACKEND */
    CHECK(q != NULL && hq_backend_name(q) != NULL);
    hq_queue_free(q);
    printf("ok NULL queue, unknown backend\n");
}

static int bad_env(void)
{
    event_descr_t ev[1];
    struct timeval zero = {0, 0};
    int p[2];

    nonblocking_pipe(p);
    FAILS(declare_interest(p[0], EVENT_READ, NULL), EINVAL);
    FAILS(get_next_event(1, ev, &zero), EINVAL);
    errno = 0;
    CHECK(hq_queue_new(NULL) == NULL && errno == EINVAL);
    /* Named backends do not depend on the environment. */
    hq_queue_free(hq_queue_new("poll"));
    /* With no default queue, hq_close_default still closes. */
    CHECK(hq_close_default(p[0]) == 0 && close(p[1]) == 0);
    CHECK(fcntl(p[0], F_GETFD) == -1 && errno == EBADF);
    FAILS(hq_close_default(p[0]), EBADF);
    printf("ok bad HINTQ_BACKEND\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--bad-env") == 0)
        return bad_env();
    check_queue(NULL, "default queue");
    per_thread_queues();
    hq_null_and_unknown();
    for (int i = 1; i < argc; i++)
        hq_lifecycle(argv[i]);
    return 0;
}
