/*
 * xfsup: one thread keeps a table of children in step with the BMD's
 * command transforms. Each tick (a poll of the children's output pipes,
 * at most 100 ms) it reads their output, reaps the dead, starts what is
 * due, probes the starting for a listener, and compares the table with
 * the current BMD: a transform gone or changed is stopped, a new one
 * started. Everything a child needs (argv, environment, directory) is
 * made before fork, so the child runs only system calls until exec.
 *
 * Thread: the supervisor's own; xfsup_url and xfsup_state take the lock.
 */
#include "xfsup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bmd.h"
#include "http.h"
#include "log.h"
#include "util.h"

#define KIDS_MAX 64
#define TICK_MS 100
#define KILL_AFTER_MS 3000
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define LINE_MAX_LEN 1024

extern char **environ;

enum kid_state { K_STARTING, K_RUNNING, K_BACKOFF, K_STOPPING };

static const char *const state_names[] = {"starting", "running", "backoff", "stopping"};

struct kid {
    char name[64];
    char *spec;                  /* the command as JSON, to tell a change */
    enum kid_state state;
    pid_t pid;                   /* 0 when none runs */
    int port;
    int out;                     /* its stdout and stderr, or -1 */
    char line[LINE_MAX_LEN + 1];
    size_t llen;
    int restarts;
    int last_exit;               /* wait status, -1 before any */
    uint64_t due_ms;             /* K_BACKOFF: when to start; K_STOPPING: when to kill */
    int gone;                    /* no longer wanted: removed once it has exited */
};

static struct {
    pthread_mutex_t mu;
    pthread_t thread;
    int running, stop;
    char *dir;                   /* state_dir/transforms */
    struct kid kids[KIDS_MAX];
    int n;
} sv = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ms(void)
{
    return mono_ns() / 1000000u;
}

/* A free loopback port (bound and let go: the child binds it next). */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int port = -1;
    if (s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
        !getsockname(s, (struct sockaddr *)&a, &al))
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

/* Does something listen on 127.0.0.1:port? */
static int listening(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = s >= 0 && !connect(s, (struct sockaddr *)&a, sizeof(a));
    if (s >= 0)
        close(s);
    return ok;
}

/* The child's environment: the target's, without PORT, and PORT and
 * SHOAL_TRANSFORM. A new array of new strings. */
static char **child_env(const struct kid *k)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 3, sizeof(*env));
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PORT=", 5) && strncmp(environ[i], "SHOAL_TRANSFORM=", 16))
            env[j++] = xstrdup(environ[i]);
    env[j++] = xasprintf("PORT=%d", k->port);
    env[j++] = xasprintf("SHOAL_TRANSFORM=%s", k->name);
    return env;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* argv of a command spec (checked by xform_check): a new array. */
static char **child_argv(const char *spec)
{
    json_t *c = json_loads(spec, 0, NULL);
    char **argv = xcalloc(json_array_size(c) + 1, sizeof(*argv));
    size_t i;
    json_t *a;
    json_array_foreach(c, i, a)
        argv[i] = xstrdup(json_string_value(a));
    json_decref(c);
    return argv;
}

/* Fork and exec k's command; k->pid, k->out and k->port set, or the
 * attempt counted as a death. */
static void kid_spawn(struct kid *k)
{
    char *wd = xasprintf("%s/%s", sv.dir, k->name);
    mkdir(wd, 0700);
    int p[2];
    k->port = free_port();
    if (k->port < 0 || pipe2(p, O_CLOEXEC)) {
        log_warn("transform %s: cannot start: %s", k->name, strerror(errno));
        free(wd);
        k->state = K_BACKOFF;
        k->due_ms = now_ms() + BACKOFF_MAX_MS;
        return;
    }
    char **argv = child_argv(k->spec), **env = child_env(k);
    pid_t pid = fork();
    if (pid == 0) {              /* the child: system calls only, until exec */
        sigset_t none;           /* the target's blocked and ignored signals are not its */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        setpgid(0, 0);
        if (chdir(wd) || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
            _exit(126);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        close_range(3, ~0u, 0);  /* none of the target's sockets and files */
        execvpe(argv[0], argv, env);
        _exit(127);
    }
    close(p[1]);
    strv_free(argv);
    strv_free(env);
    free(wd);
    if (pid < 0) {
        close(p[0]);
        log_warn("transform %s: fork: %s", k->name, strerror(errno));
        k->state = K_BACKOFF;
        k->due_ms = now_ms() + BACKOFF_MAX_MS;
        return;
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    k->pid = pid;
    k->out = p[0];
    k->llen = 0;
    k->state = K_STARTING;
    log_info("transform %s: started pid %d on 127.0.0.1:%d", k->name, (int)pid, k->port);
}

/* Its output so far, to the log a line at a time; at its end (the
 * child gone) the pipe is closed. */
static void kid_read(struct kid *k)
{
    char buf[4096];
    while (k->out >= 0) {
        ssize_t r = read(k->out, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] == '\n' || k->llen == LINE_MAX_LEN) {
                log_info("transform %s: %.*s", k->name, (int)k->llen, k->line);
                k->llen = 0;
                if (buf[i] == '\n')
                    continue;
            }
            k->line[k->llen++] = buf[i];
        }
    }
    if (k->llen)
        log_info("transform %s: %.*s", k->name, (int)k->llen, k->line);
    k->llen = 0;
    if (k->out >= 0)
        close(k->out);
    k->out = -1;
}

/* Reap k if its child has exited; a wanted one waits to start again. */
static void kid_reap(struct kid *k)
{
    int st;
    if (!k->pid || waitpid(k->pid, &st, WNOHANG) != k->pid)
        return;
    kid_read(k);
    k->pid = 0;
    k->last_exit = st;
    if (k->gone || k->state == K_STOPPING)
        return;
    int ms = BACKOFF_MIN_MS;
    for (int i = 0; i < k->restarts && ms < BACKOFF_MAX_MS; i++)
        ms *= 2;
    ms = ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
    k->restarts++;
    k->state = K_BACKOFF;
    k->due_ms = now_ms() + (uint64_t)ms;
    log_warn("transform %s: exited (%s %d); restart in %d ms", k->name,
             WIFSIGNALED(st) ? "signal" : "status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), ms);
}

/* Ask k's child to stop; killed if it has not by KILL_AFTER_MS. */
static void kid_stop(struct kid *k)
{
    if (k->pid && k->state != K_STOPPING) {
        kill(-k->pid, SIGTERM);  /* its group, and it (before it made the group) */
        kill(k->pid, SIGTERM);
        k->state = K_STOPPING;
        k->due_ms = now_ms() + KILL_AFTER_MS;
    }
}

static struct kid *kid_find(const char *name)
{
    for (int i = 0; i < sv.n; i++)
        if (!sv.kids[i].gone && !strcmp(sv.kids[i].name, name))
            return &sv.kids[i];
    return NULL;
}

/* The table against the current BMD's command transforms (the lock held). */
static void reconcile(void)
{
    struct bmd *b = bmd_current();
    for (int i = 0; i < sv.n; i++) {
        struct kid *k = &sv.kids[i];
        const json_t *t = b && !k->gone ? bmd_transform(b, k->name) : NULL;
        char *spec = t && json_object_get(t, "command")
                         ? json_dumps(json_object_get(t, "command"), JSON_COMPACT)
                         : NULL;
        if (!k->gone && (!spec || strcmp(spec, k->spec))) {
            log_info("transform %s: %s; stopping it", k->name, spec ? "changed" : "deleted");
            k->gone = 1;
            kid_stop(k);
        }
        free(spec);
    }
    const char *name;
    json_t *t;
    json_object_foreach(b ? b->transforms : NULL, name, t) {
        json_t *c = json_object_get(t, "command");
        if (!c || kid_find(name) || sv.n == KIDS_MAX)
            continue;
        struct kid *k = &sv.kids[sv.n++];
        memset(k, 0, sizeof(*k));
        snprintf(k->name, sizeof(k->name), "%s", name);
        k->spec = json_dumps(c, JSON_COMPACT);
        k->out = -1;
        k->last_exit = -1;
        k->state = K_BACKOFF;    /* due at once */
    }
    bmd_unref(b);
}

/* One tick's work on every child (the lock held). */
static void tend(void)
{
    uint64_t now = now_ms();
    for (int i = 0; i < sv.n; i++) {
        struct kid *k = &sv.kids[i];
        kid_reap(k);
        if (k->state == K_STOPPING && k->pid && now >= k->due_ms) {
            kill(-k->pid, SIGKILL);
            kill(k->pid, SIGKILL);
        }
        if (k->state == K_BACKOFF && !k->gone && now >= k->due_ms)
            kid_spawn(k);
        if (k->state == K_STARTING && listening(k->port))
            k->state = K_RUNNING;
    }
    for (int i = 0; i < sv.n;) {     /* the gone, once exited */
        struct kid *k = &sv.kids[i];
        if (k->gone && !k->pid) {
            if (k->out >= 0)
                close(k->out);
            free(k->spec);
            sv.kids[i] = sv.kids[--sv.n];
        } else {
            i++;
        }
    }
    if (!sv.stop)                /* stopping: nothing new */
        reconcile();
}

static void *run(void *arg)
{
    (void)arg;
    struct pollfd fds[KIDS_MAX];
    struct kid *who[KIDS_MAX];
    pthread_mutex_lock(&sv.mu);
    while (!sv.stop || sv.n) {
        if (sv.stop)
            for (int i = 0; i < sv.n; i++) {
                sv.kids[i].gone = 1;
                kid_stop(&sv.kids[i]);
            }
        tend();
        int nf = 0;
        for (int i = 0; i < sv.n; i++)
            if (sv.kids[i].out >= 0) {
                fds[nf] = (struct pollfd){sv.kids[i].out, POLLIN, 0};
                who[nf++] = &sv.kids[i];
            }
        pthread_mutex_unlock(&sv.mu);
        int r = poll(fds, (nfds_t)nf, TICK_MS);
        pthread_mutex_lock(&sv.mu);
        for (int i = 0; r > 0 && i < nf; i++)
            if (fds[i].revents && who[i]->out == fds[i].fd)
                kid_read(who[i]);
    }
    pthread_mutex_unlock(&sv.mu);
    return NULL;
}

int xfsup_start(const char *state_dir, char *err, size_t errlen)
{
    sv.dir = xasprintf("%s/transforms", state_dir);
    if (mkdir(sv.dir, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", sv.dir, strerror(errno));
        return -1;
    }
    if (pthread_create(&sv.thread, NULL, run, NULL)) {
        snprintf(err, errlen, "cannot start the transform supervisor");
        return -1;
    }
    sv.running = 1;
    return 0;
}

void xfsup_stop(void)
{
    if (!sv.running)
        return;
    pthread_mutex_lock(&sv.mu);
    sv.stop = 1;
    pthread_mutex_unlock(&sv.mu);
    pthread_join(sv.thread, NULL);
    sv.running = 0;
    free(sv.dir);
    sv.dir = NULL;
}

int xfsup_url(const char *name, char *url, size_t n)
{
    struct bmd *b = bmd_current();
    const json_t *t = b ? bmd_transform(b, name) : NULL;
    const char *u = json_string_value(json_object_get(t, "url"));
    int rc = !t ? -ENOENT : 0;
    if (u)
        snprintf(url, n, "%s", u);
    bmd_unref(b);
    if (rc || u)
        return rc;
    pthread_mutex_lock(&sv.mu);
    const struct kid *k = kid_find(name);
    rc = k && k->state == K_RUNNING ? 0 : -EAGAIN;
    if (!rc)
        snprintf(url, n, "http://127.0.0.1:%d/", k->port);
    pthread_mutex_unlock(&sv.mu);
    return rc;
}

int xfsup_down(const char *name)
{
    pthread_mutex_lock(&sv.mu);
    struct kid *k = kid_find(name);
    if (k)
        kid_reap(k);
    /* not reaped yet, but its sockets closed: it is on its way out */
    int down = k && (k->state != K_RUNNING || !listening(k->port));
    pthread_mutex_unlock(&sv.mu);
    return down;
}

json_t *xfsup_state(void)
{
    json_t *o = json_object();
    struct bmd *b = bmd_current();
    const char *name;
    json_t *t;
    pthread_mutex_lock(&sv.mu);
    json_object_foreach(b ? b->transforms : NULL, name, t) {
        const struct kid *k = kid_find(name);
        if (json_object_get(t, "url"))
            json_object_set_new(o, name, json_pack("{s:s, s:s}", "kind", "url", "state",
                                                   "remote"));
        else
            json_object_set_new(o, name, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "kind",
                                                   "command", "state",
                                                   k ? state_names[k->state] : "starting",
                                                   "pid", k ? (int)k->pid : 0, "port",
                                                   k ? k->port : 0, "restarts",
                                                   k ? k->restarts : 0, "last_exit",
                                                   k ? k->last_exit : -1));
    }
    pthread_mutex_unlock(&sv.mu);
    bmd_unref(b);
    return o;
}

void xfsup_report(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    http_reply_json(r, 200, json_pack("{s:o}", "transforms", xfsup_state()));
}
