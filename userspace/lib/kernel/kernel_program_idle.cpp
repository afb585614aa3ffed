// KernelProgram between two streams of one process: idle, then ready again.
// Reusing a loaded program spares the next stream the verifier and the ring
// table's grace period, and spares the ending one its probes' detachment;
// what it must not carry over is anything its first stream knew.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdlib>

#include "kernel/kernel_program.hpp"
#include "posixtrace.h"
#include "posixtrace.skel.h"

namespace posixtrace {
namespace {

unsigned positive_number_in(const char *variable)
{
    const char *value = std::getenv(variable);
    int number = value ? std::atoi(value) : 0;
    return number > 0 ? unsigned(number) : 0;
}

// Every map emptied here is keyed by a 32-bit id. The programs delete
// entries meanwhile (a thread's exit forgets its futex wait), so a key
// gone before its delete is no reason to stop; they add none (nothing is
// traced), and the walk is bounded anyway.
void delete_every_entry(const bpf_map *map)
{
    int fd = bpf_map__fd(map);
    __u32 key;
    for (size_t left = 2 * size_t(bpf_map__max_entries(map));
         left > 0 && bpf_map_get_next_key(fd, nullptr, &key) == 0; --left)
        bpf_map_delete_elem(fd, &key);
}

} // namespace

KernelProgram::LoadChoices KernelProgram::LoadChoices::now()
{
    LoadChoices choices;
    choices.raw_tracepoints = std::getenv("POSIXTRACE_RAW_TRACEPOINTS") != nullptr;
    choices.td_max_threads = positive_number_in("POSIXTRACE_TD_MAX_THREADS");
    choices.td_max_processes = positive_number_in("POSIXTRACE_TD_MAX_PROCESSES");
    return choices;
}

bool KernelProgram::loaded_as(const Config &config) const
{
    return config.ring_bytes == config_.ring_bytes &&
           config.loop_ring_bytes == config_.loop_ring_bytes && choices_ == LoadChoices::now();
}

// Suspended first: from then on the programs record no event (a notice
// about a process still traced may come: the next stream drops what is
// stamped before it), and with no process traced they fill no table.
void KernelProgram::go_idle()
{
    set_state(PT_STREAM_SUSPENDED);
    set_inherit_children(false);
    set_filter(trace_event_set_t{});
    auto *globals = skeleton_->bss;
    // PT_PRIMARY_ENDED matches no process, where 0 would be the idle task's.
    __atomic_store_n(&globals->primary_tgid, PT_PRIMARY_ENDED, __ATOMIC_SEQ_CST);
    __atomic_store_n(&globals->primary_image, PT_IMAGE_NONE, __ATOMIC_SEQ_CST);
    for (auto &string_argument : globals->usdt_string_arg)
        __atomic_store_n(&string_argument, uint8_t(0), __ATOMIC_RELAXED);
    auto &maps = skeleton_->maps;
    for (const bpf_map *map : {maps.traced_processes, maps.td_processes, maps.td_threads,
                               maps.td_messages, maps.futex_waits})
        delete_every_entry(map);
    __atomic_store_n(&globals->other_processes_traced, 0u, __ATOMIC_SEQ_CST);
}

// Nothing counts while idle (no process is traced): the counts are zeroed
// once, here.
void KernelProgram::prepare_for(const Config &config)
{
    config_.max_data_size = config.max_data_size;
    skeleton_->bss->max_data_size = config.max_data_size;
    zero_cpu_counts();
    count_misses_from_now();
    // With no image yet, 0 matches nothing until trace_process() sets both.
    __atomic_store_n(&skeleton_->bss->primary_tgid, 0u, __ATOMIC_SEQ_CST);
}

// The layouts of the retired probes stay in usdt_specs, overwritten as new
// ones come: a retired probe that fires no longer reads its layout.
KernelProgram::RetiredProbes KernelProgram::retire_probes()
{
    __atomic_store_n(&skeleton_->bss->probe_generation, ++probe_generation_, __ATOMIC_SEQ_CST);
    RetiredProbes retired{std::move(probe_links_)};
    probe_links_.clear();
    usdt_sites_attached_ = 0;
    usdt_spec_indexes_.clear();
    return retired;
}

// Every word of the per-CPU states, whatever fields they grow: the counts
// are the stream's (its losses, its refusals), and the switch chains start
// again, as when the switch program is attached anew.
void KernelProgram::zero_cpu_counts()
{
    static_assert(sizeof(pt_cpu_state) % sizeof(__u64) == 0);
    auto *words = reinterpret_cast<__u64 *>(cpu_states_);
    for (size_t i = 0; i < ring_fds_.size() * sizeof(pt_cpu_state) / sizeof(__u64); ++i)
        __atomic_store_n(&words[i], __u64(0), __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

} // namespace posixtrace
