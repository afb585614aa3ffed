#include "events/stream_user_events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <posix_trace/events.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "events/event_names.hpp"
#include "usdt/pending_libraries.hpp"
#include "usdt/usdt_notes.hpp"

namespace posixtrace {
namespace {

// The ids a process's registry gives (TRACE_USER_EVENT_MAX names).
constexpr trace_event_id_t kLocalIdEnd = POSIX_TRACE_USER_EVENT_FIRST + TRACE_USER_EVENT_MAX;

} // namespace

std::optional<ProcessFile> user_event_object_of(pid_t pid)
{
    for (const auto &mapping : list_mapped_executables(pid))
        if (mapping.name.find("libposixtrace.so") != std::string::npos)
            return open_mapping(pid, mapping.start, mapping.end, mapping.name);
    for (const auto &library : pending_libraries(pid))
        if (library.find("libposixtrace.so") != std::string::npos)
            return open_in_root(pid, library);
    // Linked with libposixtrace.a: the executable has the probe. Its link in
    // /proc is the very file the kernel runs.
    std::string exe = "/proc/" + std::to_string(pid) + "/exe";
    char name[4096];
    ssize_t length = readlink(exe.c_str(), name, sizeof name - 1);
    UniqueFd fd(open(exe.c_str(), O_RDONLY | O_CLOEXEC));
    if (length <= 0 || !fd)
        return std::nullopt;
    ProcessFile file{std::move(fd), std::string(name, size_t(length))};
    std::vector<UsdtProbe> probes;
    if (read_usdt_probes(file.path(), probes) == 0)
        for (const auto &probe : probes)
            if (probe.provider == "posix_trace" && probe.name == "event")
                return file;
    return std::nullopt;
}

StreamUserEvents::StreamUserEvents(pid_t primary, ImageOf image_of, OwnUserEventNames *own_names)
    : primary_(primary), own_names_(own_names), image_of_(std::move(image_of))
{
    auto own = std::make_unique<Numbering>();
    own->reader = primary;
    numberings_.push_back(std::move(own));
}

void StreamUserEvents::set_primary_image(uint32_t image)
{
    numberings_[0]->image = image;
    if (image != PT_IMAGE_NONE)
        numbering_of_image_[image] = 0;
}

// Records come in timestamp order, and the record that makes an image (its
// fork or exec) is stamped before anything the image records: an image not
// known here is one whose record was lost. Its numbering starts empty and
// reads the process's memory while the process runs that image.
size_t StreamUserEvents::index_of(pid_t pid, uint32_t image)
{
    // This process's lanes, or the primary's first image: the usual case,
    // per event, without a lookup.
    if (image == PT_IMAGE_NONE || image == numberings_[0]->image)
        return 0;
    if (auto found = numbering_of_image_.find(image); found != numbering_of_image_.end())
        return found->second;
    auto adopted = std::make_unique<Numbering>();
    adopted->image = image;
    adopted->reader = pid;
    give_numbering(image, std::move(adopted));
    size_t index = numbering_of_image_[image];
    now_runs(pid, image);
    return index;
}

// What the image ran before recorded, it recorded before the record or
// event that tells of the new one: all of it is delivered.
void StreamUserEvents::now_runs(pid_t pid, uint32_t image)
{
    auto [at, added] = image_of_pid_.try_emplace(pid, image);
    if (added || at->second == image)
        return;
    uint32_t previous = at->second;
    at->second = image;
    drop_numbering(previous);
}

void StreamUserEvents::learned(pid_t pid, uint32_t image, trace_event_id_t local_id,
                               std::string name)
{
    // A registry gives ids below kLocalIdEnd only; a forged notice may say
    // anything, and the ids above are the stream's own for exec'd images.
    if (local_id < POSIX_TRACE_USER_EVENT_FIRST || local_id >= kLocalIdEnd || name.empty() ||
        name.size() >= TRACE_EVENT_NAME_MAX)
        return;
    numberings_[index_of(pid, image)]->names[local_id] = std::move(name);
}

// A child numbers its names from a copy of its parent's table (or shares
// it, when the parent traces itself by inheritance): either way, its ids
// are read by name, from what the parent had named.
void StreamUserEvents::forked(pid_t parent, uint32_t parent_image, pid_t child,
                              uint32_t child_image)
{
    if (child_image == PT_IMAGE_NONE)
        return; // not traced
    size_t from_index = index_of(parent, parent_image);
    if (from_index == 0 && own_names_) { // the family shares this process's table
        numbering_of_image_[child_image] = 0;
        now_runs(child, child_image);
        return;
    }
    Numbering &from = *numberings_[from_index];
    auto copy = std::make_unique<Numbering>();
    copy->names = from.names;
    if (from_index == 0)
        for (trace_event_id_t id : ids())
            if (id < POSIX_TRACE_USDT_EVENT_FIRST && !foreign_names_.count(id))
                if (auto name = local_name(from, id))
                    copy->names[id] = *name;
    copy->reader = child;
    copy->image = child_image;
    give_numbering(child_image, std::move(copy));
    now_runs(child, child_image);
}

void StreamUserEvents::execed(pid_t pid, uint32_t image)
{
    if (pid == primary_) // the stream's numbering keeps what it has
        stop_reading(*numberings_[0], names_read(*numberings_[0]));
    auto fresh = std::make_unique<Numbering>();
    fresh->reader = pid;
    fresh->image = image;
    give_numbering(image, std::move(fresh));
    now_runs(pid, image);
}

// Its events are all in (an exit is stamped after them): its numbering goes,
// the stream's ids and names it led to stay.
void StreamUserEvents::exited(pid_t pid, uint32_t image)
{
    drop_numbering(image);
    if (auto found = image_of_pid_.find(pid);
        found != image_of_pid_.end() && found->second == image)
        image_of_pid_.erase(found);
}

void StreamUserEvents::look_again_at_objects()
{
    for (auto &numbering : numberings_)
        if (numbering)
            numbering->object_looked_up = false;
}

std::vector<uint32_t> StreamUserEvents::images_not_in(const std::set<uint32_t> &running) const
{
    std::vector<uint32_t> gone;
    for (const auto &[image, index] : numbering_of_image_)
        if (!running.count(image))
            gone.push_back(image);
    return gone;
}

void StreamUserEvents::drop_images(const std::vector<uint32_t> &images)
{
    std::set<uint32_t> gone(images.begin(), images.end());
    for (uint32_t image : images)
        drop_numbering(image);
    std::erase_if(image_of_pid_, [&](const auto &entry) { return gone.count(entry.second) != 0; });
}

void StreamUserEvents::give_numbering(uint32_t image, std::unique_ptr<Numbering> numbering)
{
    drop_numbering(image);
    // Slots of processes gone are reused: a fork storm does not grow the table.
    auto free_slot = std::find(numberings_.begin() + 1, numberings_.end(), nullptr);
    size_t index = size_t(free_slot - numberings_.begin());
    if (free_slot == numberings_.end())
        numberings_.push_back(std::move(numbering));
    else
        *free_slot = std::move(numbering);
    numbering_of_image_[image] = index;
}

// A numbering other than the stream's belongs to one image: forks and
// execs make new ones. The stream's own stays (its names name the ids).
void StreamUserEvents::drop_numbering(uint32_t image)
{
    auto found = numbering_of_image_.find(image);
    if (found == numbering_of_image_.end())
        return;
    size_t index = found->second;
    numbering_of_image_.erase(found);
    if (index == 0)
        return;
    numberings_[index].reset();
    translated_.erase(translated_.lower_bound({index, 0}), translated_.lower_bound({index + 1, 0}));
}

void StreamUserEvents::objects_changed(uint32_t image)
{
    if (auto found = numbering_of_image_.find(image); found != numbering_of_image_.end())
        numberings_[found->second]->object_looked_up =
            false; // a dlopen may have brought libposixtrace
}

// In-band names first; then the process's memory, while it lives.
std::optional<std::string> StreamUserEvents::local_name(Numbering &numbering,
                                                        trace_event_id_t local_id)
{
    if (auto found = numbering.names.find(local_id); found != numbering.names.end())
        return found->second;
    std::optional<std::string> name;
    if (&numbering == numberings_[0].get() && own_names_)
        name = own_names_->name_of(local_id);
    else if (numbering.reader)
        name = read_memory(numbering, local_id);
    if (name)
        numbering.names[local_id] = *name;
    return name;
}

// A name read from the process's memory is the image's only if the process
// still ran it once the read was done (an exec in between takes the table
// away); what earlier reads found stays known after the process is gone.
// Inside execve, between the new memory and the new number, the new image's
// libraries are not mapped yet and its code has not run: no table of its
// names can be read there.
std::optional<std::string> StreamUserEvents::read_memory(Numbering &numbering,
                                                         trace_event_id_t local_id)
{
    auto kept_name = [&]() -> std::optional<std::string> {
        auto kept = numbering.names.find(local_id);
        return kept == numbering.names.end() ? std::nullopt : std::optional(kept->second);
    };
    if (!still_running(numbering, names_read(numbering)))
        return kept_name(); // what it had read became its names
    if (!numbering.memory && !numbering.object_looked_up) {
        numbering.object_looked_up = true;
        if (auto object = user_event_object_of(numbering.reader))
            numbering.memory =
                std::make_unique<RemoteUserEventNames>(numbering.reader, object->name);
    }
    if (!numbering.memory)
        return std::nullopt;
    size_t read_before = names_read(numbering);
    std::optional<std::string> name = numbering.memory->name_of(local_id);
    return still_running(numbering, read_before) ? name : kept_name();
}

bool StreamUserEvents::still_running(Numbering &numbering, size_t kept)
{
    if (!numbering.reader)
        return false;
    if (numbering.image == PT_IMAGE_NONE || image_of_(numbering.reader) == numbering.image)
        return true;
    stop_reading(numbering, kept);
    return false;
}

size_t StreamUserEvents::names_read(const Numbering &numbering)
{
    return numbering.memory ? numbering.memory->names_read().size() : 0;
}

void StreamUserEvents::stop_reading(Numbering &numbering, size_t kept)
{
    if (numbering.memory) {
        numbering.memory->forget_names_after(kept);
        const auto &read = numbering.memory->names_read();
        for (size_t i = 0; i < read.size(); ++i) // names learned in-band stay first
            numbering.names.emplace(POSIX_TRACE_USER_EVENT_FIRST + trace_event_id_t(i), read[i]);
        numbering.memory.reset();
    }
    numbering.reader = 0;
}

std::optional<trace_event_id_t> StreamUserEvents::primary_id_of(const std::string &name)
{
    Numbering &own = *numberings_[0];
    for (const auto &[id, known] : own.names)
        if (known == name)
            return id;
    for (trace_event_id_t id : ids())
        if (id < POSIX_TRACE_USDT_EVENT_FIRST && !foreign_names_.count(id) &&
            local_name(own, id) == name)
            return id;
    return std::nullopt;
}

// Whether the stream's own numbering may still grow: ids the stream gives
// to names only exec'd images have are then taken from the top of the range.
bool StreamUserEvents::primary_names_itself()
{
    Numbering &own = *numberings_[0];
    local_name(own, POSIX_TRACE_USER_EVENT_FIRST); // looks for its table once
    return own_names_ || own.memory || !own.names.empty();
}

trace_event_id_t StreamUserEvents::stream_id(pid_t pid, uint32_t image, trace_event_id_t local_id)
{
    if (local_id < POSIX_TRACE_USER_EVENT_FIRST || local_id >= POSIX_TRACE_USDT_EVENT_FIRST)
        return local_id; // the BPF side records user ids only
    size_t index = index_of(pid, image);
    if (index == 0)
        return own_id(local_id); // the stream's numbering: the usual case, per event
    auto key = std::pair{index, local_id};
    if (auto known = translated_.find(key); known != translated_.end())
        return known->second;
    auto name = local_name(*numberings_[index], local_id);
    if (!name)
        return POSIX_TRACE_UNNAMED_USEREVENT; // no name anywhere: not to be mistaken for another
    trace_event_id_t id;
    if (auto primary = primary_id_of(*name)) {
        id = *primary;
    } else if (auto foreign = foreign_ids_.find(*name); foreign != foreign_ids_.end()) {
        id = foreign->second;
    } else if (auto free = free_foreign_id()) {
        id = *free;
        foreign_ids_.emplace(*name, id);
        foreign_names_.emplace(id, *name);
    } else {
        return POSIX_TRACE_UNNAMED_USEREVENT; // no id left: unnamed, never another's
    }
    translated_.emplace(key, id);
    return id;
}

// An id of the stream's own numbering stands for itself, whatever its
// process says it is (a forged id included), unless a name of an exec'd
// image has it: then it is unnamed, never that name.
trace_event_id_t StreamUserEvents::own_id(trace_event_id_t id)
{
    if (!foreign_names_.empty() && foreign_names_.count(id))
        return POSIX_TRACE_UNNAMED_USEREVENT;
    own_used_.set(id);
    return id;
}

// An id for a name only exec'd images have: one the stream's own numbering
// has not used, from the top of the user range while that numbering may
// still grow (its registry gives ids from the bottom).
std::optional<trace_event_id_t> StreamUserEvents::free_foreign_id()
{
    auto free = [this](trace_event_id_t id) {
        return !own_used_.test(id) && !foreign_names_.count(id);
    };
    if (primary_names_itself()) {
        for (trace_event_id_t id = POSIX_TRACE_USDT_EVENT_FIRST; id-- > kLocalIdEnd;)
            if (free(id))
                return id;
        return std::nullopt;
    }
    for (trace_event_id_t id = POSIX_TRACE_USER_EVENT_FIRST; id < POSIX_TRACE_USDT_EVENT_FIRST;
         ++id)
        if (free(id))
            return id;
    return std::nullopt;
}

std::optional<std::string> StreamUserEvents::name_of(trace_event_id_t id)
{
    if (auto foreign = foreign_names_.find(id); foreign != foreign_names_.end())
        return foreign->second;
    return local_name(*numberings_[0], id);
}

std::vector<trace_event_id_t> StreamUserEvents::ids()
{
    std::vector<trace_event_id_t> all;
    Numbering &own = *numberings_[0];
    if (own_names_) {
        all = own_names_->ids();
    } else {
        local_name(own, POSIX_TRACE_USER_EVENT_FIRST); // locates the memory reader
        if (own.memory && still_running(own, names_read(own))) {
            size_t read_before = names_read(own);
            all = own.memory->ids();
            if (!still_running(own, read_before))
                all.clear(); // what stays is in own.names, added below
        }
    }
    for (const auto &[id, name] : own.names)
        all.push_back(id);
    for (const auto &[id, name] : foreign_names_)
        all.push_back(id);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
}

int StreamUserEvents::open(const char *name, trace_event_id_t &id)
{
    if (std::strlen(name) >= TRACE_EVENT_NAME_MAX)
        return ENAMETOOLONG;
    if (own_names_)
        return own_names_->open(name, id);
    // Another process's ids are its own: a name it has not registered maps
    // to the unnamed user event.
    if (auto primary = primary_id_of(name))
        id = *primary;
    else if (auto foreign = foreign_ids_.find(name); foreign != foreign_ids_.end())
        id = foreign->second;
    else
        id = POSIX_TRACE_UNNAMED_USEREVENT;
    return 0;
}

} // namespace posixtrace
