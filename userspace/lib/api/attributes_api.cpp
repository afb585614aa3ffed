// C ABI of the posix_trace_attr_* functions: argument checks, then the
// Attributes object does the work.
#include <trace.h>

#include <cerrno>
#include <cstring>

#include "attributes/attributes.hpp"
#include "util/export.hpp"

using posixtrace::Attributes;
using posixtrace::attributes_of;

namespace {

template <typename T, typename Get>
int get_attribute(const trace_attr_t *attr, T *out, Get get)
{
    const Attributes *a = attributes_of(attr);
    if (!a || !out)
        return EINVAL;
    *out = get(*a);
    return 0;
}

template <typename Set>
int set_attribute(trace_attr_t *attr, Set set)
{
    Attributes *a = attributes_of(attr);
    return a ? set(*a) : EINVAL;
}

} // namespace

POSIXTRACE_EXPORT int posix_trace_attr_init(trace_attr_t *attr)
{
    if (!attr)
        return EINVAL;
    posixtrace::store_attributes(attr, Attributes::defaults());
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_attr_destroy(trace_attr_t *attr)
{
    if (!attributes_of(attr))
        return EINVAL;
    posixtrace::erase_attributes(attr);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_attr_getclockres(const trace_attr_t *attr, timespec *res)
{
    return get_attribute(attr, res, [](const Attributes &) { return posixtrace::clock_resolution(); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getcreatetime(const trace_attr_t *attr, timespec *time)
{
    return get_attribute(attr, time, [](const Attributes &a) { return a.create_time; });
}

POSIXTRACE_EXPORT int posix_trace_attr_getgenversion(const trace_attr_t *attr, char *version)
{
    if (!attributes_of(attr) || !version)
        return EINVAL;
    std::strcpy(version, posixtrace::kGenerationVersion);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_attr_getname(const trace_attr_t *attr, char *name)
{
    const Attributes *a = attributes_of(attr);
    if (!a || !name)
        return EINVAL;
    std::memcpy(name, a->name, sizeof a->name);
    return 0;
}

POSIXTRACE_EXPORT int posix_trace_attr_setname(trace_attr_t *attr, const char *name)
{
    return set_attribute(attr, [name](Attributes &a) { return a.set_name(name); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getinherited(const trace_attr_t *__restrict attr,
                                                    int *__restrict policy)
{
    return get_attribute(attr, policy, [](const Attributes &a) { return a.inheritance; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setinherited(trace_attr_t *attr, int policy)
{
    return set_attribute(attr, [policy](Attributes &a) { return a.set_inheritance(policy); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getlogfullpolicy(const trace_attr_t *__restrict attr,
                                                        int *__restrict policy)
{
    return get_attribute(attr, policy, [](const Attributes &a) { return a.log_full_policy; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setlogfullpolicy(trace_attr_t *attr, int policy)
{
    return set_attribute(attr, [policy](Attributes &a) { return a.set_log_full_policy(policy); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getstreamfullpolicy(const trace_attr_t *__restrict attr,
                                                           int *__restrict policy)
{
    return get_attribute(attr, policy, [](const Attributes &a) { return a.stream_full_policy; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setstreamfullpolicy(trace_attr_t *attr, int policy)
{
    return set_attribute(attr,
                         [policy](Attributes &a) { return a.set_stream_full_policy(policy); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getlogsize(const trace_attr_t *__restrict attr,
                                                  size_t *__restrict size)
{
    return get_attribute(attr, size, [](const Attributes &a) { return a.log_size; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setlogsize(trace_attr_t *attr, size_t size)
{
    return set_attribute(attr, [size](Attributes &a) { return a.set_log_size(size); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getmaxdatasize(const trace_attr_t *__restrict attr,
                                                      size_t *__restrict size)
{
    return get_attribute(attr, size, [](const Attributes &a) { return a.max_data_size; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setmaxdatasize(trace_attr_t *attr, size_t size)
{
    return set_attribute(attr, [size](Attributes &a) { return a.set_max_data_size(size); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getstreamsize(const trace_attr_t *__restrict attr,
                                                     size_t *__restrict size)
{
    return get_attribute(attr, size, [](const Attributes &a) { return a.stream_size; });
}

POSIXTRACE_EXPORT int posix_trace_attr_setstreamsize(trace_attr_t *attr, size_t size)
{
    return set_attribute(attr, [size](Attributes &a) { return a.set_stream_size(size); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getmaxsystemeventsize(const trace_attr_t *__restrict attr,
                                                             size_t *__restrict size)
{
    return get_attribute(attr, size,
                         [](const Attributes &) { return posixtrace::max_system_event_size(); });
}

POSIXTRACE_EXPORT int posix_trace_attr_getmaxusereventsize(const trace_attr_t *__restrict attr,
                                                           size_t data_len,
                                                           size_t *__restrict size)
{
    return get_attribute(attr, size, [data_len](const Attributes &a) {
        return posixtrace::max_user_event_size(a, data_len);
    });
}
