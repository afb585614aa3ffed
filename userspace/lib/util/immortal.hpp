#pragma once
#include <new>
#include <utility>

namespace posixtrace {

// Storage for an object made once and never destroyed, for the library's
// process-wide state. The exit handler shuts the open streams down after the
// function-local statics made later than the stream table are destroyed
// (exit runs them in reverse order of construction), and a library thread
// may still run while the process exits: what either of them uses must
// outlive both. The kernel frees what such an object holds.
template <class T> class Immortal {
public:
    template <class... Args> explicit Immortal(Args &&...args)
    {
        ::new (static_cast<void *>(storage_)) T(std::forward<Args>(args)...);
    }
    Immortal(const Immortal &) = delete;
    Immortal &operator=(const Immortal &) = delete;
    T &get() { return *std::launder(reinterpret_cast<T *>(storage_)); }

private:
    alignas(T) unsigned char storage_[sizeof(T)];
};

} // namespace posixtrace
