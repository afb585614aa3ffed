#include "workload.hpp"

#include <posix_trace/usdt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace stress {
namespace {

thread_local int t_emitter = -1;
thread_local uint64_t t_handler_seq = 0;
trace_event_id_t g_event_id = 0;
std::atomic<uint64_t> g_handled[kMaxEmitters];

// A signal handler emits too: its event is traced from within the signal
// frame of a thread that may be inside posix_trace_event itself.
void on_signal(int)
{
    if (t_emitter < 0)
        return;
    Payload payload{uint32_t(t_emitter), kHandler, t_handler_seq++};
    posix_trace_event(g_event_id, &payload, sizeof payload);
    g_handled[t_emitter].store(t_handler_seq, std::memory_order_relaxed);
}

void sleep_ns(long ns)
{
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
}

// Threads wait at a gate until it opens; who waits is counted.
class Gate {
public:
    void wait()
    {
        std::unique_lock lock(mutex_);
        ++waiting_;
        changed_.notify_all();
        changed_.wait(lock, [&] { return open_; });
    }
    void open()
    {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }
    void wait_for(int count)
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return waiting_ >= count; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int waiting_ = 0;
    bool open_ = false;
};

char task_state(pid_t tid)
{
    std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

} // namespace

long context_switches(pid_t pid, pid_t tid)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                         "/status");
    long total = 0;
    for (std::string line; std::getline(status, line);)
        if (line.find("ctxt_switches:") != std::string::npos)
            total += std::stol(line.substr(line.find(':') + 1));
    return total;
}

struct Workload::Impl {
    WorkloadOptions options;
    Gate start, end;
    std::atomic<bool> stop_helpers{false}, stop_emitters{false};
    std::vector<std::thread> threads;
    std::atomic<pid_t> tids[kMaxEmitters] = {};
    pthread_t handles[kMaxEmitters] = {};
    uint64_t emitted[kMaxEmitters] = {};
    std::atomic<uint64_t> forks{0}, threads_created{0};
    long switches_before[kMaxEmitters] = {};

    void emit(int index)
    {
        t_emitter = index;
        tids[index] = gettid();
        start.wait();
        uint64_t seq = 0;
        while (!stop_emitters.load(std::memory_order_relaxed)) {
            Payload payload{uint32_t(index), kMain, seq};
            posix_trace_event(g_event_id, &payload, sizeof payload);
            if (options.usdt)
                POSIX_TRACE_USDT(stress, tick, index, seq);
            ++seq;
            if (seq % options.pause_every == 0)
                sleep_ns(20'000);
            else if (seq % 5 == 0)
                sched_yield();
        }
        emitted[index] = seq;
        end.wait();
    }

    // Sends SIGUSR1 to the emitters in turn, every 200 us.
    void signal_emitters()
    {
        start.wait();
        for (unsigned i = 0; !stop_helpers.load(); ++i) {
            pthread_kill(handles[i % unsigned(options.emitters)], SIGUSR1);
            sleep_ns(200'000);
        }
        end.wait();
    }

    void fork_children()
    {
        start.wait();
        while (!stop_helpers.load()) {
            pid_t child = fork();
            if (child == 0)
                _exit(0);
            if (child > 0) {
                waitpid(child, nullptr, 0);
                ++forks;
            }
            sleep_ns(3'000'000);
        }
        end.wait();
    }

    void churn_threads()
    {
        start.wait();
        while (!stop_helpers.load()) {
            std::thread([] {}).join();
            ++threads_created;
            sleep_ns(2'000'000);
        }
        end.wait();
    }

    int thread_count() const
    {
        return options.emitters + options.signals + options.forks + options.churn;
    }

    // Blocked in the kernel, with switch counts that no longer move.
    void wait_blocked()
    {
        for (int index = 0; index < options.emitters; ++index) {
            long before;
            do {
                before = context_switches(getpid(), tids[index]);
                sleep_ns(2'000'000);
            } while (task_state(tids[index]) != 'S' ||
                     context_switches(getpid(), tids[index]) != before);
        }
    }
};

Workload::Workload(const WorkloadOptions &options, trace_event_id_t event_id)
    : impl_(std::make_unique<Impl>())
{
    impl_->options = options;
    g_event_id = event_id;
    for (auto &handled : g_handled)
        handled = 0;
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &action, nullptr);
}

Workload::~Workload() = default;

void Workload::prepare()
{
    Impl &w = *impl_;
    for (int index = 0; index < w.options.emitters; ++index) {
        w.threads.emplace_back([&w, index] { w.emit(index); });
        w.handles[index] = w.threads.back().native_handle();
    }
    if (w.options.signals)
        w.threads.emplace_back([&w] { w.signal_emitters(); });
    if (w.options.forks)
        w.threads.emplace_back([&w] { w.fork_children(); });
    if (w.options.churn)
        w.threads.emplace_back([&w] { w.churn_threads(); });
    w.start.wait_for(w.thread_count());
    w.wait_blocked();
    for (int index = 0; index < w.options.emitters; ++index)
        w.switches_before[index] = context_switches(getpid(), w.tids[index]);
}

void Workload::go()
{
    impl_->start.open();
}

void Workload::finish()
{
    Impl &w = *impl_;
    w.stop_helpers = true;
    sleep_ns(2'000'000); // signals sent are delivered while the emitters run
    w.stop_emitters = true;
    w.end.wait_for(w.thread_count());
    w.wait_blocked();
}

WorkloadCounts Workload::release()
{
    Impl &w = *impl_;
    WorkloadCounts counts;
    counts.emitters = w.options.emitters;
    counts.pid = getpid();
    for (int index = 0; index < w.options.emitters; ++index) {
        counts.tids[index] = w.tids[index];
        counts.switches[index] =
            context_switches(getpid(), w.tids[index]) - w.switches_before[index];
    }
    w.end.open();
    for (auto &thread : w.threads)
        thread.join();
    for (int index = 0; index < w.options.emitters; ++index) {
        counts.emitted[index] = w.emitted[index];
        counts.handled[index] = g_handled[index].load();
    }
    counts.forks = w.forks;
    counts.threads_created = w.threads_created;
    return counts;
}

CpuHogs::CpuHogs()
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < cpus; ++cpu) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                asm volatile("" ::: "memory");
        }
        if (pid > 0)
            pids_.push_back(pid);
    }
}

CpuHogs::~CpuHogs()
{
    for (pid_t pid : pids_) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
}

} // namespace stress
