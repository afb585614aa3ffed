#include "kernel/kernel_program.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "posixtrace.h"
#include "posixtrace.skel.h"
#include "usdt/usdt_notes.hpp"

namespace posixtrace {
namespace {

int quiet_libbpf_print(enum libbpf_print_level level, const char *format, va_list args)
{
    static const bool verbose = std::getenv("POSIXTRACE_DEBUG") != nullptr;
    if (!verbose && level != LIBBPF_WARN)
        return 0;
    if (!verbose)
        return 0; // libbpf warnings become our error codes; keep stderr clean
    return std::vfprintf(stderr, format, args);
}

void configure_libbpf_once()
{
    static std::once_flag once;
    std::call_once(once, [] { libbpf_set_print(quiet_libbpf_print); });
}

} // namespace

void KernelProgram::SkeletonDeleter::operator()(posixtrace_bpf *skeleton) const
{
    posixtrace_bpf__destroy(skeleton);
}

void KernelProgram::LinkDeleter::operator()(bpf_link *link) const
{
    bpf_link__destroy(link);
}

int KernelProgram::load(const Config &config, std::unique_ptr<KernelProgram> &out)
{
    configure_libbpf_once();
    auto program = std::make_unique<KernelProgram>(config);

    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0)
        return errno_from(cpus);

    program->skeleton_.reset(posixtrace_bpf__open());
    if (!program->skeleton_)
        return errno_from(-errno);
    posixtrace_bpf *skel = program->skeleton_.get();

    for (int cpu = 0; cpu < cpus; ++cpu) {
        UniqueFd ring(
            bpf_map_create(BPF_MAP_TYPE_RINGBUF, "pt_ring", 0, 0, config.ring_bytes, nullptr));
        if (!ring)
            return errno_from(-errno);
        program->ring_fds_.push_back(std::move(ring));
    }
    bpf_map__set_max_entries(skel->maps.rings, cpus);
    bpf_map__set_max_entries(skel->maps.cpu_states, cpus);
    bpf_map__set_inner_map_fd(skel->maps.rings, program->ring_fds_[0].get());
    program->size_loop_rings(cpus);
    program->choose_tracepoint_programs();
    // Smaller TD tables, to reach their limits (TD_NOCAPAB, TD_DBERR) in tests.
    if (unsigned threads = program->choices_.td_max_threads)
        bpf_map__set_max_entries(skel->maps.td_threads, threads);
    if (unsigned processes = program->choices_.td_max_processes)
        bpf_map__set_max_entries(skel->maps.td_processes, processes);
    if (int err = posixtrace_bpf__load(skel))
        return errno_from(err);
    if (int err = program->fill_ring_table())
        return err;

    if (int err = program->map_cpu_states())
        return err;
    if (int err = program->map_loop_rings())
        return err;
    skel->bss->max_data_size = config.max_data_size;
    skel->bss->wakeup_threshold = config.ring_bytes / 4;
    if (int err = program->attach_kernel_event_programs())
        return err;
    out = std::move(program);
    return 0;
}

// Each update of a map of maps waits for an RCU grace period (8-14 ms on
// a VM), so the rings go in as one batch: since Linux 6.8 a batch waits
// once, however many CPUs. Kernels without batches for this map type take
// them one by one.
int KernelProgram::fill_ring_table()
{
    int table = bpf_map__fd(skeleton_->maps.rings);
    std::vector<__u32> keys(ring_fds_.size()), fds(ring_fds_.size());
    for (size_t cpu = 0; cpu < ring_fds_.size(); ++cpu) {
        keys[cpu] = __u32(cpu);
        fds[cpu] = __u32(ring_fds_[cpu].get());
    }
    __u32 count = __u32(keys.size());
    if (bpf_map_update_batch(table, keys.data(), fds.data(), &count, nullptr) == 0 &&
        count == keys.size())
        return 0;
    for (size_t cpu = 0; cpu < keys.size(); ++cpu)
        if (bpf_map_update_elem(table, &keys[cpu], &fds[cpu], BPF_ANY))
            return errno_from(-errno);
    return 0;
}

KernelProgram::~KernelProgram()
{
    // Links first: no program may run while the rings go away.
    // Each uprobe detached costs the kernel two RCU grace periods under a
    // global mutex (event_mutex): about 0.1 s a probe site on a VM, however
    // many threads close them (measured; docs/security.md).
    thread_event_groups_.clear();
    probe_links_.clear();
    links_.clear();
    if (cpu_states_)
        munmap(cpu_states_, cpu_states_bytes_);
    if (loop_rings_)
        munmap(loop_rings_, loop_rings_mapped_);
}

int KernelProgram::map_cpu_states()
{
    static_assert(sizeof(pt_cpu_state) == 64, "one cache line per CPU");
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    cpu_states_bytes_ = (sizeof(pt_cpu_state) * ring_fds_.size() + page - 1) / page * page;
    void *mapped = mmap(nullptr, cpu_states_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED,
                        bpf_map__fd(skeleton_->maps.cpu_states), 0);
    if (mapped == MAP_FAILED)
        return errno_from(-errno);
    cpu_states_ = static_cast<pt_cpu_state *>(mapped);
    return 0;
}

void KernelProgram::reset_switch_chains()
{
    for (size_t cpu = 0; cpu < ring_fds_.size(); ++cpu)
        __atomic_store_n(&cpu_states_[cpu].switch_seen, 0u, __ATOMIC_RELAXED);
}

// Images are numbered by the kernel side too (new_image()): both take the
// next number of one counter, atomically.
int KernelProgram::trace_process(pid_t tgid)
{
    uint32_t image = __atomic_add_fetch(&skeleton_->bss->last_image, 1, __ATOMIC_SEQ_CST);
    if (skeleton_->bss->primary_tgid == 0) {
        __atomic_store_n(&skeleton_->bss->primary_image, image, __ATOMIC_SEQ_CST);
        __atomic_store_n(&skeleton_->bss->primary_tgid, uint32_t(tgid), __ATOMIC_SEQ_CST);
        return 0;
    }
    __u32 key = tgid, value = image;
    if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.traced_processes), &key, &value, BPF_ANY))
        return errno_from(-errno);
    skeleton_->bss->other_processes_traced = 1;
    return 0;
}

namespace {
// Tracepoints whose type the kernel's BTF describes (btf_trace_NAME), found
// once a process: each lookup through libbpf parses the whole of the
// kernel's BTF (5 MB, tens of milliseconds), once per tracepoint per stream.
bool kernel_describes_tracepoint(const char *name)
{
    static const std::set<std::string> described = [] {
        std::set<std::string> found;
        std::unique_ptr<btf, decltype(&btf__free)> kernel(btf__load_vmlinux_btf(), btf__free);
        if (!kernel)
            return found;
        const std::string prefix = "btf_trace_";
        for (__u32 id = 1; id < btf__type_cnt(kernel.get()); ++id) {
            const btf_type *type = btf__type_by_id(kernel.get(), id);
            if (!btf_is_typedef(type))
                continue;
            const char *type_name = btf__name_by_offset(kernel.get(), type->name_off);
            if (type_name && std::string_view(type_name).starts_with(prefix))
                found.emplace(type_name + prefix.size());
        }
        return found;
    }();
    return described.count(name) != 0;
}
} // namespace

void KernelProgram::choose_tracepoint_programs()
{
    const bool force_raw = choices_.raw_tracepoints;
    auto &progs = skeleton_->progs;
    struct Pair {
        const char *tracepoint;
        bpf_program *btf, *raw;
    } pairs[] = {
        {"sched_switch", progs.td_sched_switch, progs.td_sched_switch_raw},
        {"sched_wakeup", progs.td_sched_wakeup, progs.td_sched_wakeup_raw},
        {"sched_wakeup_new", progs.td_sched_wakeup_new, progs.td_sched_wakeup_new_raw},
        {"signal_deliver", progs.td_signal_deliver, progs.td_signal_deliver_raw},
        {"sched_pi_setprio", progs.td_pi_setprio, progs.td_pi_setprio_raw},
        {"sched_process_free", progs.td_process_free, progs.td_process_free_raw},
        {"sched_process_fork", progs.process_fork, progs.process_fork_raw},
        {"sched_process_exec", progs.process_exec, progs.process_exec_raw},
        {"sched_process_exit", progs.process_exit, progs.process_exit_raw},
    };
    for (const Pair &pair : pairs) {
        bool use_btf = !force_raw && kernel_describes_tracepoint(pair.tracepoint);
        bpf_program__set_autoload(pair.btf, use_btf);
        bpf_program__set_autoload(pair.raw, !use_btf);
    }
}

bpf_program *KernelProgram::chosen(bpf_program *btf, bpf_program *raw)
{
    return bpf_program__autoload(btf) ? btf : raw;
}

int KernelProgram::attach_kernel_event_programs()
{
    auto &progs = skeleton_->progs;
    define_thread_event_groups();
    for (bpf_program *program : {chosen(progs.process_fork, progs.process_fork_raw),
                                 chosen(progs.process_exec, progs.process_exec_raw),
                                 chosen(progs.process_exit, progs.process_exit_raw)}) {
        bpf_link *link = bpf_program__attach(program);
        if (!link)
            return errno_from(-errno);
        links_.emplace_back(link);
    }
    return 0;
}

namespace {
constexpr uint32_t td_bit(unsigned event)
{
    return 1u << (event - 1);
}
} // namespace

void KernelProgram::define_thread_event_groups()
{
    auto &progs = skeleton_->progs;
    auto group = [this](uint32_t events, std::vector<bpf_program *> programs) {
        thread_event_groups_.push_back(ProgramGroup{events, std::move(programs), {}});
    };
    group(td_bit(PT_TD_SWITCHTO) | td_bit(PT_TD_SWITCHFROM) | td_bit(PT_TD_SLEEP) |
              td_bit(PT_TD_PREEMPT) | td_bit(PT_TD_IDLE),
          {chosen(progs.td_sched_switch, progs.td_sched_switch_raw)});
    group(td_bit(PT_TD_READY), {chosen(progs.td_sched_wakeup, progs.td_sched_wakeup_raw),
                                chosen(progs.td_sched_wakeup_new, progs.td_sched_wakeup_new_raw)});
    group(td_bit(PT_TD_CATCHSIG), {chosen(progs.td_signal_deliver, progs.td_signal_deliver_raw)});
    group(td_bit(PT_TD_LOCK_TRY) | td_bit(PT_TD_TIMEOUT),
          {progs.td_futex_enter, progs.td_futex_exit});
    group(td_bit(PT_TD_PRI_INHERIT), {chosen(progs.td_pi_setprio, progs.td_pi_setprio_raw)});
    group(td_bit(PT_TD_REAP), {chosen(progs.td_process_free, progs.td_process_free_raw)});
}

int KernelProgram::select_thread_event_programs(uint32_t wanted)
{
    for (auto &group : thread_event_groups_) {
        bool attach = (group.events & wanted) != 0;
        if (!attach) {
            group.links.clear();
            continue;
        }
        if (!group.links.empty())
            continue;
        if (group.events & td_bit(PT_TD_SWITCHTO))
            reset_switch_chains();
        for (bpf_program *program : group.programs) {
            bpf_link *link = bpf_program__attach(program);
            if (!link) {
                int err = errno_from(-errno);
                group.links.clear();
                return err;
            }
            group.links.emplace_back(link);
        }
    }
    return 0;
}

void KernelProgram::set_inherit_children(bool inherit)
{
    __atomic_store_n(&skeleton_->bss->inherit_children, uint32_t(inherit), __ATOMIC_SEQ_CST);
}

int KernelProgram::attach_link_map_hook(pid_t pid, const std::string &binary, uint64_t offset)
{
    if (!descriptors_left_for(1))
        return EMFILE;
    LIBBPF_OPTS(bpf_uprobe_opts, options, .bpf_cookie = probe_cookie(0));
    bpf_link *link = bpf_program__attach_uprobe_opts(skeleton_->progs.link_map_changed, pid,
                                                     binary.c_str(), offset, &options);
    if (!link)
        return errno_from(-errno);
    probe_links_.emplace_back(link);
    return 0;
}

int KernelProgram::attach_user_event_probe(pid_t pid, const std::string &binary,
                                           const UsdtSites &sites)
{
    return attach_usdt_sites(skeleton_->progs.user_event, pid, binary, sites, 0);
}

int KernelProgram::attach_user_name_probe(pid_t pid, const std::string &binary,
                                          const UsdtSites &sites)
{
    return attach_usdt_sites(skeleton_->progs.user_event_name, pid, binary, sites, 0);
}

int KernelProgram::attach_usdt_probe(pid_t pid, const std::string &binary, const UsdtSites &sites,
                                     trace_event_id_t event_id)
{
    return attach_usdt_sites(skeleton_->progs.usdt_event, pid, binary, sites, event_id);
}

// Each site attached holds two descriptors (its perf event and its link).
// Attaching stops while kDescriptorReserve remain, so that the stream can
// still read a process's maps and notes and say what it did not attach.
bool KernelProgram::descriptors_left_for(size_t sites)
{
    constexpr size_t kDescriptorReserve = 64;
    rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return true;
    size_t open_now = 0;
    if (DIR *directory = opendir("/proc/self/fd")) {
        while (readdir(directory))
            ++open_now;
        closedir(directory);
    }
    return open_now + 2 * sites + kDescriptorReserve <= limit.rlim_cur;
}

int KernelProgram::attach_usdt_sites(bpf_program *program, pid_t pid, const std::string &binary,
                                     const UsdtSites &sites, uint64_t event_id)
{
    if (sites.size() > PT_USDT_MAX_SITES - usdt_sites_attached_)
        return ENOSPC;
    if (!descriptors_left_for(sites.size()))
        return EMFILE;
    // Every site's layout first: a site that cannot be read costs no
    // attachment of the others (a detach costs the kernel two RCU grace
    // periods each).
    std::vector<uint32_t> indexes;
    for (const UsdtProbe *site : sites) {
        int err = 0;
        auto index = spec_index(*site, event_id, err);
        if (!index)
            return err;
        indexes.push_back(*index);
    }
    std::vector<Link> attached;
    for (size_t i = 0; i < sites.size(); ++i) {
        // By offsets computed from our own read of the file: libbpf opens
        // no traced file (a file truncated under a mapping reader faults it).
        LIBBPF_OPTS(bpf_uprobe_opts, options, .ref_ctr_offset = size_t(sites[i]->semaphore_offset),
                    .bpf_cookie = probe_cookie(indexes[i]));
        bpf_link *link = bpf_program__attach_uprobe_opts(program, pid, binary.c_str(),
                                                         size_t(*sites[i]->site_offset), &options);
        if (!link)
            return errno_from(-errno);
        attached.emplace_back(link);
    }
    for (auto &link : attached)
        probe_links_.push_back(std::move(link));
    usdt_sites_attached_ += sites.size();
    return 0;
}

namespace {
uint8_t pt_register_of(const std::string &name)
{
    static const char *const names[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                        "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    for (size_t i = 0; i < std::size(names); ++i)
        if (name == names[i])
            return uint8_t(PT_REG_AX + i);
    return PT_REG_NONE;
}

// The BPF side's form of a site's arguments; false for one it cannot read.
bool usdt_spec_of(const UsdtProbe &site, uint64_t event_id, pt_usdt_spec &spec)
{
    spec = {};
    spec.event_id = event_id;
    if (!site.site_offset || site.parsed.size() > PT_USDT_MAX_ARGS ||
        (site.parsed.empty() && !site.arguments.empty()))
        return false;
    spec.arg_count = uint32_t(site.parsed.size());
    for (size_t i = 0; i < site.parsed.size(); ++i) {
        const UsdtArgument &argument = site.parsed[i];
        pt_usdt_arg &arg = spec.args[i];
        int bytes = argument.size < 0 ? -argument.size : argument.size;
        if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
            return false;
        arg.size = int8_t(argument.size);
        arg.value = argument.value;
        if (argument.kind == UsdtArgument::Kind::Constant) {
            arg.kind = PT_USDT_ARG_CONSTANT;
            continue;
        }
        arg.kind = argument.kind == UsdtArgument::Kind::Register ? PT_USDT_ARG_REGISTER
                                                                 : PT_USDT_ARG_MEMORY;
        arg.reg = pt_register_of(argument.reg);
        if (arg.reg == PT_REG_NONE)
            return false; // %rip-relative and the like
    }
    return true;
}
} // namespace

std::optional<uint32_t> KernelProgram::spec_index(const UsdtProbe &site, uint64_t event_id,
                                                  int &err)
{
    pt_usdt_spec spec;
    if (!usdt_spec_of(site, event_id, spec)) {
        err = ENOEXEC;
        return std::nullopt;
    }
    std::string key(reinterpret_cast<const char *>(&spec), sizeof spec);
    if (auto found = usdt_spec_indexes_.find(key); found != usdt_spec_indexes_.end())
        return found->second;
    if (usdt_spec_indexes_.size() >= PT_USDT_MAX_SPECS) {
        err = ENOSPC;
        return std::nullopt;
    }
    uint32_t index = uint32_t(usdt_spec_indexes_.size());
    if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.usdt_specs), &index, &spec, BPF_ANY)) {
        err = errno_from(-errno);
        return std::nullopt;
    }
    usdt_spec_indexes_.emplace(std::move(key), index);
    return index;
}

void KernelProgram::set_usdt_string_argument(trace_event_id_t event_id,
                                             std::optional<unsigned> index)
{
    uint8_t value = index ? uint8_t(*index + 1) : 0;
    __atomic_store_n(&skeleton_->bss->usdt_string_arg[event_id - POSIX_TRACE_USDT_EVENT_FIRST],
                     value, __ATOMIC_RELAXED);
}

void KernelProgram::set_state(pt_stream_state state)
{
    __atomic_store_n(&skeleton_->bss->stream_state, uint32_t(state), __ATOMIC_SEQ_CST);
}

void KernelProgram::set_filter(const trace_event_set_t &filtered)
{
    static_assert(sizeof(filtered.__bits) == sizeof(skeleton_->bss->event_filter));
    for (size_t i = 0; i < PT_FILTER_WORDS; ++i)
        __atomic_store_n(&skeleton_->bss->event_filter[i], filtered.__bits[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

bool KernelProgram::traces_process(pid_t tgid) const
{
    return image_of(tgid) != PT_IMAGE_NONE;
}

uint32_t KernelProgram::image_of(pid_t tgid) const
{
    if (uint32_t(tgid) == __atomic_load_n(&skeleton_->bss->primary_tgid, __ATOMIC_SEQ_CST))
        return __atomic_load_n(&skeleton_->bss->primary_image, __ATOMIC_SEQ_CST);
    __u32 key = tgid, value;
    if (bpf_map_lookup_elem(bpf_map__fd(skeleton_->maps.traced_processes), &key, &value) != 0)
        return PT_IMAGE_NONE;
    return value;
}

KernelProgram::RunningImages KernelProgram::running_images() const
{
    RunningImages running;
    uint32_t primary = __atomic_load_n(&skeleton_->bss->primary_tgid, __ATOMIC_SEQ_CST);
    if (primary != 0 && primary != PT_PRIMARY_ENDED)
        running.by_process[pid_t(primary)] =
            __atomic_load_n(&skeleton_->bss->primary_image, __ATOMIC_SEQ_CST);
    // A key deleted meanwhile (an exit) sends the walk back to the start:
    // bounded, and each process listed once.
    int fd = bpf_map__fd(skeleton_->maps.traced_processes);
    __u32 key = 0, next, image;
    for (size_t steps = 0; steps < 2 * PT_MAX_TRACED_PROCESSES; ++steps) {
        if (bpf_map_get_next_key(fd, steps ? &key : nullptr, &next) != 0) {
            running.complete = true;
            break;
        }
        key = next;
        if (bpf_map_lookup_elem(fd, &key, &image) == 0 && image != PT_IMAGE_NONE)
            running.by_process[pid_t(key)] = image;
    }
    return running;
}

uint64_t KernelProgram::sum_over_cpus(__u64 pt_cpu_state::*counter) const
{
    uint64_t total = 0;
    for (size_t cpu = 0; cpu < ring_fds_.size(); ++cpu)
        total += __atomic_load_n(&(cpu_states_[cpu].*counter), __ATOMIC_ACQUIRE);
    return total;
}

uint64_t KernelProgram::ring_full_on(int cpu) const
{
    return __atomic_load_n(&cpu_states_[cpu].lost, __ATOMIC_ACQUIRE);
}

int KernelProgram::loss_notices_fd() const
{
    return bpf_map__fd(skeleton_->maps.loss_notices);
}

uint64_t KernelProgram::unreported_switches() const
{
    return sum_over_cpus(&pt_cpu_state::unreported_switches);
}

uint64_t KernelProgram::refused_while_full() const
{
    return sum_over_cpus(&pt_cpu_state::refused_full);
}

uint64_t KernelProgram::untraced_children() const
{
    return sum_over_cpus(&pt_cpu_state::untraced_children);
}

uint64_t KernelProgram::lifecycle_lost() const
{
    return sum_over_cpus(&pt_cpu_state::lifecycle_lost);
}

namespace {
// Calls `each(program, misses)` for every loaded program.
template <class Each> void for_each_loaded_program(bpf_object *object, Each each)
{
    bpf_program *program;
    bpf_object__for_each_program(program, object)
    {
        int fd = bpf_program__fd(program);
        if (fd < 0)
            continue; // not loaded (the unused one of a tp_btf / raw_tp pair)
        bpf_prog_info info{};
        __u32 length = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &length) == 0)
            each(program, uint64_t(info.recursion_misses));
    }
}
} // namespace

std::vector<KernelProgram::ProgramMisses> KernelProgram::recursion_misses() const
{
    std::vector<ProgramMisses> misses;
    for_each_loaded_program(skeleton_->obj, [&](bpf_program *program, uint64_t count) {
        misses.push_back({bpf_program__name(program), count - misses_before(program)});
    });
    return misses;
}

uint64_t KernelProgram::misses_before(const bpf_program *program) const
{
    auto before = misses_before_.find(std::string_view(bpf_program__name(program)));
    return before == misses_before_.end() ? 0 : before->second;
}

void KernelProgram::count_misses_from_now()
{
    misses_before_.clear();
    misses_before_total_ = 0;
    for_each_loaded_program(skeleton_->obj, [&](bpf_program *program, uint64_t count) {
        misses_before_[bpf_program__name(program)] = count;
        misses_before_total_ += count;
    });
}

uint64_t KernelProgram::recursion_misses_total() const
{
    uint64_t total = 0; // allocates nothing: the drain thread reads it while the process may fork
    for_each_loaded_program(skeleton_->obj, [&](bpf_program *, uint64_t count) { total += count; });
    return total - misses_before_total_;
}

} // namespace posixtrace
