#pragma once
#include <posix_trace/events.h>
#include <sys/types.h>
#include <trace.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "posixtrace.h"
#include "util/unique_fd.hpp"

struct posixtrace_bpf;
struct bpf_link;
struct bpf_program;

namespace posixtrace {

struct UsdtProbe;
using UsdtSites = std::vector<const UsdtProbe *>;

// The kernel half of one stream: its loaded BPF object (from the embedded
// skeleton), one ring buffer per possible CPU, and the probes it is attached
// to. Steering (running flag, filter, data size) goes through the mmapped
// globals, so it takes effect without a system call.
class KernelProgram {
public:
    struct LinkDeleter {
        void operator()(bpf_link *link) const;
    };
    using Link = std::unique_ptr<bpf_link, LinkDeleter>;

    // The uprobes a stream attached, taken from their program by
    // retire_probes(): detached when this is destroyed.
    struct RetiredProbes {
        std::vector<Link> links;
    };

    struct Config {
        size_t ring_bytes;      // per CPU, a power of two multiple of the page size
        uint32_t max_data_size; // bytes of user data copied per event
        // POSIX_TRACE_LOOP: the data bytes of each CPU's loop ring (a power
        // of two, at least PT_LOOP_CHUNK_BYTES); 0 for other streams.
        size_t loop_ring_bytes = 0;
    };

    // 0, or EPERM (no privilege to load BPF), ENOMEM, or another errno.
    static int load(const Config &config, std::unique_ptr<KernelProgram> &out);
    explicit KernelProgram(const Config &config) : config_(config), choices_(LoadChoices::now()) {}
    ~KernelProgram();

    // ---- between streams (kernel_program_idle.cpp): a program outlives its
    // stream when the next stream of the process can take it as it is.
    // Whether this program is what load(config) would make now.
    bool loaded_as(const Config &config) const;
    // Suspends it and forgets every process, thread table entry, filter and
    // count of its stream; its probes stay attached and fire for nothing.
    void go_idle();
    // Readies an idle program for a new stream: `config`'s data size, the
    // counts zero again, no primary target yet (trace_process sets it).
    void prepare_for(const Config &config);
    // Makes every uprobe attached so far fire for nothing from now on (the
    // BPF side checks the generation in its cookie) and hands them over, to
    // be detached off the caller's path; the program then has none, and
    // the whole budget of USDT sites and layouts again.
    RetiredProbes retire_probes();

    // The first process traced is the stream's primary target (a cheaper
    // check in the kernel); later ones (inheritance) go to a hash map.
    int trace_process(pid_t tgid);
    // POSIX_TRACE_INHERITED: the kernel adds the children of traced
    // processes to the traced set at fork.
    void set_inherit_children(bool inherit);

    // The attach calls below take the process to attach in, or kAllProcesses:
    // the probe then fires in every process that maps `binary`, and the BPF
    // side keeps only the traced ones (how children are traced from their
    // first instruction).
    static constexpr pid_t kAllProcesses = -1;

    // The USDT attach calls take the sites of one probe in `binary` (a
    // file the caller opened and read: `binary` names that very file), each
    // attached by its own offsets, so nothing else parses the file. Each
    // site is read by its own argument layout. A stream attaches at most
    // PT_USDT_MAX_SITES sites and PT_USDT_MAX_SPECS layouts in all: ENOSPC
    // past that; ENOEXEC for a site whose note cannot be attached (an
    // argument the BPF side cannot read, no offset in the file).

    // posix_trace_event()'s probe (posix_trace:event) in process `pid`.
    int attach_user_event_probe(pid_t pid, const std::string &binary, const UsdtSites &sites);
    // libposixtrace's posix_trace:eventid_open probe: names in-band.
    int attach_user_name_probe(pid_t pid, const std::string &binary, const UsdtSites &sites);

    // Attaches the link-map hook at file offset `offset` of the dynamic
    // linker `binary` (its _dl_debug_state).
    int attach_link_map_hook(pid_t pid, const std::string &binary, uint64_t offset);

    // A probe the user asked for (PROVIDER:NAME); its records carry `event_id`.
    int attach_usdt_probe(pid_t pid, const std::string &binary, const UsdtSites &sites,
                          trace_event_id_t event_id);

    // Argument `index` of USDT event type `event_id` points to a string the
    // kernel copies into the record (nullopt: none).
    void set_usdt_string_argument(trace_event_id_t event_id, std::optional<unsigned> index);

    void set_state(pt_stream_state state);
    void set_filter(const trace_event_set_t &filtered);

    // Attaches the thread event programs that produce the TD events in
    // `wanted` (bit n-1 for TD event n) and detaches the others: a program
    // runs for every context switch, wake-up or futex call of the system,
    // and the futex syscall tracepoints slow every system call down, so
    // only what may be recorded is attached. 0 or an errno.
    int select_thread_event_programs(uint32_t wanted);

    // Whether the kernel side traces process `tgid` now.
    bool traces_process(pid_t tgid) const;
    // The image process `tgid` runs now (posixtrace.h), or PT_IMAGE_NONE
    // when it is not traced.
    uint32_t image_of(pid_t tgid) const;
    // Every process the kernel side traces now, with the image it runs;
    // `complete` false when exits kept sending the walk of the table back
    // to its start and it gave up (some may be missing).
    struct RunningImages {
        std::map<pid_t, uint32_t> by_process;
        bool complete = false;
    };
    RunningImages running_images() const;

    // ---- thread events: thread_db's masks and message buffers, in maps.
    // A process gets thread_db's reporting rule once it has an entry.
    int set_td_process(pid_t tgid, const pt_td_process &process);
    void remove_td_process(pid_t tgid);
    std::optional<pt_td_process> td_process(pid_t tgid) const;
    // 0, E2BIG (the per-thread table is full), or another errno.
    int set_td_thread(pid_t tid, const pt_td_thread &thread);
    std::optional<pt_td_thread> td_thread(pid_t tid) const;
    void remove_td_threads_of(pid_t tgid);
    // Takes (reads and removes, atomically) thread `tid`'s message.
    std::optional<pt_td_message> take_td_message(pid_t tid);
    // Takes the message of some thread of process `tgid`.
    std::optional<std::pair<pid_t, pt_td_message>> take_any_td_message(pid_t tgid);

    int cpu_count() const { return int(ring_fds_.size()); }
    int ring_fd(int cpu) const { return ring_fds_[cpu].get(); }
    size_t ring_bytes() const { return config_.ring_bytes; }

    // A LOOP stream's loop rings (posixtrace.h), mapped: one CPU's entry
    // (its struct pt_loop_ring_meta, then its data), or nullptr for other
    // streams; and the key of their headers' tags.
    const uint8_t *loop_ring(int cpu) const
    {
        return loop_rings_ ? loop_rings_ + size_t(cpu) * loop_entry_bytes() : nullptr;
    }
    size_t loop_ring_bytes() const { return config_.loop_ring_bytes; }
    uint64_t loop_tag_key() const { return loop_tag_key_; }

    // What the kernel side could not record, read from the mmapped per-CPU
    // states (no system call); both only grow. One CPU's records that found
    // its ring full:
    uint64_t ring_full_on(int cpu) const;
    // Sum over CPUs of the thread events of context switches the kernel did
    // not report.
    uint64_t unreported_switches() const;
    // The ring of struct pt_loss_notice, where runs of those losses began.
    int loss_notices_fd() const;
    // Sum over CPUs of the events refused while the stream was full
    // (PT_STREAM_FULL).
    uint64_t refused_while_full() const;
    // Sum over CPUs of the children left untraced because the table of
    // traced processes was full.
    uint64_t untraced_children() const;
    // Sum over CPUs of the lifecycle records that found no room, notices
    // included. Only grows.
    uint64_t lifecycle_lost() const;

    // Program runs the kernel skipped (bpf_prog_info.recursion_misses: the
    // program was already running on that CPU) since the stream began, per
    // attached program.
    struct ProgramMisses {
        std::string program;
        uint64_t misses;
    };
    std::vector<ProgramMisses> recursion_misses() const;
    // Their sum, without naming them (the drain thread's periodic read).
    uint64_t recursion_misses_total() const;

private:
    // An errno for a libbpf error (negative or not; EIO when it is 0).
    static int errno_from(int libbpf_error)
    {
        int e = libbpf_error < 0 ? -libbpf_error : libbpf_error;
        return e ? e : EIO;
    }
    static bool descriptors_left_for(size_t sites);
    // One counter of the mmapped per-CPU states, summed over the CPUs.
    uint64_t sum_over_cpus(__u64 pt_cpu_state::*counter) const;
    // Every site of one probe, within the stream's budget; all or none.
    int attach_usdt_sites(bpf_program *program, pid_t pid, const std::string &binary,
                          const UsdtSites &sites, uint64_t event_id);
    // The usdt_specs index of a site's layout, added when new; nullopt
    // when the BPF side cannot read it or the map is full (`err`).
    std::optional<uint32_t> spec_index(const UsdtProbe &site, uint64_t event_id, int &err);
    struct SkeletonDeleter {
        void operator()(posixtrace_bpf *skeleton) const;
    };
    int attach_kernel_event_programs();
    int fill_ring_table();
    int map_cpu_states();
    // kernel_program_loop.cpp: sizes the loop rings before the load, maps
    // them and keys their tags after it.
    void size_loop_rings(int cpus);
    int map_loop_rings();
    size_t loop_entry_bytes() const
    {
        return PT_LOOP_META_BYTES + config_.loop_ring_bytes + PT_LOOP_SLACK_BYTES;
    }
    // Forgets what the switch program knew of each CPU's last switch, before
    // it is attached again (the switches in between were not seen).
    void reset_switch_chains();
    // Keeps, of each tp_btf program and its raw_tp twin, the one this kernel
    // can load (tp_btf when its BTF has the tracepoint's type, unless
    // POSIXTRACE_RAW_TRACEPOINTS is set); called between open and load.
    void choose_tracepoint_programs();
    // The chosen one of a pair.
    static bpf_program *chosen(bpf_program *btf, bpf_program *raw);

    struct ProgramGroup {
        uint32_t events; // TD events the programs produce
        std::vector<bpf_program *> programs;
        std::vector<Link> links; // empty: detached
    };
    void define_thread_event_groups();

    // What the environment chose at load (tests shrink tables with it): a
    // program loaded under other choices is not reused.
    struct LoadChoices {
        bool raw_tracepoints = false;
        unsigned td_max_threads = 0; // 0: the BPF object's own size
        unsigned td_max_processes = 0;
        static LoadChoices now();
        bool operator==(const LoadChoices &) const = default;
    };
    void zero_cpu_counts();
    void count_misses_from_now();
    uint64_t misses_before(const bpf_program *program) const;

    Config config_;
    LoadChoices choices_;
    // Each program's recursion misses when the stream began (a program
    // reused from an earlier stream has some), by name.
    std::map<std::string, uint64_t, std::less<>> misses_before_;
    uint64_t misses_before_total_ = 0;
    std::vector<ProgramGroup> thread_event_groups_;
    std::unique_ptr<posixtrace_bpf, SkeletonDeleter> skeleton_;
    std::vector<UniqueFd> ring_fds_;
    pt_cpu_state *cpu_states_ = nullptr; // mmapped, one per CPU
    size_t cpu_states_bytes_ = 0;
    uint8_t *loop_rings_ = nullptr; // mmapped, one entry per CPU (LOOP streams)
    size_t loop_rings_mapped_ = 0;
    uint64_t loop_tag_key_ = 0;
    // The uprobe's cookie for a site whose layout is at `spec_index`.
    uint64_t probe_cookie(uint32_t spec_index) const
    {
        return uint64_t(probe_generation_) << 32 | spec_index;
    }

    std::vector<Link> links_;        // the process lifecycle tracepoints
    std::vector<Link> probe_links_;  // uprobes, in the traced processes' objects
    uint32_t probe_generation_ = 0;  // as in the BPF side's globals
    size_t usdt_sites_attached_ = 0; // released only with the probes (retire_probes)
    std::map<std::string, uint32_t> usdt_spec_indexes_; // a pt_usdt_spec's bytes -> its index
};

} // namespace posixtrace
