/*
 * Description: closing a declared descriptor without revoking it, as the paper allows
 * ("closing a descriptor implicitly removes any declared interest"): the peer sees
 * end-of-file, and a new descriptor that reuses the number gets no event until declared,
 * then only its own. On an hq_queue, on the default queue, across threads (the closing
 * thread is not the one blocked on the queue) and on a group.
 *
 * Usage: close [--bounded-waits] BACKEND...
 *        runs every case on each backend; prints "ok ..." per case. --bounded-waits: the
 *        thread that blocks waits 10 ms at a time instead of without limit, for valgrind
 *        (3.19), which runs no other thread while one is blocked in io_uring_enter.
 * Exits 0 when every check passes, 1 at the first failure (with file, line and errno).
 */
#define _GNU_SOURCE
#include <hintq.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

/* NULL, or the timeout of each wait of a thread that would block without one. */
static struct timeval *block_tv;
static struct timeval bounded = {0, 10000};

/* Bounds a wait that must end; reaching it is a failure, not a measurement. */
#define PATIENCE_MS 20000

static int declare(hq_queue *q, int fd, int mask)
{
    return q ? hq_declare_interest(q, fd, mask, NULL) : declare_interest(fd, mask, NULL);
}

static int next(hq_queue *q, int max, event_descr_t *ev, struct timeval *tv)
{
    return q ? hq_get_next_event(q, max, ev, tv) : get_next_event(max, ev, tv);
}

static void pair(int sv[2])
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
}

/* A socket pair whose first end has the number `num` (free when called). */
static void pair_at(int sv[2], int num)
{
    pair(sv);
    if (sv[1] == num) { /* the two ends are alike */
        sv[1] = sv[0];
        sv[0] = num;
    }
    if (sv[0] != num) {
        CHECK(dup3(sv[0], num, O_CLOEXEC) == num);
        CHECK(close(sv[0]) == 0);
        sv[0] = num;
    }
}

/* The peer of a closed socket reads end-of-file, or ECONNRESET when the closed end had
 * unread data (a leaked registration keeps the socket open: the read would fail with
 * EAGAIN, after the wait below gave up). */
static void peer_sees_eof(int peer)
{
    struct pollfd p = {peer, POLLIN, 0};
    char c;
    ssize_t r;
    CHECK(poll(&p, 1, PATIENCE_MS) == 1);
    errno = 0;
    r = read(peer, &c, 1);
    CHECK(r == 0 || (r == -1 && errno == ECONNRESET));
}

/* Events pending now (zero timeout, a few calls): none is for `num`. */
static void no_event_for(hq_queue *q, int num)
{
    event_descr_t ev[8];
    struct timeval zero = {0, 0};
    for (int round = 0; round < 3; round++) {
        int n = next(q, 8, ev, &zero);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++)
            CHECK(ev[i].fd != num);
    }
}

/* Waits for an event on fd (others are skipped) and returns its mask. */
static unsigned event_on(hq_queue *q, int fd)
{
    event_descr_t ev[8];
    struct timeval tv = {PATIENCE_MS / 1000, 0};
    for (;;) {
        int n = next(q, 8, ev, &tv);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            if (ev[i].fd == fd)
                return ev[i].mask;
    }
}

/* One thread: declare, let an event of the old descriptor be collected and stay pending,
 * close without revoking, reuse the number. */
static void same_thread(hq_queue *q)
{
    int old[2], other[2], fresh[2], num;
    event_descr_t ev[1];
    struct timeval tv = {PATIENCE_MS / 1000, 0};

    pair(other);
    pair(old);
    num = old[0];
    CHECK(declare(q, other[0], EVENT_READ) == 0);
    CHECK(declare(q, num, EVENT_READ) == 0);
    /* Both readable; the old one also hung up. One event is taken, the other may stay
     * collected in the queue. */
    CHECK(write(other[1], "o", 1) == 1);
    CHECK(write(old[1], "x", 1) == 1);
    CHECK(shutdown(old[1], SHUT_WR) == 0);
    CHECK(next(q, 1, ev, &tv) == 1);

    CHECK(close(num) == 0); /* no revoke */
    peer_sees_eof(old[1]);
    CHECK(close(old[1]) == 0);

    /* The number again, readable but not declared: no event. */
    pair_at(fresh, num);
    CHECK(write(fresh[1], "y", 1) == 1);
    no_event_for(q, num);

    /* Declared: its own state only (readable, no hang-up of the old socket). */
    CHECK(declare(q, num, EVENT_READ) == 0);
    {
        unsigned mask = event_on(q, num);
        CHECK(mask & EVENT_READ);
        CHECK(!(mask & EVENT_HUP));
    }
    CHECK(close(num) == 0 && close(fresh[1]) == 0);
    CHECK(close(other[0]) == 0 && close(other[1]) == 0);
    no_event_for(q, num);
}

/* Default queue on a thread of its own (HINTQ_BACKEND names the backend). */
static void *default_queue_thread(void *arg)
{
    (void)arg;
    same_thread(NULL);
    return NULL;
}

/* Across threads: a thread blocks on its default queue with sock[0] declared; the main
 * thread closes sock[0] and reuses the number. */
struct blocked {
    int num;
    hq_waker *waker;
    volatile int stop;
    int events_for_num; /* events for num seen after the close */
    volatile int closed;
    pthread_mutex_t lock;
    pthread_cond_t ready;
};

static void *blocked_thread(void *arg)
{
    struct blocked *b = arg;
    event_descr_t ev[8];

    CHECK(declare_interest(b->num, EVENT_READ, NULL) == 0);
    CHECK(pthread_mutex_lock(&b->lock) == 0);
    b->waker = hq_waker_new(hq_default_queue());
    CHECK(b->waker != NULL);
    CHECK(pthread_cond_signal(&b->ready) == 0);
    CHECK(pthread_mutex_unlock(&b->lock) == 0);
    while (!b->stop) {
        /* No timeout: only events and the waker end it (but see --bounded-waits). */
        struct timeval tv, *wait = block_tv ? (tv = *block_tv, &tv) : NULL;
        int n = get_next_event(8, ev, wait);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++)
            if (ev[i].fd == b->num && b->closed)
                b->events_for_num++;
    }
    return NULL;
}

static void across_threads(void)
{
    struct blocked b = {.stop = 0, .events_for_num = 0, .closed = 0};
    int sock[2], fresh[2];
    pthread_t t;

    pair(sock);
    b.num = sock[0];
    CHECK(pthread_mutex_init(&b.lock, NULL) == 0 && pthread_cond_init(&b.ready, NULL) == 0);
    CHECK(pthread_mutex_lock(&b.lock) == 0);
    CHECK(pthread_create(&t, NULL, blocked_thread, &b) == 0);
    while (b.waker == NULL)
        CHECK(pthread_cond_wait(&b.ready, &b.lock) == 0);
    CHECK(pthread_mutex_unlock(&b.lock) == 0);

    b.closed = 1;
    CHECK(close(sock[0]) == 0); /* the blocked thread's queue has it declared */
    peer_sees_eof(sock[1]);
    CHECK(close(sock[1]) == 0);

    pair_at(fresh, b.num);
    CHECK(write(fresh[1], "y", 1) == 1); /* readable, never declared on that thread */

    /* Stop the thread (after its wait has seen whatever it was going to see). */
    b.stop = 1;
    CHECK(hq_waker_wake(b.waker) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    hq_waker_free(b.waker); /* outlives the queue: waking it now would do nothing */
    CHECK(b.events_for_num == 0);
    CHECK(close(fresh[0]) == 0 && close(fresh[1]) == 0);
    CHECK(pthread_mutex_destroy(&b.lock) == 0 && pthread_cond_destroy(&b.ready) == 0);
}

/* A group declaration is revoked by close too. */
static void group(const char *backend)
{
    hq_group *g = hq_group_new(backend);
    hq_queue *member;
    int sock[2], fresh[2], num;

    CHECK(g != NULL);
    member = hq_group_queue(g);
    CHECK(member != NULL);
    pair(sock);
    num = sock[0];
    CHECK(hq_group_declare(g, num, EVENT_READ, HQ_DELIVER_ALL, NULL) == 0);
    CHECK(write(sock[1], "x", 1) == 1);
    CHECK(event_on(member, num) & EVENT_READ); /* collected; the re-arm waits for the next call */
    CHECK(close(num) == 0);
    peer_sees_eof(sock[1]);
    CHECK(close(sock[1]) == 0);
    pair_at(fresh, num);
    CHECK(write(fresh[1], "y", 1) == 1);
    no_event_for(member, num);
    /* Declared on the group again: its own events. */
    CHECK(hq_group_declare(g, num, EVENT_READ, HQ_DELIVER_ALL, NULL) == 0);
    CHECK(!(event_on(member, num) & EVENT_HUP));
    CHECK(close(num) == 0 && close(fresh[1]) == 0);
    hq_queue_free(member);
    hq_group_free(g);
}

/* close() of a descriptor no queue declared, and of one that is not open, is close(2). */
static void plain_close(void)
{
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);
    errno = 0;
    CHECK(close(p[0]) == -1 && errno == EBADF);
    errno = 0;
    CHECK(close(-1) == -1 && errno == EBADF);
}

int main(int argc, char **argv)
{
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--bounded-waits") == 0) {
        block_tv = &bounded;
        first = 2;
    }
    plain_close();
    for (int i = first; i < argc; i++) {
        hq_queue *q = hq_queue_new(argv[i]);
        pthread_t t;

        CHECK(q != NULL);
        same_thread(q);
        hq_queue_free(q);

        CHECK(setenv("HINTQ_BACKEND", argv[i], 1) == 0);
        CHECK(pthread_create(&t, NULL, default_queue_thread, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        across_threads();
        group(argv[i]);
        printf("ok close revokes on %s\n", argv[i]);
    }
    return 0;
}
