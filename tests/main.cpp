#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>

// A child of fork of this process (many threads: the streams' drains among
// them) may find the sanitizer's allocator locked by a thread the fork left
// behind, and LeakSanitizer's check at the child's exit() would wait on that
// lock for ever. The children skip that check; the test process keeps it.
namespace {
bool in_child_of_fork = false;
const bool children_marked = [] {
    pthread_atfork(nullptr, nullptr, [] { in_child_of_fork = true; });
    return true;
}();
} // namespace

extern "C" int __lsan_is_turned_off()
{
    return in_child_of_fork;
}
#endif
