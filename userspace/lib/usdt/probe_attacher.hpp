#pragma once
#include <sys/types.h>
#include <trace.h>

#include <compare>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernel/kernel_program.hpp"
#include "stages/process_probes.hpp"
#include "usdt/usdt_notes.hpp"
#include "util/process_files.hpp"
#include "util/unique_fd.hpp"

namespace posixtrace {

// Keeps a stream's probes attached in the objects its traced processes map,
// as those change (exec, dlopen): libposixtrace's posix_trace:event probe,
// the dynamic linker's link-map hook, and the USDT probes the user asked for,
// one event type per PROVIDER:NAME however many objects and sites have it.
class ProbeAttacher final : public ProcessProbes {
public:
    // `system_wide`: attach in every process that maps an object (the BPF
    // side keeps the traced ones), so children are covered from their first
    // instruction; otherwise in the scanned process only.
    ProbeAttacher(KernelProgram &kernel, bool system_wide)
        : kernel_(kernel), system_wide_(system_wide)
    {
    }

    // Attaches what is due in the objects `pid` maps now and, when it is held
    // before its dynamic linker ran, in the libraries it is about to load.
    // 0, ESRCH (no such process, or one that maps nothing: a kernel thread),
    // or the error of attaching the user-event probe.
    int refresh(pid_t pid) override;

    // Attaches the probes matching `spec` ("PROVIDER:NAME", "PROVIDER:*",
    // "*") in `pid`'s objects, and in the objects it maps later. `attached`
    // counts the new (object, probe) attachments. 0, ENOENT (no such probe),
    // ESRCH, ENOSPC (event ids exhausted), or the attach error.
    int add_usdt_spec(pid_t pid, const std::string &spec, size_t &attached);

    std::optional<trace_event_id_t> usdt_id(const std::string &name) const;
    std::optional<std::string> usdt_name(trace_event_id_t id) const;
    size_t usdt_type_count() const { return usdt_names_.size(); }

    // posix_trace_event()'s probe is not attached in `path` as `pid` maps it
    // (the process's lanes carry those events: emit/lanes.hpp). False if the
    // file could not be identified: the probe would then be attached.
    bool leave_user_events_of(pid_t pid, const std::string &path);
    void attach_user_events_everywhere() { user_events_elsewhere_.reset(); }

    // Whether a later stream of the process these probes are in may take
    // them as they are: they are in that process alone, it still runs (the
    // pid names no other process yet), and none was asked for by the user
    // or failed to attach.
    bool reusable() const;
    // The same, for a stream of process `target`.
    bool reusable_for(pid_t target) const { return target == first_scanned_ && reusable(); }
    // Whether posix_trace_event()'s probe is left out (leave_user_events_of).
    bool leaves_user_events() const { return user_events_elsewhere_.has_value(); }

    // Processes scanned so far that are gone may be forgotten.
    void forget(pid_t pid) override;
    // The processes scanned and not forgotten.
    std::vector<pid_t> processes() const;

    // Objects a process loaded later (exec, dlopen) whose probes could not
    // all be attached, and why (the first error): out of descriptors, of
    // probe sites (PT_USDT_MAX_SITES) or of event ids.
    struct Unattached {
        size_t objects = 0;
        int first_error = 0;
    };
    Unattached unattached() const { return {unattached_.size(), unattached_error_}; }

    // An object: its device, inode and the inode's birth time (0 where the
    // file system keeps none).
    struct FileId {
        dev_t device;
        ino_t inode;
        uint64_t birth_ns;
        auto operator<=>(const FileId &) const = default;
    };

private:
    struct Placement { // an object, in one process or in all
        FileId file;
        pid_t scope;
        auto operator<=>(const Placement &) const = default;
    };
    struct MappedObject {
        ProcessFile file; // open while its probes are attached
        Placement placement;
        std::shared_ptr<const std::vector<UsdtProbe>> probes;
    };

    // Calls `visit` with each object `pid` maps and each library it is about
    // to load, until one returns an error (returned). ESRCH: none.
    int for_each_object(pid_t pid, const std::function<int(const MappedObject &)> &visit);
    void note_unattached(pid_t scope, const std::string &name, int err);
    const std::vector<std::string> &pending_libraries_of(pid_t pid);
    // The object's probes the stream may attach (libposixtrace's, and those
    // a spec names), read once while a traced process maps the object;
    // nullptr with `resource_error` set when the tracer lacked descriptors
    // or memory to read them.
    std::shared_ptr<const std::vector<UsdtProbe>>
    probes_of(const FileId &file, const std::string &path, int &resource_error);
    bool may_attach(const UsdtProbe &probe) const;
    // Forgets what was read of objects no traced process maps any more: a
    // process that loads and deletes libraries without end costs the tracer
    // no memory for those gone.
    void remember_mapped(pid_t pid, std::set<FileId> files);
    void forget_object(const FileId &file);
    int attach_fixed_probes(const MappedObject &object, std::optional<FileId> interpreter);
    int attach_spec(const MappedObject &object, const std::string &spec, bool &matched,
                    size_t &attached);
    pid_t scope_of(pid_t pid) const { return system_wide_ ? KernelProgram::kAllProcesses : pid; }

    KernelProgram &kernel_;
    bool system_wide_;
    pid_t first_scanned_ = 0;
    UniqueFd first_scanned_pidfd_;                   // tells whether it still runs
    std::optional<Placement> user_events_elsewhere_; // see leave_user_events_of()
    std::vector<std::string> specs_;
    std::map<FileId, std::shared_ptr<const std::vector<UsdtProbe>>> notes_;
    std::map<pid_t, std::set<FileId>> mapped_; // by each traced process, at its last refresh
    std::map<FileId, size_t> mappers_;         // how many of them map each
    std::set<Placement> scanned_;
    std::set<Placement> with_links_; // objects with a probe attached: scanned for good
    std::set<std::pair<Placement, std::string>> usdt_attached_; // (object, PROVIDER:NAME)
    std::vector<std::string> usdt_names_; // index: id - POSIX_TRACE_USDT_EVENT_FIRST
    std::map<std::string, trace_event_id_t> usdt_ids_;
    std::map<pid_t, std::vector<std::string>> pending_;  // asked once per process
    std::set<std::pair<pid_t, std::string>> unattached_; // (scope, object name)
    int unattached_error_ = 0;
};

// The dynamic linker (PT_INTERP) named by an executable, or "" for a static
// executable or an unreadable file.
std::string interpreter_of(const std::string &executable);

} // namespace posixtrace
