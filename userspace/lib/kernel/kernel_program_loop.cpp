// The loop rings of a POSIX_TRACE_LOOP stream (posixtrace.h): sized before
// the load, mapped after it.
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "kernel/kernel_program.hpp"
#include "posixtrace.skel.h"

namespace posixtrace {

void KernelProgram::size_loop_rings(int cpus)
{
    if (!config_.loop_ring_bytes)
        return;
    skeleton_->rodata->loop_ring_bytes = config_.loop_ring_bytes;
    bpf_map__set_value_size(skeleton_->maps.loop_rings, uint32_t(loop_entry_bytes()));
    bpf_map__set_max_entries(skeleton_->maps.loop_rings, uint32_t(cpus));
}

// The key makes a header count only where a program of this stream wrote
// it: traced processes cannot read it, so their data cannot pass for one.
int KernelProgram::map_loop_rings()
{
    if (!config_.loop_ring_bytes)
        return 0;
    if (getrandom(&loop_tag_key_, sizeof loop_tag_key_, 0) != sizeof loop_tag_key_)
        return errno_from(-errno);
    __atomic_store_n(&skeleton_->bss->loop_tag_key, loop_tag_key_, __ATOMIC_SEQ_CST);
    size_t bytes = loop_entry_bytes() * ring_fds_.size();
    void *mapped =
        mmap(nullptr, bytes, PROT_READ, MAP_SHARED, bpf_map__fd(skeleton_->maps.loop_rings), 0);
    if (mapped == MAP_FAILED)
        return errno_from(-errno);
    loop_rings_ = static_cast<uint8_t *>(mapped);
    loop_rings_mapped_ = bytes;
    return 0;
}

} // namespace posixtrace
