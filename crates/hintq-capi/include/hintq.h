/*
 * hintq.h - explicit event delivery for C programs.
 *
 * The interface of Banga, Mogul & Druschel, "A scalable and explicit event delivery
 * mechanism for UNIX" (USENIX 1999), section 4, verbatim, implemented in user space over
 * io_uring, epoll, poll or select by the hintq library. Link with -lhintq, or use
 * `pkg-config --cflags --libs hintq`.
 *
 * Two ways to use it:
 *
 *   - The paper's calls, declare_interest() and get_next_event(), act on the calling
 *     thread's default queue (the paper's per-thread HINTS queue). It is created on the
 *     thread's first call, on the backend named by the HINTQ_BACKEND environment variable
 *     (or the recommended one when it is unset), and destroyed when the thread exits.
 *
 *   - The hq_ calls act on an explicit queue made with hq_queue_new(), for a program that
 *     wants a chosen backend or several queues in one thread.
 *
 * Threads: the default queue belongs to its thread; another thread has its own. An
 * hq_queue may move between threads but must be used by one thread at a time. No call is
 * async-signal-safe.
 *
 * Semantics (the same for every backend):
 *   - An event is a hint that something arrived (data, buffer space, a connection, a
 *     hang-up). Descriptors must be non-blocking: EAGAIN after an event means "not ready
 *     after all". Duplicate events are possible; lost readiness is not.
 *   - At most one event is pending per descriptor: N arrivals between two calls of
 *     get_next_event() give one event.
 *   - State-based backends (epoll, poll, select) repeat an event while the descriptor stays
 *     ready, so declare EVENT_WRITE only while there is something to write.
 *   - Closing a descriptor revokes interest in it, as the paper says, on every queue and
 *     group of the process that declared it (see close() below): its file is let go of at
 *     once (the peer of a socket sees end-of-file), and a new descriptor that reuses the
 *     number gets no event until it is declared, then only its own. Once a revoke returns,
 *     no event of that registration is delivered, even if the number is reused and
 *     declared again at once.
 *
 * Beyond the paper: process-wide interest shared by several threads' queues (hq_group_*),
 * waking a blocked thread (hq_waker_*), a bounded queue (hq_queue_new_bounded), a queue's
 * counters (hq_queue_stats) and timers whose next deadline is the timeout of the next wait
 * (hq_timers_*).
 *
 * Errors follow UNIX conventions: a failing call returns -1 (or NULL) and sets errno; a
 * NULL handle is EINVAL. No call lets a panic of the library reach the caller.
 * After EIO (an internal error of the library, which never crashes the caller) the queue's
 * state is unknown: free it (for the default queue, end the thread).
 */
#ifndef HINTQ_H
#define HINTQ_H

#include <stddef.h>   /* size_t */
#include <stdint.h>   /* int64_t, uint64_t */
#include <sys/time.h> /* struct timeval */

#ifdef __cplusplus
extern "C" {
#endif

/* Interest and state bits: the paper's values. */
#define EVENT_READ 0x1   /* readable: data, a connection to accept, or end of file */
#define EVENT_WRITE 0x2  /* writable: buffer space is available */
#define EVENT_EXCEPT 0x4 /* exceptional condition: out-of-band data */
/* State bits only: reported whatever the interest, never accepted in an interestmask. */
#define EVENT_HUP 0x8  /* the peer hung up */
#define EVENT_ERR 0x10 /* an error is pending on the descriptor */

/* One dequeued event: the descriptor and its current state (EVENT_* bits). Tagged so that
 * the paper's `struct event_descr_t` (Figure 3) works as well as the typedef. */
typedef struct event_descr_t {
    int fd;
    unsigned mask;
} event_descr_t;

/*
 * declare_interest - set the calling thread's interest in fd.
 *
 * interestmask is an OR of EVENT_READ, EVENT_WRITE and EVENT_EXCEPT; it replaces any
 * interest declared before. 0 revokes: no event of the old registration is delivered after
 * the call returns. If statemask is not NULL, *statemask receives the state of fd (EVENT_*
 * bits, not limited to the interest) read after interest took effect, so data that arrived
 * before the call (say, between accept() and this call) is either in *statemask or
 * delivered by a later event. A revoke stores 0. If statemask is NULL, readiness that
 * predates the call is delivered as an event instead (and the call saves the state query:
 * on epoll it is one epoll_ctl). With a NULL statemask, a descriptor that is not open may
 * be reported as one EVENT_ERR event by the next get_next_event() instead of EBADF here
 * (on the uring, poll, select, select-classic and gooch backends, which learn of it only when they wait).
 *
 * Returns 0, or -1 with errno:
 *   EINVAL  interestmask has bits other than EVENT_READ|EVENT_WRITE|EVENT_EXCEPT, or
 *           HINTQ_BACKEND names an unknown backend (when this call creates the default
 *           queue);
 *   EBADF   fd is negative or not open;
 *   EBUSY   called from a signal handler that interrupted a call on the same queue;
 *   other   errors of the backend (ENOMEM, ENOSPC, EMFILE) as the kernel gave them;
 *   EIO     an internal error of the library.
 */
int declare_interest(int fd, int interestmask, int *statemask);

/*
 * get_next_event - dequeue events of the calling thread.
 *
 * Dequeues, in FIFO order of arrival, up to array_max pending events into ev_array and
 * returns how many. Returns at once if any event is pending (it does not wait to fill the
 * array); otherwise blocks until one arrives or the timeout passes, then returns 0.
 * timeout NULL blocks without limit; {0, 0} never blocks; tv_usec may exceed 999999, and a
 * tv_sec above 2^32 counts as no limit. *timeout is not modified. A signal does not end the
 * wait early (as with SA_RESTART). At most 4096 events are returned per call.
 *
 * Each ev_array[i].mask holds the descriptor's state when the event was collected: the
 * declared interest bits that are ready, plus EVENT_HUP and EVENT_ERR.
 *
 * Returns the number of events, or -1 with errno:
 *   EINVAL  ev_array is NULL, array_max <= 0, a timeout field is negative, or
 *           HINTQ_BACKEND names an unknown backend (when this call creates the queue);
 *   EBUSY, EIO and backend errors as for declare_interest().
 */
int get_next_event(int array_max, event_descr_t *ev_array, struct timeval *timeout);

/*
 * hq_close_default - revoke the calling thread's interest in fd, then close(fd).
 *
 * The descriptor is closed in every case (only closed when the thread has no default queue
 * yet). Returns 0, or -1 with errno from the revoke (EBADF for a negative fd) or from
 * close(2).
 */
int hq_close_default(int fd);

/* An explicit queue. Opaque. */
typedef struct hq_queue hq_queue;

/*
 * hq_queue_new - create a queue on the backend called backend_name.
 *
 * Names: "uring", "epoll", "epoll-et", "epoll-oneshot", "poll", "select",
 * "select-classic", "rtsig", "gooch" (the list that
 * `hintq backends` prints, with what this kernel supports). NULL means the backend named
 * by HINTQ_BACKEND, or the recommended one. A backend the kernel refuses (io_uring
 * disabled) falls back to epoll with one warning on stderr; hq_backend_name() tells which
 * backend is in use.
 *
 * Returns the queue, or NULL with errno: EINVAL for an unknown name; the backend's set-up
 * error (EMFILE, ENOMEM) otherwise.
 */
hq_queue *hq_queue_new(const char *backend_name);

/*
 * hq_declare_interest - declare_interest() on queue q.
 *
 * Errors as for declare_interest(), plus EINVAL when q is NULL.
 */
int hq_declare_interest(hq_queue *q, int fd, int interestmask, int *statemask);

/*
 * hq_get_next_event - get_next_event() on queue q.
 *
 * Errors as for get_next_event(), plus EINVAL when q is NULL.
 */
int hq_get_next_event(hq_queue *q, int array_max, event_descr_t *ev_array, struct timeval *timeout);

/*
 * hq_close - revoke interest in fd on queue q, then close(fd).
 *
 * The descriptor is closed in every case, except when q is NULL (EINVAL, fd untouched).
 * Returns 0, or -1 with errno from the revoke or from close(2).
 */
int hq_close(hq_queue *q, int fd);

/*
 * hq_queue_free - destroy queue q and its backend's descriptors. Descriptors declared on
 * it stay open. NULL, and a queue from hq_default_queue(), are allowed and left alone.
 */
void hq_queue_free(hq_queue *q);

/*
 * hq_backend_name - the name of the backend q runs on ("epoll" when "uring" was asked for
 * and refused). The string lives until hq_queue_free(q). NULL q gives NULL (errno EINVAL).
 */
const char *hq_backend_name(const hq_queue *q);

/*
 * close - close(2), revoking interest first.
 *
 * The library provides close() itself; a program linked with -lhintq (shared or static)
 * calls it in place of the C library's, without any change to its source. When fd is
 * declared on any queue or group of the process, the declaration is revoked first, then fd
 * is closed with the close system call; other descriptors are closed at the cost of one
 * atomic load more. Return value and errno are those of close(2).
 *
 * A declaration on a queue that another thread is using (perhaps blocked in
 * get_next_event()) is revoked by that thread: its wait is woken and revokes before
 * waiting again, and its next call of any kind revokes before doing anything else. So the
 * descriptor's file is let go of as soon as that thread runs, and a descriptor that reuses
 * the number is never reported under the old declaration.
 *
 * Not seen (revoke first, with declare_interest(fd, 0, NULL), or close through
 * hq_close()): dup2()/dup3() onto a declared number, close_range(), closes inside the C
 * library (fclose() of an fdopen()ed descriptor) and raw syscall(SYS_close). close() of a
 * declared descriptor takes a lock: it is async-signal-safe only for descriptors that no
 * queue or group has declared.
 */
/* int close(int fd); -- declared by <unistd.h> */

/*
 * hq_default_queue - the calling thread's default queue (the one declare_interest() and
 * get_next_event() use) as an hq_queue, created if needed, for the hq_ calls below that take
 * a queue (hq_waker_new(), hq_queue_stats()).
 *
 * The pointer is valid until the thread exits; hq_queue_free() on it does nothing. Returns
 * NULL with errno as for declare_interest() when the queue cannot be created.
 */
hq_queue *hq_default_queue(void);

/*
 * hq_queue_new_bounded - hq_queue_new() with a FIFO of at most capacity pending events.
 *
 * Coalescing already bounds the FIFO by the number of declared descriptors. Below that, a
 * burst can overflow it: events that do not fit are not lost but found afterwards by a scan
 * of the declared descriptors in number order, whose start rotates so that no descriptor
 * starves (hq_queue_stats() counts overflows and scanned events).
 *
 * Returns the queue, or NULL with errno: EINVAL for capacity 0, otherwise as
 * hq_queue_new().
 */
hq_queue *hq_queue_new_bounded(const char *backend_name, size_t capacity);

/* A queue's counters since it was created. */
struct hq_stats {
    uint64_t delivered;  /* events handed to the caller */
    uint64_t coalesced;  /* readiness merged into an event already pending */
    uint64_t stale;      /* reports dropped: their declaration was revoked meanwhile */
    uint64_t overflows;  /* times the FIFO was full when an event arrived */
    uint64_t scanned;    /* events found by the overflow scan */
    uint64_t rearms;     /* one-shot re-arms (epoll-oneshot, groups) */
    uint64_t waits;      /* waits in the backend */
    uint64_t recoveries; /* rtsig: signal-queue overflows recovered by a scan */
    uint64_t switches;   /* rtsig: switches between signals and polling */
    uint64_t migrations; /* gooch: moves between the active and inactive sets */
};

/*
 * hq_queue_stats - copy q's counters into *stats.
 *
 * Like every call on q, it waits while another thread is inside a call on q. Returns 0, or
 * -1 with errno EINVAL (q or stats NULL), EBUSY (as for declare_interest()).
 */
int hq_queue_stats(hq_queue *q, struct hq_stats *stats);

/*
 * Wakers: waking a thread blocked in get_next_event() from any thread.
 *
 * hq_waker_new - a waker for q (hq_default_queue() for a thread's default queue). NULL with
 *   errno EINVAL when q is NULL.
 * hq_waker_wake - makes q's current get_next_event(), or its next one if none is blocked,
 *   return (0 when no event is pending). Wake-ups before that call returns are merged into
 *   one. Callable from any thread and from a signal handler. Waking a queue that was freed
 *   (or whose thread exited) does nothing. Returns 0, or -1 with errno (EINVAL for NULL).
 *   On rtsig the wake-up is a signal to the thread that last waited on q (or created it):
 *   a queue handed to another thread may miss a wake-up sent before that thread's first
 *   wait on it.
 * hq_waker_free - frees the waker (not the queue). NULL does nothing.
 */
typedef struct hq_waker hq_waker;
hq_waker *hq_waker_new(hq_queue *q);
int hq_waker_wake(const hq_waker *w);
void hq_waker_free(hq_waker *w);

/*
 * Process-wide interest (the paper's section 9): a group of queues, typically one per
 * thread, sharing declarations. A descriptor declared on the group with
 *   HQ_DELIVER_ONE  is reported to exactly one member per readiness (the paper's
 *                   SO_WAKEUP_ONE: a listening socket shared by accepting threads), and not
 *                   to any member again until that member's next get_next_event();
 *   HQ_DELIVER_ALL  is reported to every member.
 * Members get the group's events through hq_get_next_event(), mixed with those of the
 * descriptors they declared themselves.
 *
 * hq_group_new - a group whose members run on backend_name (as for hq_queue_new()). NULL
 *   with errno on failure (EINVAL for an unknown name, EMFILE, ENOMEM).
 * hq_group_queue - a new member queue, for one thread; free it with hq_queue_free(). NULL
 *   with errno (EINVAL for a NULL g).
 * hq_group_declare - declare_interest() for the whole group: interestmask replaces any
 *   earlier group declaration of fd, 0 revokes; delivery is HQ_DELIVER_ONE or
 *   HQ_DELIVER_ALL (EINVAL otherwise); statemask as for declare_interest(). Returns 0, or -1
 *   with errno as for declare_interest().
 * hq_group_free - frees the handle; members keep working and the declarations stay until
 *   the last member is freed. NULL does nothing.
 * Every group call may be made from any thread.
 */
#define HQ_DELIVER_ONE 1
#define HQ_DELIVER_ALL 2
typedef struct hq_group hq_group;
hq_group *hq_group_new(const char *backend_name);
hq_queue *hq_group_queue(hq_group *g);
int hq_group_declare(hq_group *g, int fd, int interestmask, int delivery, int *statemask);
void hq_group_free(hq_group *g);

/*
 * Timers: one-shot timers whose earliest deadline gives the timeout of the next wait.
 *
 *     struct timeval tv;
 *     int n = get_next_event(64, ev, hq_timers_timeout(t, &tv) == 1 ? &tv : NULL);
 *     ...handle the n events...
 *     while ((id = hq_timers_expire(t, &data)) > 0)
 *         ...timer id expired...
 *
 * A set is used by one thread at a time. Times are on CLOCK_MONOTONIC.
 *
 * hq_timers_new - an empty set, or NULL with errno ENOMEM.
 * hq_timers_free - frees the set (not the data pointers). NULL does nothing.
 * hq_timer_add - arms a timer expiring *delay from now, carrying data. Returns its id (> 0,
 *   never reused in the set), or -1 with errno EINVAL (t or delay NULL, a negative field,
 *   or a delay too large for the clock).
 * hq_timer_cancel - disarms timer id and stores its data in *data (if data is not NULL).
 *   Returns 0, or -1 with errno ENOENT (expired, cancelled or unknown) or EINVAL.
 * hq_timers_timeout - stores in *tv the time until the earliest deadline (zero if one has
 *   passed) and returns 1; returns 0, *tv untouched, when no timer is armed; -1 with errno
 *   EINVAL for a NULL argument.
 * hq_timers_expire - removes the timer with the earliest deadline if that deadline has
 *   passed, stores its data in *data (if data is not NULL) and returns its id; returns 0
 *   when none has expired; -1 with errno EINVAL when t is NULL.
 * hq_timers_count - the number of armed timers, or -1 with errno EINVAL.
 */
typedef struct hq_timers hq_timers;
hq_timers *hq_timers_new(void);
void hq_timers_free(hq_timers *t);
int64_t hq_timer_add(hq_timers *t, const struct timeval *delay, void *data);
int hq_timer_cancel(hq_timers *t, int64_t id, void **data);
int hq_timers_timeout(hq_timers *t, struct timeval *tv);
int64_t hq_timers_expire(hq_timers *t, void **data);
int64_t hq_timers_count(const hq_timers *t);

#ifdef __cplusplus
}
#endif

#endif /* HINTQ_H */
