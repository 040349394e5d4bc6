/*
 * Description: the rest of the library from C, through hintq.h only: wakers (a blocked
 * thread is woken), groups (a listening socket shared by accepting threads with
 * HQ_DELIVER_ONE, and HQ_DELIVER_ALL), a bounded queue with its overflow scan, statistics,
 * timers (idle timeouts of a threaded echo server), and NULL arguments.
 *
 * Usage: server [--bounded-waits] BACKEND...
 *        runs every case on each backend; prints "ok ..." per case. --bounded-waits: threads
 *        that would block wait 1 ms at a time, for valgrind (3.19), which runs no other
 *        thread while one is blocked in io_uring_enter.
 * Exits 0 when every check passes, 1 at the first failure (with file, line and errno).
 */
#define _GNU_SOURCE
#include <hintq.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"


/* Bounds a wait that must end; reaching it is a failure, not a measurement. */
#define PATIENCE_S 20

static struct timeval *block_tv; /* see --bounded-waits */
static struct timeval bounded = {0, 1000};

/* The timeout for a wait that would block without limit. */
static struct timeval *forever(struct timeval *buf)
{
    if (!block_tv)
        return NULL;
    *buf = *block_tv;
    return buf;
}

static void nonblocking_pipe(int p[2])
{
    CHECK(pipe2(p, O_NONBLOCK) == 0);
}

/* ---- wakers ---------------------------------------------------------------------- */

struct sleeper {
    const char *backend;  /* an hq_queue made by the sleeper on it; NULL: its default queue */
    hq_waker *waker;      /* made by the sleeper for its queue */
    atomic_int ready;     /* the waker exists */
    atomic_int wake_sent; /* the main thread called hq_waker_wake */
    int returned;         /* what the wait returned */
};

static void *sleeper_thread(void *arg)
{
    struct sleeper *s = arg;
    /* Made on this thread: on rtsig a wake-up goes to the thread a queue last waited on
     * (see hq_waker_wake() in hintq.h). */
    hq_queue *q = s->backend ? hq_queue_new(s->backend) : hq_default_queue();
    event_descr_t ev[4];
    struct timeval tv;

    CHECK(q != NULL);
    s->waker = hq_waker_new(q);
    CHECK(s->waker != NULL);
    atomic_store(&s->ready, 1);
    /* Nothing is declared: only the waker can end a wait without a timeout. */
    do
        s->returned = hq_get_next_event(q, 4, ev, forever(&tv));
    while (block_tv && s->returned == 0 && !atomic_load(&s->wake_sent));
    if (s->backend)
        hq_queue_free(q);
    return NULL;
}

static void wake_blocked(const char *backend)
{
    struct sleeper s = {.backend = backend};
    pthread_t t;

    CHECK(pthread_create(&t, NULL, sleeper_thread, &s) == 0);
    while (!atomic_load(&s.ready))
        sched_yield();
    atomic_store(&s.wake_sent, 1);
    CHECK(hq_waker_wake(s.waker) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(s.returned == 0);
    hq_waker_free(s.waker);
}

static void wakers(const char *backend)
{
    hq_queue *q = hq_queue_new(backend);
    event_descr_t ev[4];
    struct timeval zero = {0, 0};
    hq_waker *w;

    CHECK(q != NULL);
    wake_blocked(backend);
    CHECK(setenv("HINTQ_BACKEND", backend, 1) == 0);
    wake_blocked(NULL); /* a new thread's default queue */

    /* A wake-up before the wait ends the next wait (which would otherwise never end). */
    w = hq_waker_new(q);
    CHECK(w != NULL);
    CHECK(hq_waker_wake(w) == 0 && hq_waker_wake(w) == 0);
    CHECK(hq_get_next_event(q, 4, ev, NULL) == 0);
    CHECK(hq_get_next_event(q, 4, ev, &zero) == 0);
    hq_queue_free(q);
    CHECK(hq_waker_wake(w) == 0); /* the queue is gone: nothing happens */
    hq_waker_free(w);
    printf("ok wakers on %s\n", backend);
}

/* ---- groups ---------------------------------------------------------------------- */

/* Waits for an event on fd on q; returns its mask. */
static unsigned event_on(hq_queue *q, int fd)
{
    event_descr_t ev[8];
    struct timeval tv = {PATIENCE_S, 0};
    for (;;) {
        int n = hq_get_next_event(q, 8, ev, &tv);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            if (ev[i].fd == fd)
                return ev[i].mask;
    }
}

/* No event on fd is pending on q now. */
static void none_on(hq_queue *q, int fd)
{
    event_descr_t ev[8];
    struct timeval zero = {0, 0};
    int n = hq_get_next_event(q, 8, ev, &zero);
    CHECK(n >= 0);
    for (int i = 0; i < n; i++)
        CHECK(ev[i].fd != fd);
}

static void delivery(const char *backend)
{
    hq_group *g = hq_group_new(backend);
    hq_queue *a, *b;
    int one[2], all[2], state = -1;

    CHECK(g != NULL);
    a = hq_group_queue(g);
    b = hq_group_queue(g);
    CHECK(a != NULL && b != NULL);
    nonblocking_pipe(one);
    nonblocking_pipe(all);

    /* ALL: each member hears of the readiness. */
    CHECK(hq_group_declare(g, all[0], EVENT_READ, HQ_DELIVER_ALL, &state) == 0 && state == 0);
    CHECK(write(all[1], "x", 1) == 1);
    CHECK(event_on(a, all[0]) & EVENT_READ);
    CHECK(event_on(b, all[0]) & EVENT_READ);
    CHECK(hq_group_declare(g, all[0], 0, HQ_DELIVER_ALL, NULL) == 0);

    /* ONE: the member that got it holds it until its next call; the other hears nothing. */
    CHECK(hq_group_declare(g, one[0], EVENT_READ, HQ_DELIVER_ONE, NULL) == 0);
    CHECK(write(one[1], "x", 1) == 1);
    CHECK(event_on(a, one[0]) & EVENT_READ);
    none_on(b, one[0]);
    none_on(b, one[0]);
    /* Still readable: a's next call re-arms it, and then one of them hears of it again. */
    {
        event_descr_t ev[8];
        struct timeval tv = {PATIENCE_S, 0};
        int seen = 0;
        for (int round = 0; round < 2 * PATIENCE_S * 100 && !seen; round++) {
            struct timeval tick = {0, 10000};
            int n = hq_get_next_event(round % 2 ? b : a, 8, ev, round ? &tick : &tv);
            CHECK(n >= 0);
            for (int i = 0; i < n; i++)
                seen |= ev[i].fd == one[0];
        }
        CHECK(seen);
    }

    FAILS(hq_group_declare(g, one[0], EVENT_READ, 3, NULL), EINVAL);
    FAILS(hq_group_declare(g, -1, EVENT_READ, HQ_DELIVER_ONE, NULL), EBADF);
    FAILS(hq_group_declare(g, one[0], EVENT_HUP, HQ_DELIVER_ONE, NULL), EINVAL);
    CHECK(hq_group_declare(g, one[0], 0, HQ_DELIVER_ONE, NULL) == 0);
    hq_queue_free(a);
    hq_group_free(g); /* b keeps the group alive */
    none_on(b, one[0]);
    hq_queue_free(b);
    CHECK(close(one[0]) == 0 && close(one[1]) == 0 && close(all[0]) == 0 && close(all[1]) == 0);
    printf("ok group delivery on %s\n", backend);
}

/* ---- a threaded echo server: wake-one accept, idle timeouts, wakers to stop ------- */

#define WORKERS 3
#define CLIENTS 12
/* A connection idle this long is closed: long enough that a client writing at once is not
 * taken for idle even on a loaded machine; the test waits it out once per backend
 * (--bounded-waits, under valgrind: 5 s and fewer clients). */
static int idle_ms = 2000, clients = CLIENTS;
#define MAX_FD 1024

struct server {
    hq_group *group;
    int listener;
    atomic_int stop;
    atomic_int accepted;
    atomic_int idle_closed;
    atomic_int ready;
    hq_waker *wakers[WORKERS];
};

struct worker {
    struct server *srv;
    int index;
};

static void *worker_thread(void *arg)
{
    struct worker *w = arg;
    struct server *srv = w->srv;
    hq_queue *q = hq_group_queue(srv->group);
    hq_timers *timers = hq_timers_new();
    int64_t timer_of[MAX_FD] = {0};
    event_descr_t ev[16];
    struct timeval idle = {idle_ms / 1000, (idle_ms % 1000) * 1000};

    CHECK(q != NULL && timers != NULL);
    srv->wakers[w->index] = hq_waker_new(q);
    CHECK(srv->wakers[w->index] != NULL);
    atomic_fetch_add(&srv->ready, 1);
    while (!atomic_load(&srv->stop)) {
        struct timeval tv, *wait = hq_timers_timeout(timers, &tv) == 1 ? &tv : forever(&tv);
        if (wait && block_tv && timercmp(wait, block_tv, >))
            wait = forever(&tv);
        int n = hq_get_next_event(q, 16, ev, wait);
        void *data;
        int64_t id;

        CHECK(n >= 0);
        for (int i = 0; i < n; i++) {
            int fd = ev[i].fd;
            if (fd == srv->listener) {
                int c;
                while ((c = accept4(fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    CHECK(c < MAX_FD);
                    CHECK(hq_declare_interest(q, c, EVENT_READ, NULL) == 0);
                    timer_of[c] = hq_timer_add(timers, &idle, (void *)(intptr_t)c);
                    CHECK(timer_of[c] > 0);
                    atomic_fetch_add(&srv->accepted, 1);
                }
                CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
                continue;
            }
            if (timer_of[fd] == 0)
                continue; /* closed by a timeout earlier in this batch */
            char buf[256];
            ssize_t r = read(fd, buf, sizeof buf);
            if (r > 0) {
                CHECK(write(fd, buf, (size_t)r) == r);
                CHECK(hq_timer_cancel(timers, timer_of[fd], NULL) == 0);
                timer_of[fd] = hq_timer_add(timers, &idle, (void *)(intptr_t)fd);
            } else if (r == 0 || errno != EAGAIN) {
                CHECK(hq_timer_cancel(timers, timer_of[fd], NULL) == 0);
                timer_of[fd] = 0;
                CHECK(close(fd) == 0); /* close() revokes: no hq_close needed */
            }
        }
        while ((id = hq_timers_expire(timers, &data)) > 0) {
            int fd = (int)(intptr_t)data;
            CHECK(timer_of[fd] == id);
            timer_of[fd] = 0;
            CHECK(close(fd) == 0);
            atomic_fetch_add(&srv->idle_closed, 1);
        }
        CHECK(id == 0);
    }
    for (int fd = 0; fd < MAX_FD; fd++)
        if (timer_of[fd])
            CHECK(close(fd) == 0);
    hq_timers_free(timers);
    hq_queue_free(q);
    return NULL;
}

static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval patience = {PATIENCE_S, 0};
    int s = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience) == 0);
    CHECK(connect(s, (struct sockaddr *)&a, sizeof a) == 0);
    return s;
}

/* recv(2) of exactly n bytes (0 at end-of-file), retried on EINTR: a blocking socket call
 * with a timeout is not restarted after an interruption, and io_uring's task work for this
 * thread (a ring it made and freed) interrupts like a signal does. */
static ssize_t recv_all(int s, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(s, buf + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r >= 0);
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static void echo_server(const char *backend)
{
    struct server srv = {0};
    struct worker workers[WORKERS];
    pthread_t threads[WORKERS];
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof a;
    int port, idle_client;
    char c;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(srv.listener >= 0);
    CHECK(bind(srv.listener, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(srv.listener, 64) == 0);
    CHECK(getsockname(srv.listener, (struct sockaddr *)&a, &len) == 0);
    port = ntohs(a.sin_port);

    srv.group = hq_group_new(backend);
    CHECK(srv.group != NULL);
    CHECK(hq_group_declare(srv.group, srv.listener, EVENT_READ, HQ_DELIVER_ONE, NULL) == 0);
    for (int i = 0; i < WORKERS; i++) {
        workers[i] = (struct worker){&srv, i};
        CHECK(pthread_create(&threads[i], NULL, worker_thread, &workers[i]) == 0);
    }
    while (atomic_load(&srv.ready) < WORKERS)
        sched_yield();

    for (int i = 0; i < clients; i++) {
        char line[64], back[64];
        int s = connect_to(port);
        int n = snprintf(line, sizeof line, "client %d\n", i);
        CHECK(write(s, line, (size_t)n) == n);
        CHECK(recv_all(s, back, (size_t)n) == n);
        CHECK(memcmp(line, back, (size_t)n) == 0);
        CHECK(close(s) == 0);
    }
    /* A client that says nothing is closed by its idle timer. */
    idle_client = connect_to(port);
    CHECK(recv_all(idle_client, &c, 1) == 0);
    CHECK(close(idle_client) == 0);

    atomic_store(&srv.stop, 1);
    for (int i = 0; i < WORKERS; i++)
        CHECK(hq_waker_wake(srv.wakers[i]) == 0);
    for (int i = 0; i < WORKERS; i++) {
        CHECK(pthread_join(threads[i], NULL) == 0);
        hq_waker_free(srv.wakers[i]);
    }
    CHECK(atomic_load(&srv.accepted) == clients + 1);
    CHECK(atomic_load(&srv.idle_closed) >= 1);
    hq_group_free(srv.group);
    CHECK(close(srv.listener) == 0);
    printf("ok echo server on %s\n", backend);
}

/* ---- a bounded queue and its counters --------------------------------------------- */

#define PIPES 8

static void bounded_queue(const char *backend)
{
    hq_queue *q = hq_queue_new_bounded(backend, 2);
    int p[PIPES][2], seen[PIPES] = {0}, distinct = 0;
    struct hq_stats st;

    CHECK(q != NULL);
    for (int i = 0; i < PIPES; i++) {
        nonblocking_pipe(p[i]);
        CHECK(write(p[i][1], "x", 1) == 1);
        CHECK(hq_declare_interest(q, p[i][0], EVENT_READ, NULL) == 0);
    }
    /* One event per call: the FIFO (2) overflows, and the scan finds the others. */
    for (int round = 0; round < 10 * PIPES && distinct < PIPES; round++) {
        event_descr_t ev[1];
        struct timeval tv = {PATIENCE_S, 0};
        CHECK(hq_get_next_event(q, 1, ev, &tv) == 1);
        for (int i = 0; i < PIPES; i++)
            if (ev[0].fd == p[i][0] && !seen[i]) {
                CHECK(ev[0].mask & EVENT_READ);
                seen[i] = 1;
                distinct++;
            }
    }
    CHECK(distinct == PIPES);
    CHECK(hq_queue_stats(q, &st) == 0);
    CHECK(st.overflows >= 1);
    CHECK(st.scanned >= 1);
    CHECK(st.delivered >= PIPES);
    for (int i = 0; i < PIPES; i++)
        CHECK(hq_close(q, p[i][0]) == 0 && close(p[i][1]) == 0);
    hq_queue_free(q);
    printf("ok bounded queue on %s\n", backend);
}

/* ---- timers ---------------------------------------------------------------------- */

static void timers(const char *backend)
{
    hq_timers *t = hq_timers_new();
    hq_queue *q = hq_queue_new(backend);
    struct timeval now = {0, 0}, hour = {3600, 0}, short_delay = {0, 30000}, tv = {-1, -1}, neg = {-1, 0};
    int x, y;
    void *data = NULL;
    int64_t a, b, c, d;
    event_descr_t ev[4];

    CHECK(t != NULL && q != NULL);
    CHECK(hq_timers_timeout(t, &tv) == 0 && tv.tv_sec == -1); /* none armed: untouched */
    a = hq_timer_add(t, &now, &x);
    b = hq_timer_add(t, &now, &y);
    c = hq_timer_add(t, &hour, NULL);
    CHECK(a > 0 && b > a && c > b);
    CHECK(hq_timers_count(t) == 3);
    CHECK(hq_timers_timeout(t, &tv) == 1 && tv.tv_sec == 0 && tv.tv_usec == 0); /* one is due */
    CHECK(hq_timers_expire(t, &data) == a && data == &x);
    CHECK(hq_timers_expire(t, &data) == b && data == &y);
    CHECK(hq_timers_expire(t, &data) == 0);
    CHECK(hq_timers_timeout(t, &tv) == 1 && tv.tv_sec > 3500 && tv.tv_sec <= 3600);
    CHECK(hq_timer_cancel(t, c, &data) == 0 && data == NULL);
    FAILS(hq_timer_cancel(t, c, NULL), ENOENT);
    FAILS(hq_timer_cancel(t, a, NULL), ENOENT); /* expired */
    FAILS(hq_timer_add(t, &neg, NULL), EINVAL);
    CHECK(hq_timers_count(t) == 0);

    /* The next deadline as the wait's timeout: the wait ends when the timer is due. */
    d = hq_timer_add(t, &short_delay, &x);
    CHECK(hq_timers_timeout(t, &tv) == 1 && tv.tv_sec == 0 && tv.tv_usec <= 30000);
    CHECK(hq_get_next_event(q, 4, ev, &tv) == 0);
    CHECK(hq_timers_expire(t, &data) == d && data == &x);
    CHECK(hq_timers_count(t) == 0);
    hq_queue_free(q);
    hq_timers_free(t);
    printf("ok timers on %s\n", backend);
}

/* ---- NULL and bad arguments ------------------------------------------------------- */

static void nulls(void)
{
    struct hq_stats st;
    struct timeval tv = {0, 0};
    hq_queue *q = hq_queue_new("poll");
    hq_timers *t = hq_timers_new();

    CHECK(q != NULL && t != NULL);
    FAILS_NULL(hq_queue_new_bounded("poll", 0), EINVAL);
    FAILS_NULL(hq_queue_new_bounded("no-such-backend", 4), EINVAL);
    FAILS(hq_queue_stats(NULL, &st), EINVAL);
    FAILS(hq_queue_stats(q, NULL), EINVAL);
    FAILS_NULL(hq_waker_new(NULL), EINVAL);
    FAILS(hq_waker_wake(NULL), EINVAL);
    hq_waker_free(NULL);
    FAILS_NULL(hq_group_new("no-such-backend"), EINVAL);
    FAILS_NULL(hq_group_queue(NULL), EINVAL);
    FAILS(hq_group_declare(NULL, 0, EVENT_READ, HQ_DELIVER_ONE, NULL), EINVAL);
    hq_group_free(NULL);
    FAILS(hq_timer_add(NULL, &tv, NULL), EINVAL);
    FAILS(hq_timer_add(t, NULL, NULL), EINVAL);
    FAILS(hq_timer_cancel(NULL, 1, NULL), EINVAL);
    FAILS(hq_timers_timeout(NULL, &tv), EINVAL);
    FAILS(hq_timers_timeout(t, NULL), EINVAL);
    FAILS(hq_timers_expire(NULL, NULL), EINVAL);
    FAILS(hq_timers_count(NULL), EINVAL);
    hq_timers_free(NULL);
    /* The default queue is not freed by hq_queue_free. */
    {
        hq_queue *d = hq_default_queue();
        CHECK(d != NULL && hq_default_queue() == d);
        hq_queue_free(d);
        CHECK(hq_queue_stats(d, &st) == 0);
    }
    hq_timers_free(t);
    hq_queue_free(q);
    printf("ok NULL arguments\n");
}

int main(int argc, char **argv)
{
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--bounded-waits") == 0) {
        block_tv = &bounded;
        idle_ms = 5000;
        clients = 3;
        first = 2;
    }
    nulls();
    for (int i = first; i < argc; i++) {
        wakers(argv[i]);
        delivery(argv[i]);
        echo_server(argv[i]);
        bounded_queue(argv[i]);
        timers(argv[i]);
    }
    return 0;
}
