/* Writes small, real trace logs for the seed corpus of log_reader_fuzzer
 * (see fuzz/make_corpus.sh): streams of this process with a log, one per log
 * full policy, stream full policy POSIX_TRACE_FLUSH, a few user event types,
 * payloads of 0 to 80 bytes (some cut by max-data-size), several blocks.
 * Thread (TD) events are filtered out (the posix_trace_filter event that
 * says so is a 2 KB system event), so the logs stay small and the same from
 * one run to the next.
 * Usage: corpus_writer DIR   (root: the streams load BPF programs) */
#include <errno.h>
#include <fcntl.h>
#include <posix_trace/events.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace.h>
#include <unistd.h>

static void check(int err, const char *what)
{
    if (err) {
        fprintf(stderr, "corpus_writer: %s: %s\n", what, strerror(err));
        exit(1);
    }
}

/* A started FLUSH stream of this process with a log at DIR/FILE (its
 * descriptor in *fd), thread events filtered out. */
static trace_id_t start_logged_stream(const char *dir, const char *file, int log_policy,
                                      size_t stream_size, size_t log_size, int *fd)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    *fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (*fd < 0) {
        perror(path);
        exit(1);
    }
    trace_attr_t attr;
    check(posix_trace_attr_init(&attr), "posix_trace_attr_init");
    check(posix_trace_attr_setname(&attr, file), "setname");
    check(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_FLUSH), "setstreamfullpolicy");
    check(posix_trace_attr_setlogfullpolicy(&attr, log_policy), "setlogfullpolicy");
    if (stream_size)
        check(posix_trace_attr_setstreamsize(&attr, stream_size), "setstreamsize");
    check(posix_trace_attr_setmaxdatasize(&attr, 64), "setmaxdatasize"); /* 80 bytes: truncated */
    if (log_size)
        check(posix_trace_attr_setlogsize(&attr, log_size), "setlogsize");
    trace_id_t trid;
    check(posix_trace_create_withlog(0, &attr, *fd, &trid), "posix_trace_create_withlog");
    posix_trace_attr_destroy(&attr);
    trace_event_set_t filter;
    posix_trace_eventset_empty(&filter);
    for (trace_event_id_t id = POSIX_TRACE_TD_EVENT_FIRST;
         id < POSIX_TRACE_TD_EVENT_FIRST + POSIX_TRACE_TD_EVENT_COUNT; ++id)
        posix_trace_eventset_add(id, &filter);
    check(posix_trace_set_filter(trid, &filter, POSIX_TRACE_SET_EVENTSET),
          "posix_trace_set_filter");
    return trid;
}

static void shut_down(trace_id_t trid, int fd)
{
    check(posix_trace_shutdown(trid), "posix_trace_shutdown");
    close(fd);
}

/* `events` user events, a posix_trace_flush after every `per_block`. */
static void write_log(const char *dir, const char *file, int log_policy, size_t log_size,
                      int events, int per_block)
{
    int fd;
    trace_id_t trid = start_logged_stream(dir, file, log_policy, 4096, log_size, &fd);
    trace_event_id_t ids[3];
    check(posix_trace_eventid_open("corpus.small", &ids[0]), "posix_trace_eventid_open");
    check(posix_trace_eventid_open("corpus.medium", &ids[1]), "posix_trace_eventid_open");
    check(posix_trace_eventid_open("corpus.a_rather_long_event_type_name", &ids[2]),
          "posix_trace_eventid_open");
    check(posix_trace_start(trid), "posix_trace_start");
    for (int i = 0; i < events; ++i) {
        unsigned char data[80];
        size_t length = (size_t)(i * 13) % (sizeof data + 1);
        for (size_t k = 0; k < length; ++k)
            data[k] = (unsigned char)(i * 31 + k);
        posix_trace_event(ids[i % 3], data, length);
        if (i % 7 == 6)
            posix_trace_event(POSIX_TRACE_UNNAMED_USEREVENT, &i, sizeof i);
        if (per_block && i % per_block == per_block - 1)
            check(posix_trace_flush(trid), "posix_trace_flush");
    }
    check(posix_trace_stop(trid), "posix_trace_stop");
    shut_down(trid, fd);
}

/* Version 2: 1,500 events emitted at once fill whole chunks of this
 * thread's lane before the stream's drain reads them, so they reach the log
 * as runs, whose blocks overlap in time with the merged ones. */
static void write_runs_log(const char *dir, const char *file)
{
    int fd;
    trace_id_t trid = start_logged_stream(dir, file, POSIX_TRACE_APPEND, 0, 0, &fd);
    trace_event_id_t id;
    check(posix_trace_eventid_open("corpus.run", &id), "posix_trace_eventid_open");
    check(posix_trace_start(trid), "posix_trace_start");
    for (int i = 0; i < 1500; ++i) {
        unsigned char data[48];
        memset(data, i, sizeof data);
        posix_trace_event(id, data, (size_t)(i % 49));
    }
    shut_down(trid, fd);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: corpus_writer DIR\n");
        return 2;
    }
    write_log(argv[1], "append.ptl", POSIX_TRACE_APPEND, 0, 30, 8);
    /* Full after about 4 KB: the rest is discarded, counted in the trailer. */
    write_log(argv[1], "until_full.ptl", POSIX_TRACE_UNTIL_FULL, 4096, 120, 30);
    /* Two 2 KB slots (the smallest); one block per flush, so the log wraps
     * and keeps the two newest blocks. */
    write_log(argv[1], "loop.ptl", POSIX_TRACE_LOOP, 4096, 40, 8);
    write_runs_log(argv[1], "runs.ptl");
    return 0;
}
