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
 *   - The paper says that closing a descriptor implicitly removes any declared interest. A
 *     user-space library cannot see close(2), so revoke before closing, with
 *     declare_interest(fd, 0, NULL), or close through hq_close_default() / hq_close(),
 *     which revoke and then close. Once a revoke returns, no event of that registration is
 *     delivered, even if the descriptor number is reused and declared again at once.
 *
 * Errors follow UNIX conventions: a failing call returns -1 (or NULL) and sets errno.
 * After EIO (an internal error of the library, which never crashes the caller) the queue's
 * state is unknown: free it (for the default queue, end the thread).
 */
#ifndef HINTQ_H
#define HINTQ_H

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
 * (on the uring, poll, select and gooch backends, which learn of it only when they wait).
 *
 * Returns 0, or -1 with errno:
 *   EINVAL  interestmask has bits other than EVENT_READ|EVENT_WRITE|EVENT_EXCEPT, or the
 *           backend cannot watch fd (fd >= 1024 on select), or HINTQ_BACKEND names an
 *           unknown backend (when this call creates the default queue);
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
 * Names: "uring", "epoll", "epoll-et", "epoll-oneshot", "poll", "select" (the list that
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
 * it stay open. NULL is allowed and does nothing.
 */
void hq_queue_free(hq_queue *q);

/*
 * hq_backend_name - the name of the backend q runs on ("epoll" when "uring" was asked for
 * and refused). The string lives until hq_queue_free(q). NULL q gives NULL (errno EINVAL).
 */
const char *hq_backend_name(const hq_queue *q);

#ifdef __cplusplus
}
#endif

#endif /* HINTQ_H */
