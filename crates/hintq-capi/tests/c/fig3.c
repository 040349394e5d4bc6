/*
 * Description: Figure 3 of Banga, Mogul & Druschel (USENIX 1999), "Simplified example of how
 * the new API might be used", compiled against hintq.h and linked with -lhintq, made into a
 * small line server so that a test can drive it.
 *
 * Usage: fig3 N
 *   Listens on 127.0.0.1 (a port the kernel picks), prints "port P" on stdout, answers every
 *   line "L\n" it receives with "ok L\n", and exits 0 once N connections have been served
 *   (the client closed them). Exits 3 if no event arrives for 30 seconds.
 *
 * Layout: first what the figure assumes from "initialization code not shown here" (the
 * system headers and declarations of the procedures it calls), then the figure's 37 lines,
 * then the procedures the figure omits. The figure's code is as printed, except:
 *
 *   - the one addition the design allows: #include <hintq.h>;
 *   - line 4 and line 26: `main_loop(...)` and `InvokeAcceptHandler(...)` rely on implicit
 *     int, which C99 removed; both are given the return type void (neither returns a value);
 *   - line 9: `&event_array` has type `struct event_descr_t (*)[64]`, not the
 *     `event_descr_t *` that get_next_event takes; it is passed as `event_array`;
 *   - line 16: the printed line has one unbalanced parenthesis,
 *     `if (ListeningOn(event_array[i].fd)`; the missing `)` is added.
 *
 * Lines 15-19 are kept: C binds the `else` of line 18 to the `if` of line 16 (read if not
 * listening), which is what the figure means, although the printed indentation puts the
 * `else` under line 15. GCC's -Wdangling-else (part of -Wall) warns about exactly this, so
 * the test compiles this file with -Wall -Wextra -Werror -Wno-dangling-else.
 */

/* ---- What the figure assumes (the paper: "we omit ... many procedure definitions") ---- */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TRUE 1

static int ListeningOn(int fd);
static void InvokeReadHandler(int fd);
static int InvokeWriteHandler(int fd);
static void SetNonblocking(int fd);
static void DoTimeoutProcessing(void);
void InvokeAcceptHandler(int listenfd);

/* ---- Figure 3 ---- */
#include <hintq.h> /* the only addition to the figure's code */

#define MAX_EVENTS 64
struct event_descr_t event_array[MAX_EVENTS];

void main_loop(struct timeval timeout) /* deviation: return type void */
{
    int i, n;

    while (TRUE) {
        n = get_next_event(MAX_EVENTS, event_array, &timeout); /* deviation: no & */
        if (n < 1) {
            DoTimeoutProcessing(); continue;
        }

        for (i = 0; i < n; i++) {
            if (event_array[i].mask & EVENT_READ)
                if (ListeningOn(event_array[i].fd)) /* deviation: `)` added */
                    InvokeAcceptHandler(event_array[i].fd);
            else
                InvokeReadHandler(event_array[i].fd);
            if (event_array[i].mask & EVENT_WRITE)
                InvokeWriteHandler(event_array[i].fd);
        }
    }
}

void InvokeAcceptHandler(int listenfd) /* deviation: return type void */
{
    int newfd, statemask;

    while ((newfd = accept(listenfd, NULL, NULL)) >= 0) {
        SetNonblocking(newfd);
        declare_interest(newfd, EVENT_READ|EVENT_WRITE,
                         &statemask);
        if (statemask & EVENT_READ)
            InvokeReadHandler(newfd);
    }
}

/* ---- The procedures the figure omits ---- */

#define MAX_FDS 1024
#define BUF 4096

/* Per-connection buffers, indexed by descriptor: unanswered input and unsent output. */
static struct conn {
    char in[BUF];
    size_t inlen;
    char out[2 * BUF];
    size_t outlen;
} conns[MAX_FDS];

static int listen_fd = -1;
static int to_serve;         /* connections still to serve before exiting */
static time_t last_activity; /* for DoTimeoutProcessing */

static void die(const char *what)
{
    fprintf(stderr, "fig3: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int ListeningOn(int fd)
{
    last_activity = time(NULL);
    return fd == listen_fd;
}

static void SetNonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        die("fcntl");
    if (fd >= MAX_FDS) {
        errno = EMFILE;
        die("descriptor too large for this example");
    }
}

/* The paper's contract for close(): revoke, then close. hq_close_default does both. */
static void Finish(int fd)
{
    conns[fd].inlen = conns[fd].outlen = 0;
    if (hq_close_default(fd) < 0)
        die("hq_close_default");
    if (--to_serve == 0)
        exit(0);
}

/* Sends what is buffered for fd. Declares write interest only while output remains, as a
 * state-based backend would otherwise report the (nearly always) writable socket forever.
 * Returns -1 if the connection was finished. */
static int InvokeWriteHandler(int fd)
{
    struct conn *c = &conns[fd];
    size_t sent = 0;
    ssize_t k = 0;

    while (sent < c->outlen && (k = write(fd, c->out + sent, c->outlen - sent)) > 0)
        sent += (size_t)k;
    if (k < 0 && errno != EAGAIN) {
        Finish(fd); /* the peer went away (EPIPE, ECONNRESET) */
        return -1;
    }
    memmove(c->out, c->out + sent, c->outlen - sent);
    c->outlen -= sent;
    /* EBADF: a read handler earlier in the same batch finished this connection. */
    if (declare_interest(fd, c->outlen ? EVENT_READ | EVENT_WRITE : EVENT_READ, NULL) < 0 && errno != EBADF)
        die("declare_interest");
    return 0;
}

/* Reads what is there, answers every complete line with "ok <line>\n", and finishes the
 * connection at end of file. A read handler may run on a spurious event: EAGAIN is fine. */
static void InvokeReadHandler(int fd)
{
    struct conn *c = &conns[fd];
    ssize_t k;
    char *nl;

    while ((k = read(fd, c->in + c->inlen, sizeof c->in - c->inlen)) > 0) {
        c->inlen += (size_t)k;
        while ((nl = memchr(c->in, '\n', c->inlen)) != NULL) {
            size_t len = (size_t)(nl - c->in) + 1;
            if (c->outlen + len + 3 > sizeof c->out) {
                errno = ENOBUFS;
                die("client does not read its answers");
            }
            memcpy(c->out + c->outlen, "ok ", 3);
            memcpy(c->out + c->outlen + 3, c->in, len);
            c->outlen += len + 3;
            memmove(c->in, c->in + len, c->inlen - len);
            c->inlen -= len;
        }
        if (c->inlen == sizeof c->in) {
            errno = EMSGSIZE;
            die("line too long");
        }
    }
    if (k < 0 && errno != EAGAIN && errno != ECONNRESET)
        die("read");
    if (c->outlen && InvokeWriteHandler(fd) < 0)
        return;
    if (k == 0 || (k < 0 && errno == ECONNRESET))
        Finish(fd);
}

static void DoTimeoutProcessing(void)
{
    if (time(NULL) - last_activity > 30) {
        fprintf(stderr, "fig3: no event for 30 s, giving up (%d connections unserved)\n", to_serve);
        exit(3);
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    struct timeval timeout = {1, 0};

    if (argc != 2 || (to_serve = atoi(argv[1])) <= 0) {
        fprintf(stderr, "usage: fig3 N\n");
        return 2;
    }
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if ((listen_fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
        die("socket");
    SetNonblocking(listen_fd);
    if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listen_fd, 128) < 0)
        die("bind/listen");
    if (getsockname(listen_fd, (struct sockaddr *)&addr, &len) < 0)
        die("getsockname");
    if (declare_interest(listen_fd, EVENT_READ, NULL) < 0)
        die("declare_interest");
    printf("port %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    last_activity = time(NULL);
    main_loop(timeout);
    return 1;
}
