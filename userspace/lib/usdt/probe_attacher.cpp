#include "usdt/probe_attacher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <posix_trace/events.h>
#include <posix_trace/usdt.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <functional>
#include <limits>

#include "usdt/pending_libraries.hpp"
#include "util/elf_file.hpp"
#include "util/elf_symbols.hpp"

namespace posixtrace {
namespace {

// Device and inode name a file while it exists; an inode freed and given
// to a new file (ext4 does so at once) is told apart by its birth time,
// where the file system keeps one.
std::optional<ProbeAttacher::FileId> identify(const ProcessFile &file)
{
    struct statx st;
    if (statx(file.fd.get(), "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &st) != 0)
        return std::nullopt;
    uint64_t birth_ns = st.stx_mask & STATX_BTIME
                            ? uint64_t(st.stx_btime.tv_sec) * 1'000'000'000 + st.stx_btime.tv_nsec
                            : 0;
    return ProbeAttacher::FileId{makedev(st.stx_dev_major, st.stx_dev_minor), st.stx_ino, birth_ns};
}

// The tracer, not the object, ran out of something.
bool is_resource_error(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM;
}

// The sites of PROVIDER:NAME in an object: one attachment covers them all.
UsdtSites sites_of(const std::vector<UsdtProbe> &probes, const std::string &provider,
                   const std::string &name)
{
    UsdtSites sites;
    for (const auto &probe : probes)
        if (probe.provider == provider && probe.name == name)
            sites.push_back(&probe);
    return sites;
}

} // namespace

std::string interpreter_of(const std::string &executable)
{
    ElfFile elf(executable);
    if (!elf.valid())
        return {};
    size_t count = 0;
    if (elf_getphdrnum(elf.get(), &count) != 0)
        return {};
    for (size_t i = 0; i < count; ++i) {
        GElf_Phdr header;
        if (!gelf_getphdr(elf.get(), int(i), &header) || header.p_type != PT_INTERP)
            continue;
        if (header.p_filesz > PATH_MAX)
            return {};
        std::string path = elf.read(header.p_offset, header.p_filesz);
        return path.substr(0, path.find('\0'));
    }
    return {};
}

bool ProbeAttacher::may_attach(const UsdtProbe &probe) const
{
    if (probe.provider == "posix_trace")
        return true;
    return std::any_of(specs_.begin(), specs_.end(), [&](const std::string &spec) {
        return usdt_spec_matches(spec, probe.provider, probe.name);
    });
}

std::shared_ptr<const std::vector<UsdtProbe>>
ProbeAttacher::probes_of(const FileId &file, const std::string &path, int &resource_error)
{
    resource_error = 0;
    if (auto found = notes_.find(file); found != notes_.end())
        return found->second;
    std::vector<UsdtProbe> all;
    int err = read_usdt_probes(path, all);
    if (is_resource_error(err)) {
        resource_error = err; // not the object's fault: read again next time
        return nullptr;
    }
    // Otherwise an object without notes, or with notes we cannot read, has no probes.
    auto kept = std::make_shared<std::vector<UsdtProbe>>();
    for (auto &probe : all)
        if (may_attach(probe))
            kept->push_back(std::move(probe));
    notes_.emplace(file, kept);
    return kept;
}

// Each object counts the traced processes that map it: a process's scan
// changes only its own objects' counts.
void ProbeAttacher::remember_mapped(pid_t pid, std::set<FileId> files)
{
    std::set<FileId> &before = mapped_[pid];
    for (const FileId &file : files)
        if (!before.count(file))
            ++mappers_[file];
    for (const FileId &file : before)
        if (!files.count(file) && --mappers_[file] == 0)
            forget_object(file);
    before = std::move(files);
}

// An object gone whose probes were not attached is scanned anew if it
// comes back; one with attachments stays scanned (its uprobes stay).
void ProbeAttacher::forget_object(const FileId &file)
{
    mappers_.erase(file);
    notes_.erase(file);
    for (auto at = scanned_.lower_bound(Placement{file, std::numeric_limits<pid_t>::min()});
         at != scanned_.end() && at->file == file;)
        at = with_links_.count(*at) ? std::next(at) : scanned_.erase(at);
}

const std::vector<std::string> &ProbeAttacher::pending_libraries_of(pid_t pid)
{
    auto found = pending_.find(pid);
    if (found == pending_.end())
        found = pending_.emplace(pid, pending_libraries(pid)).first;
    return found->second;
}

// One object open at a time: a process may map thousands, more than the
// descriptors the tracer may hold. A file that exists but cannot be opened
// for want of descriptors or memory is said to the user, like an attach that
// failed; one gone meanwhile is not.
int ProbeAttacher::for_each_object(pid_t pid, const std::function<int(const MappedObject &)> &visit)
{
    std::set<FileId> seen;
    size_t visited = 0;
    auto visit_file = [&](std::optional<ProcessFile> file, const std::string &name) {
        if (!file) {
            if (is_resource_error(errno))
                note_unattached(scope_of(pid), name, errno);
            return 0;
        }
        auto id = identify(*file);
        if (!id)
            return 0;
        FileId file_id = *id;
        if (!seen.insert(file_id).second)
            return 0;
        ++visited;
        int read_error;
        auto probes = probes_of(file_id, file->path(), read_error);
        if (!probes) {
            note_unattached(scope_of(pid), name, read_error);
            return 0;
        }
        return visit(MappedObject{std::move(*file), {file_id, scope_of(pid)}, std::move(probes)});
    };
    // Cut short by an error, the scan saw only some objects: the others are
    // kept as mapped until a whole scan says otherwise.
    auto stop = [&](int err) {
        if (auto before = mapped_.find(pid); before != mapped_.end())
            seen.insert(before->second.begin(), before->second.end());
        remember_mapped(pid, std::move(seen));
        return err;
    };
    static_assert(kMaxMappedExecutables == POSIX_TRACE_USDT_MAX_OBJECTS);
    bool cut_short = false;
    auto mappings = list_mapped_executables(pid, &cut_short);
    if (cut_short) // the objects past the limit are not looked at
        note_unattached(scope_of(pid), "(more mapped objects)", ENOSPC);
    for (const auto &mapping : mappings) {
        errno = 0;
        if (int err = visit_file(open_mapping(pid, mapping.start, mapping.end, mapping.name),
                                 mapping.name))
            return stop(err);
    }
    if (mappings.empty())
        return ESRCH;
    for (const auto &path : pending_libraries_of(pid)) {
        errno = 0;
        if (int err = visit_file(open_in_root(pid, path), path))
            return stop(err);
    }
    remember_mapped(pid, std::move(seen));
    return visited ? 0 : ESRCH;
}

void ProbeAttacher::note_unattached(pid_t scope, const std::string &name, int err)
{
    unattached_.insert({scope, name});
    if (!unattached_error_)
        unattached_error_ = err;
}

bool ProbeAttacher::leave_user_events_of(pid_t pid, const std::string &path)
{
    auto file = open_in_root(pid, path);
    auto id = file ? identify(*file) : std::nullopt;
    if (id)
        user_events_elsewhere_ = Placement{*id, scope_of(pid)};
    return id.has_value();
}

int ProbeAttacher::attach_fixed_probes(const MappedObject &object,
                                       std::optional<FileId> interpreter)
{
    if (!scanned_.insert(object.placement).second)
        return 0;
    pid_t scope = object.placement.scope;
    if (interpreter == object.placement.file) // best effort: dlopen discovery
        if (auto hook = symbol_file_offset(object.file.path(), "_dl_debug_state"))
            if (kernel_.attach_link_map_hook(scope, object.file.path(), *hook) == 0)
                with_links_.insert(object.placement);
    // One attachment per probe name covers every site of it.
    bool names = false, events = false;
    int err = 0;
    for (const auto &probe : *object.probes) {
        if (probe.provider != "posix_trace")
            continue;
        if (probe.name == "eventid_open" && !names) {
            names = true; // names in-band: best effort, memory is the fallback
            if (kernel_.attach_user_name_probe(
                    scope, object.file.path(),
                    sites_of(*object.probes, probe.provider, probe.name)) == 0)
                with_links_.insert(object.placement);
        } else if (probe.name == "event" && !events && object.placement != user_events_elsewhere_) {
            // Any build of libposixtrace: each site is read as its note says.
            events = true;
            err = probe.parsed.size() != 4
                      ? ENOEXEC
                      : kernel_.attach_user_event_probe(
                            scope, object.file.path(),
                            sites_of(*object.probes, probe.provider, probe.name));
            if (!err)
                with_links_.insert(object.placement);
        }
    }
    return err;
}

int ProbeAttacher::attach_spec(const MappedObject &object, const std::string &spec, bool &matched,
                               size_t &attached)
{
    for (const auto &probe : *object.probes) {
        if (!usdt_spec_matches(spec, probe.provider, probe.name))
            continue;
        matched = true;
        std::string key = probe.provider + ":" + probe.name;
        if (usdt_attached_.count({object.placement, key}))
            continue; // another site of a probe already attached
        auto [slot, added] = usdt_ids_.try_emplace(key, POSIX_TRACE_USDT_EVENT_FIRST +
                                                            trace_event_id_t(usdt_names_.size()));
        if (added) {
            if (slot->second >= POSIX_TRACE_EVENT_ID_LIMIT) {
                usdt_ids_.erase(slot);
                return ENOSPC;
            }
            usdt_names_.push_back(key);
        }
        if (int err = kernel_.attach_usdt_probe(
                object.placement.scope, object.file.path(),
                sites_of(*object.probes, probe.provider, probe.name), slot->second))
            return err;
        usdt_attached_.insert({object.placement, key});
        with_links_.insert(object.placement);
        ++attached;
    }
    return 0;
}

int ProbeAttacher::refresh(pid_t pid)
{
    if (!first_scanned_) {
        first_scanned_ = pid;
        first_scanned_pidfd_.reset(int(syscall(SYS_pidfd_open, pid, 0)));
    }
    // The dynamic linker the executable names, as the process resolves it.
    std::optional<FileId> interpreter;
    if (auto file = open_in_root(pid, interpreter_of("/proc/" + std::to_string(pid) + "/exe")))
        interpreter = identify(*file);
    int first_error = 0;
    int err = for_each_object(pid, [&](const MappedObject &object) {
        int object_error = attach_fixed_probes(object, interpreter);
        for (const auto &spec : specs_) {
            bool matched = false;
            size_t attached = 0;
            if (int spec_error = attach_spec(object, spec, matched, attached); !object_error)
                object_error = spec_error;
        }
        if (object_error) { // said to the user (unattached()); the other objects get theirs
            note_unattached(object.placement.scope, object.file.name, object_error);
            if (!first_error)
                first_error = object_error;
        }
        return 0;
    });
    return err ? err : first_error;
}

int ProbeAttacher::add_usdt_spec(pid_t pid, const std::string &spec, size_t &attached)
{
    attached = 0;
    bool matched = false;
    specs_.push_back(spec);
    notes_.clear(); // what was read kept only the probes of the specs before
    int err = for_each_object(pid, [&](const MappedObject &object) {
        return attach_spec(object, spec, matched, attached);
    });
    if (!err && !matched)
        err = ENOENT;
    if (err)
        specs_.pop_back();
    return err;
}

void ProbeAttacher::forget(pid_t pid)
{
    pending_.erase(pid);
    remember_mapped(pid, {});
    mapped_.erase(pid);
    if (system_wide_)
        return; // attachments are shared by every traced process
    std::erase_if(scanned_, [pid](const Placement &p) { return p.scope == pid; });
    std::erase_if(with_links_, [pid](const Placement &p) { return p.scope == pid; });
    std::erase_if(usdt_attached_, [pid](const auto &entry) { return entry.first.scope == pid; });
}

bool ProbeAttacher::reusable() const
{
    pollfd exited{first_scanned_pidfd_.get(), POLLIN, 0}; // readable once it exited
    return !system_wide_ && specs_.empty() && usdt_names_.empty() && usdt_attached_.empty() &&
           unattached_.empty() && processes() == std::vector<pid_t>{first_scanned_} &&
           first_scanned_pidfd_ && poll(&exited, 1, 0) == 0;
}

std::vector<pid_t> ProbeAttacher::processes() const
{
    std::set<pid_t> known;
    for (const auto &[pid, files] : mapped_)
        known.insert(pid);
    for (const auto &[pid, libraries] : pending_)
        known.insert(pid);
    return {known.begin(), known.end()};
}

std::optional<trace_event_id_t> ProbeAttacher::usdt_id(const std::string &name) const
{
    auto found = usdt_ids_.find(name);
    if (found == usdt_ids_.end())
        return std::nullopt;
    return found->second;
}

std::optional<std::string> ProbeAttacher::usdt_name(trace_event_id_t id) const
{
    if (id < POSIX_TRACE_USDT_EVENT_FIRST ||
        id - POSIX_TRACE_USDT_EVENT_FIRST >= usdt_names_.size())
        return std::nullopt;
    return usdt_names_[id - POSIX_TRACE_USDT_EVENT_FIRST];
}

} // namespace posixtrace
