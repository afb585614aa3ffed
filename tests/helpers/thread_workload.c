/* Thread workloads for the thread event (TD_*) tests. Each mode prints
 * "ready" and the facts the test needs (tids, addresses), waits for a line,
 * runs, prints "done" (and more facts), waits for a line, exits.
 *
 *   sleeper N     one worker thread does N nanosleeps of 200 us
 *   spinners MS   two threads pinned to CPU 0 spin for MS milliseconds
 *   threads N     N threads created (all alive at once), then joined
 *   signals       two threads receive SIGUSR1 and SIGUSR2 by pthread_kill
 *   mutex         a worker blocks on a mutex the main thread holds for 50 ms
 *   timedwait     a worker's pthread_cond_timedwait expires after 20 ms
 *   pi            SCHED_FIFO 10 holds a PI mutex that SCHED_FIFO 50 waits for
 *   churn WAVES   no dialogue: a thread named "keeper" lives throughout while
 *                 WAVES waves of 50 threads named "churn-W-I" live about
 *                 300 ms each (sleeping, taking a shared mutex); prints nothing
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t barrier;

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void wait_for_line(void)
{
    char line[32];
    if (!fgets(line, sizeof line, stdin))
        exit(1);
}

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    fflush(stdout);
}

/* ---- sleeper -------------------------------------------------------------- */
static long sleeps;
static volatile pid_t worker_tid;
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go, finished;

static void wait_for_go(void)
{
    pthread_mutex_lock(&go_lock);
    while (!go)
        pthread_cond_wait(&go_cond, &go_lock);
    pthread_mutex_unlock(&go_lock);
}

static void release(void)
{
    pthread_mutex_lock(&go_lock);
    go = 1;
    pthread_cond_broadcast(&go_cond);
    pthread_mutex_unlock(&go_lock);
}

static void *sleeper(void *unused)
{
    (void)unused;
    worker_tid = gettid_();
    pthread_barrier_wait(&barrier);
    wait_for_go();
    struct timespec nap = {0, 200000};
    for (long i = 0; i < sleeps; ++i)
        nanosleep(&nap, NULL);
    __atomic_store_n(&finished, 1, __ATOMIC_SEQ_CST);
    pause(); /* stays asleep: its counters stay still */
    return NULL;
}

static int run_sleeper(long count)
{
    pthread_t thread;
    sleeps = count;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&thread, NULL, sleeper, NULL);
    pthread_barrier_wait(&barrier);
    say("ready %d\n", worker_tid);
    wait_for_line();
    release();
    while (!__atomic_load_n(&finished, __ATOMIC_SEQ_CST))
        usleep(10000);
    usleep(20000); /* into pause() */
    say("done\n");
    wait_for_line();
    return 0;
}

/* ---- spinners --------------------------------------------------------------- */
static long spin_ms;
static pid_t spinner_tids[2];

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *spinner(void *slot)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof one, &one);
    spinner_tids[(long)slot] = gettid_();
    pthread_barrier_wait(&barrier);
    wait_for_go();
    double end = now_ms() + spin_ms;
    while (now_ms() < end) {
    }
    pthread_barrier_wait(&barrier);
    pause();
    return NULL;
}

static int run_spinners(long ms)
{
    pthread_t threads[2];
    spin_ms = ms;
    pthread_barrier_init(&barrier, NULL, 3);
    for (long i = 0; i < 2; ++i)
        pthread_create(&threads[i], NULL, spinner, (void *)i);
    pthread_barrier_wait(&barrier);
    say("ready %d %d\n", spinner_tids[0], spinner_tids[1]);
    wait_for_line();
    release();
    pthread_barrier_wait(&barrier);
    usleep(20000);
    say("done\n");
    wait_for_line();
    return 0;
}

/* ---- threads ---------------------------------------------------------------- */
static void *short_lived(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&barrier); /* all alive at once */
    return NULL;
}

static int count_threads(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    int threads = -1;
    while (status && fgets(line, sizeof line, status))
        if (sscanf(line, "Threads: %d", &threads) == 1)
            break;
    if (status)
        fclose(status);
    return threads;
}

static int run_threads(long count)
{
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    say("ready\n");
    wait_for_line();
    pthread_barrier_init(&barrier, NULL, (unsigned)count + 1);
    for (long i = 0; i < count; ++i)
        pthread_create(&threads[i], NULL, short_lived, NULL);
    int peak = count_threads();
    pthread_barrier_wait(&barrier);
    for (long i = 0; i < count; ++i)
        pthread_join(threads[i], NULL);
    usleep(50000); /* the reaps come after an RCU grace period */
    say("done %d %d\n", peak, count_threads());
    wait_for_line();
    free(threads);
    return 0;
}

/* ---- signals ----------------------------------------------------------------
 * Each line: "a" sends SIGUSR1 to thread 0 and SIGUSR2 to thread 1, "b" both
 * to thread 0; the reply "sent N" comes once all were handled; "q" ends. */
/* Two threads can run their handlers at once, on two CPUs: a plain ++ of a
 * shared counter could lose one and leave the main thread waiting forever
 * (seen once: a suite hung here). A lock-free atomic is async-signal-safe. */
static atomic_int handled;
static void on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static void *signal_target(void *slot)
{
    spinner_tids[(long)slot] = gettid_();
    pthread_barrier_wait(&barrier);
    for (;;)
        pause();
    return NULL;
}

static int run_signals(void)
{
    pthread_t threads[2];
    signal(SIGUSR1, on_signal);
    signal(SIGUSR2, on_signal);
    pthread_barrier_init(&barrier, NULL, 3);
    for (long i = 0; i < 2; ++i)
        pthread_create(&threads[i], NULL, signal_target, (void *)i);
    pthread_barrier_wait(&barrier);
    usleep(20000); /* both in pause() */
    say("ready %d %d\n", spinner_tids[0], spinner_tids[1]);
    char line[32];
    while (fgets(line, sizeof line, stdin) && line[0] != 'q') {
        int before = atomic_load(&handled);
        pthread_kill(threads[0], SIGUSR1);
        pthread_kill(threads[line[0] == 'b' ? 0 : 1], SIGUSR2);
        while (atomic_load(&handled) < before + 2)
            usleep(1000);
        usleep(5000);
        say("sent %d\n", atomic_load(&handled));
    }
    return 0;
}

/* ---- mutex ------------------------------------------------------------------ */
static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

static void *mutex_waiter(void *unused)
{
    (void)unused;
    worker_tid = gettid_();
    pthread_barrier_wait(&barrier);
    wait_for_go();
    pthread_mutex_lock(&contended); /* held by main: blocks in the kernel */
    pthread_mutex_unlock(&contended);
    return NULL;
}

static int run_mutex(void)
{
    pthread_t thread;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&thread, NULL, mutex_waiter, NULL);
    pthread_barrier_wait(&barrier);
    say("ready %d %p\n", worker_tid, (void *)&contended);
    wait_for_line();
    pthread_mutex_lock(&contended);
    release();
    usleep(50000);
    pthread_mutex_unlock(&contended);
    pthread_join(thread, NULL);
    say("done\n");
    wait_for_line();
    return 0;
}

/* ---- timedwait -------------------------------------------------------------- */
static pthread_cond_t never_signaled = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static int timed_out;

static void *timed_waiter(void *unused)
{
    (void)unused;
    worker_tid = gettid_();
    pthread_barrier_wait(&barrier);
    wait_for_go();
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 20000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&cond_lock);
    timed_out = pthread_cond_timedwait(&never_signaled, &cond_lock, &deadline) == ETIMEDOUT;
    pthread_mutex_unlock(&cond_lock);
    return NULL;
}

static int run_timedwait(void)
{
    pthread_t thread;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&thread, NULL, timed_waiter, NULL);
    pthread_barrier_wait(&barrier);
    say("ready %d %p %zu\n", worker_tid, (void *)&never_signaled, sizeof never_signaled);
    wait_for_line();
    release();
    pthread_join(thread, NULL);
    say("done %d\n", timed_out);
    wait_for_line();
    return 0;
}

/* ---- pi --------------------------------------------------------------------- */
static pthread_mutex_t pi_mutex;
static volatile int holder_locked;

static void set_fifo(int priority)
{
    struct sched_param param = {.sched_priority = priority};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
}

static void *pi_holder(void *unused)
{
    (void)unused;
    set_fifo(10);
    worker_tid = gettid_();
    pthread_barrier_wait(&barrier);
    wait_for_go();
    pthread_mutex_lock(&pi_mutex);
    holder_locked = 1;
    usleep(50000); /* the waiter blocks meanwhile: this thread is boosted */
    pthread_mutex_unlock(&pi_mutex);
    return NULL;
}

static void *pi_waiter(void *unused)
{
    (void)unused;
    set_fifo(50);
    while (!holder_locked)
        usleep(1000);
    pthread_mutex_lock(&pi_mutex);
    pthread_mutex_unlock(&pi_mutex);
    return NULL;
}

static int run_pi(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&pi_mutex, &attr);
    pthread_t holder, waiter;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&holder, NULL, pi_holder, NULL);
    pthread_barrier_wait(&barrier);
    say("ready %d\n", worker_tid);
    wait_for_line();
    release();
    pthread_create(&waiter, NULL, pi_waiter, NULL);
    pthread_join(holder, NULL);
    pthread_join(waiter, NULL);
    say("done\n");
    wait_for_line();
    return 0;
}

/* ---- churn ------------------------------------------------------------------ */
static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int churn_over;

static void *churn_keeper(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "keeper");
    struct timespec nap = {0, 20000000};
    while (!churn_over)
        nanosleep(&nap, NULL);
    return NULL;
}

static void *churn_worker(void *unused)
{
    (void)unused;
    struct timespec held = {0, 200000}, nap = {0, 25000000};
    for (int i = 0; i < 10; ++i) {
        pthread_mutex_lock(&churn_lock);
        nanosleep(&held, NULL); /* held a while: some others wait on it */
        pthread_mutex_unlock(&churn_lock);
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static int run_churn(long waves)
{
    pthread_t keeper, workers[50];
    pthread_create(&keeper, NULL, churn_keeper, NULL);
    for (long wave = 0; wave < waves; ++wave) {
        for (int i = 0; i < 50; ++i) {
            char name[32];
            snprintf(name, sizeof name, "churn-%ld-%d", wave, i);
            name[15] = '\0'; /* the kernel's limit */
            pthread_create(&workers[i], NULL, churn_worker, NULL);
            pthread_setname_np(workers[i], name);
        }
        for (int i = 0; i < 50; ++i)
            pthread_join(workers[i], NULL);
    }
    churn_over = 1;
    pthread_join(keeper, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    long number = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
    if (strcmp(mode, "sleeper") == 0)
        return run_sleeper(number);
    if (strcmp(mode, "spinners") == 0)
        return run_spinners(number);
    if (strcmp(mode, "threads") == 0)
        return run_threads(number);
    if (strcmp(mode, "signals") == 0)
        return run_signals();
    if (strcmp(mode, "mutex") == 0)
        return run_mutex();
    if (strcmp(mode, "timedwait") == 0)
        return run_timedwait();
    if (strcmp(mode, "pi") == 0)
        return run_pi();
    if (strcmp(mode, "churn") == 0)
        return run_churn(number);
    return 2;
}
