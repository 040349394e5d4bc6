/*
 * Description: libevent's test/bench.c method, written anew for hintq's lab, over one of
 * libevent, libev or libuv (chosen at compile time: -DPEER_LIBEVENT, -DPEER_LIBEV,
 * -DPEER_LIBUV).
 *
 * The method: N AF_UNIX socket pairs, a persistent read watcher on the first end of each.
 * One run re-registers every watcher (stop, then start: untimed, but it is why libev beats
 * libevent in the published comparisons), lets one non-blocking loop pass flush, writes one
 * byte into each of A evenly spaced pairs, then times non-blocking loop passes until every
 * byte written has been read. Each callback reads its byte and, while writes remain, writes
 * one byte into the next pair (wrapping), so W writes travel round the ring of pairs.
 * One line per run on stdout: microseconds for the timed part.
 *
 * usage: bench_method -n PAIRS -a ACTIVE -w WRITES -r RUNS -m epoll|poll|select [-l LAUNCH]
 *
 * -l is not used by the method: it is the launch's number in the lab's plan (E9 starts each
 * point several times, as separate processes), so that every launch has a command line of
 * its own and is run, not answered from the lab's record of an identical command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int npairs = 100, nactive = 1, nwrites = 100, nruns = 25;
static const char *method = "epoll";
static int *ends;           /* ends[2*i] is watched, ends[2*i+1] is written */
static long got, sent;      /* bytes read, bytes written in the timed part */
static int left;            /* writes left to pass on */
static long failures;

/* One readable pair: take its byte, pass one on to the next pair. */
static void on_readable(int i)
{
    char c;
    ssize_t n = recv(ends[2 * i], &c, 1, 0);
    if (n > 0)
        got += n;
    else if (n < 0 && errno != EAGAIN)
        failures++;
    if (n > 0 && left > 0) {
        int next = (i + 1) % npairs;
        if (send(ends[2 * next + 1], "x", 1, 0) != 1)
            failures++;
        left--;
        sent++;
    }
}

#if defined(PEER_LIBEVENT)
#include <event2/event.h>
static struct event_base *base;
static struct event **watchers;
static void cb(evutil_socket_t fd, short what, void *arg) { (void)fd; (void)what; on_readable((int)(long)arg); }
static const char *peer_setup(void)
{
    struct event_config *cfg = event_config_new();
    const char **all = event_get_supported_methods();
    for (int i = 0; all[i]; i++)
        if (strcmp(all[i], method) != 0)
            event_config_avoid_method(cfg, all[i]);
    base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (!base || strcmp(event_base_get_method(base), method) != 0)
        return "libevent has no such method here";
    watchers = calloc(npairs, sizeof *watchers);
    for (int i = 0; i < npairs; i++)
        watchers[i] = event_new(base, ends[2 * i], EV_READ | EV_PERSIST, cb, (void *)(long)i);
    return NULL;
}
static void peer_rearm(int i) { event_del(watchers[i]); event_add(watchers[i], NULL); }
static void peer_pass(void) { event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK); }
static const char *peer_version(void) { return event_get_version(); }
#elif defined(PEER_LIBEV)
#include <ev.h>
static struct ev_loop *loop;
static ev_io *watchers;
static void cb(struct ev_loop *l, ev_io *w, int revents) { (void)l; (void)revents; on_readable((int)(long)w->data); }
static const char *peer_setup(void)
{
    unsigned flags = strcmp(method, "epoll") == 0 ? EVBACKEND_EPOLL
                   : strcmp(method, "poll") == 0  ? EVBACKEND_POLL
                   : strcmp(method, "select") == 0 ? EVBACKEND_SELECT : 0;
    if (!flags || !(ev_supported_backends() & flags))
        return "libev has no such backend here";
    loop = ev_loop_new(flags);
    if (!loop)
        return "ev_loop_new failed";
    watchers = calloc(npairs, sizeof *watchers);
    for (int i = 0; i < npairs; i++) {
        ev_io_init(&watchers[i], cb, ends[2 * i], EV_READ);
        watchers[i].data = (void *)(long)i;
    }
    return NULL;
}
static void peer_rearm(int i) { ev_io_stop(loop, &watchers[i]); ev_io_start(loop, &watchers[i]); }
static void peer_pass(void) { ev_run(loop, EVRUN_NOWAIT); }
static char ev_ver[32];
static const char *peer_version(void) { snprintf(ev_ver, sizeof ev_ver, "%d.%d", ev_version_major(), ev_version_minor()); return ev_ver; }
#elif defined(PEER_LIBUV)
#include <uv.h>
static uv_loop_t uvloop;
static uv_poll_t *watchers;
static void cb(uv_poll_t *h, int status, int events) { (void)status; (void)events; on_readable((int)(long)h->data); }
static const char *peer_setup(void)
{
    if (strcmp(method, "epoll") != 0)
        return "libuv uses epoll on Linux, nothing else";
    uv_loop_init(&uvloop);
    watchers = calloc(npairs, sizeof *watchers);
    for (int i = 0; i < npairs; i++) {
        uv_poll_init(&uvloop, &watchers[i], ends[2 * i]);
        watchers[i].data = (void *)(long)i;
    }
    return NULL;
}
static void peer_rearm(int i) { uv_poll_stop(&watchers[i]); uv_poll_start(&watchers[i], UV_READABLE, cb); }
static void peer_pass(void) { uv_run(&uvloop, UV_RUN_NOWAIT); }
static const char *peer_version(void) { return uv_version_string(); }
#else
#error "define PEER_LIBEVENT, PEER_LIBEV or PEER_LIBUV"
#endif

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double one_run(void)
{
    for (int i = 0; i < npairs; i++)
        peer_rearm(i);
    peer_pass();
    got = sent = 0;
    int stride = npairs / nactive;
    for (int k = 0; k < nactive; k++, sent++)
        if (send(ends[2 * (k * stride) + 1], "x", 1, 0) != 1)
            failures++;
    left = nwrites;
    double t0 = now_us();
    while (got != sent)
        peer_pass();
    return now_us() - t0;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "n:a:w:r:m:l:")) != -1) {
        switch (opt) {
        case 'n': npairs = atoi(optarg); break;
        case 'a': nactive = atoi(optarg); break;
        case 'w': nwrites = atoi(optarg); break;
        case 'r': nruns = atoi(optarg); break;
        case 'm': method = optarg; break;
        case 'l': break; /* the launch's number: see the top */
        default:
            fprintf(stderr, "usage: %s -n PAIRS -a ACTIVE -w WRITES -r RUNS -m epoll|poll|select [-l LAUNCH]\n", argv[0]);
            return 2;
        }
    }
    if (npairs < 1 || nactive < 1 || nactive > npairs || nruns < 1) {
        fprintf(stderr, "bad -n/-a/-r\n");
        return 2;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if ((rlim_t)npairs * 2 + 32 > rl.rlim_cur) {
        fprintf(stderr, "RLIMIT_NOFILE %lu is too low for %d pairs\n", (unsigned long)rl.rlim_cur, npairs);
        return 3;
    }
    ends = calloc(2 * (size_t)npairs, sizeof *ends);
    for (int i = 0; i < npairs; i++)
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, &ends[2 * i]) != 0) {
            perror("socketpair");
            return 1;
        }
    const char *why = peer_setup();
    if (why) {
        fprintf(stderr, "%s: %s\n", method, why);
        return 4;
    }
    fprintf(stderr, "version %s method %s\n", peer_version(), method);
    for (int r = 0; r < nruns; r++)
        printf("%.1f\n", one_run());
    if (failures) {
        fprintf(stderr, "%ld failed reads or writes\n", failures);
        return 1;
    }
    return 0;
}
