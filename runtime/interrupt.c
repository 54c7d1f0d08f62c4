/* Ctrl-C ends a running Nupp program (runtime/interrupt.py; the launcher of a
   built program includes this file too: runtime/project/launcher.py).

   Neither Python nor LuaJIT can stop the program by themselves: Python's
   handler only sets a flag for the main thread, which waits while Lua holds
   the GIL on another thread, and LuaJIT's hooks (luajit.c's Ctrl-C) are never
   called from compiled traces, from native @aot code or from a blocked read.
   So the stop is a process exit, made where it is safe: the handler only
   posts a semaphore (async-signal-safe); a watcher thread then flushes what
   the program wrote to C stdio -- standard output and error first, then every
   stream -- each step bounded in time (a stream's lock may be held by a
   thread blocked in a read or write), writes the message and _exit()s with
   the status.  A second Ctrl-C exits at once, from the handler.

   Armed without the watcher (a built program, which may run under qemu-user:
   there pthread_create of the dynamically linked cross glibc never returns,
   qemu 7.2), the handler writes the message and exits at once: what C stdio
   still buffers is lost, as at SIGINT's default action (a flush from the
   handler could write a buffer twice, its lock being the interrupted
   thread's, or block on a full pipe with SIGINT masked).

   Disarming and a Ctrl-C agree through one atomic state (armed, interrupted,
   disarmed), so every SIGINT is handled once, by one owner: one that the
   handler takes while armed stops the program, and nu_interrupt_disarm then
   never returns (the watcher is exiting; the caller's code after the run
   must not race it); one that arrives later goes to the handling restored,
   even if it reached this handler during the disarm (it is re-raised). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NU_FLUSH_WAIT_MS 300  /* how long a flush may wait for a stream another thread holds */

static sem_t nu_interrupt_posted;
enum { NU_DISARMED, NU_ARMED, NU_INTERRUPTED };
static atomic_int nu_state;  /* lock-free (checked at arming): safe in a handler */
static char nu_interrupt_message[256];
static size_t nu_interrupt_length;
static int nu_interrupt_status;
static int nu_left_ignored;  /* SIGINT was ignored when armed: it stays so (see nu_interrupt_arm) */
static struct sigaction nu_previous_action;
static int nu_watching;  /* the watcher thread and its semaphore exist */

static void nu_interrupt_exit(void)
{
    ssize_t written = write(STDERR_FILENO, nu_interrupt_message, nu_interrupt_length);
    (void)written;  /* nothing left to do if stderr is gone */
    _exit(nu_interrupt_status);
}

static void nu_on_interrupt(int signo)
{
    int was = NU_ARMED;
    if (atomic_compare_exchange_strong(&nu_state, &was, NU_INTERRUPTED)) {
        if (!nu_watching)
            nu_interrupt_exit();
        sem_post(&nu_interrupt_posted);
    } else if (was == NU_INTERRUPTED) {  /* a second Ctrl-C */
        nu_interrupt_exit();
    } else {  /* after the disarm: the handling restored takes it, once this handler returns */
        sigaction(signo, &nu_previous_action, NULL);
        raise(signo);
    }
}

static void *nu_flush_all(void *done)
{
    fflush(NULL);
    sem_post(done);
    return NULL;
}

/* Whether fflush(NULL) finished within NU_FLUSH_WAIT_MS: it waits for each
   stream's lock, and a thread blocked in a read (stdin) or a write keeps one. */
static int nu_flushed_all(void)
{
    static sem_t done;
    pthread_t flusher;
    struct timespec deadline;
    if (sem_init(&done, 0, 0) != 0 || pthread_create(&flusher, NULL, nu_flush_all, &done) != 0)
        return 0;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += NU_FLUSH_WAIT_MS * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    int waited;
    while ((waited = sem_timedwait(&done, &deadline)) != 0 && errno == EINTR) {}
    return waited == 0;
}

/* Flush `stream` if its lock comes free within NU_FLUSH_WAIT_MS. */
static void nu_flush_stream(FILE *stream)
{
    struct timespec millisecond = {0, 1000000L};
    for (int waited = 0; waited < NU_FLUSH_WAIT_MS; waited++) {
        if (ftrylockfile(stream) == 0) {
            fflush_unlocked(stream);
            funlockfile(stream);
            return;
        }
        nanosleep(&millisecond, NULL);
    }
}

static void *nu_watch(void *unused)
{
    (void)unused;
    while (sem_wait(&nu_interrupt_posted) != 0) {}  /* EINTR: a signal arriving */
    if (!nu_flushed_all()) {  /* glibc flushes the standard streams last: try them alone */
        nu_flush_stream(stdout);
        nu_flush_stream(stderr);
    }
    nu_interrupt_exit();
    return NULL;
}

/* Until nu_interrupt_disarm, SIGINT flushes C stdio, writes `message` to
   standard error and exits with `status`; by a watcher thread if `watch`, else
   from the handler.  0, or -1 (errno) if it cannot. */
int nu_interrupt_arm(const char *message, int status, int watch);
int nu_interrupt_arm(const char *message, int status, int watch)
{
    if (!atomic_is_lock_free(&nu_state)) {
        errno = ENOTSUP;
        return -1;
    }
    /* A SIGINT ignored by whoever started the program (a shell's background
       job, nohup) stays ignored, as in every POSIX tool: Ctrl-C meant for the
       foreground must not stop it. */
    struct sigaction current;
    if (sigaction(SIGINT, NULL, &current) != 0)
        return -1;
    nu_left_ignored = current.sa_handler == SIG_IGN;
    if (nu_left_ignored)
        return 0;
    if (watch && !nu_watching) {
        pthread_t watcher;
        pthread_attr_t attributes;
        if (sem_init(&nu_interrupt_posted, 0, 0) != 0 || pthread_attr_init(&attributes) != 0)
            return -1;
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&watcher, &attributes, nu_watch, NULL);
        pthread_attr_destroy(&attributes);
        if (failed) {
            errno = failed;
            return -1;
        }
        nu_watching = 1;
    }
    nu_interrupt_length = strlen(message) < sizeof nu_interrupt_message ? strlen(message)
                                                                         : sizeof nu_interrupt_message - 1;
    memcpy(nu_interrupt_message, message, nu_interrupt_length);
    nu_interrupt_status = status;
    atomic_store(&nu_state, NU_ARMED);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = nu_on_interrupt;
    action.sa_flags = SA_RESTART;  /* a read the program is in goes on until the exit */
    sigemptyset(&action.sa_mask);
    return sigaction(SIGINT, &action, &nu_previous_action);
}

/* SIGINT's handling as it was before nu_interrupt_arm; or, if a Ctrl-C was
   taken meanwhile, no return: the watcher is flushing and will exit. */
void nu_interrupt_disarm(void);
void nu_interrupt_disarm(void)
{
    if (nu_left_ignored)
        return;
    int was = NU_ARMED;
    if (!atomic_compare_exchange_strong(&nu_state, &was, NU_DISARMED) && was == NU_INTERRUPTED)
        for (;;)
            pause();  /* a second Ctrl-C still exits at once, from the handler */
    sigaction(SIGINT, &nu_previous_action, NULL);
}
