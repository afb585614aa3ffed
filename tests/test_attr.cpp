// posix_trace_attr_*: defaults, round trips, every EINVAL case.
#include <catch2/catch.hpp>
#include <posix_trace/events.h>
#include <trace.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

struct InitialisedAttr {
    trace_attr_t attr;
    InitialisedAttr() { REQUIRE(posix_trace_attr_init(&attr) == 0); }
    ~InitialisedAttr() { posix_trace_attr_destroy(&attr); }
};

size_t round8(size_t n)
{
    return (n + 7) & ~size_t(7);
}

} // namespace

TEST_CASE("attr: defaults after posix_trace_attr_init", "[attr]")
{
    InitialisedAttr a;
    char name[TRACE_NAME_MAX] = "x";
    REQUIRE(posix_trace_attr_getname(&a.attr, name) == 0);
    CHECK(std::string(name).empty());

    int value = 0;
    REQUIRE(posix_trace_attr_getinherited(&a.attr, &value) == 0);
    CHECK(value == POSIX_TRACE_CLOSE_FOR_CHILD);
    REQUIRE(posix_trace_attr_getstreamfullpolicy(&a.attr, &value) == 0);
    CHECK(value == POSIX_TRACE_LOOP);
    REQUIRE(posix_trace_attr_getlogfullpolicy(&a.attr, &value) == 0);
    CHECK(value == POSIX_TRACE_LOOP);

    size_t size = 0;
    REQUIRE(posix_trace_attr_getstreamsize(&a.attr, &size) == 0);
    CHECK(size == 8u << 20);
    REQUIRE(posix_trace_attr_getmaxdatasize(&a.attr, &size) == 0);
    CHECK(size == 1024);
    REQUIRE(posix_trace_attr_getlogsize(&a.attr, &size) == 0);
    CHECK(size == 64u << 20);

    timespec created{1, 1};
    REQUIRE(posix_trace_attr_getcreatetime(&a.attr, &created) == 0);
    CHECK(created.tv_sec == 0);
    CHECK(created.tv_nsec == 0);

    char version[TRACE_NAME_MAX];
    REQUIRE(posix_trace_attr_getgenversion(&a.attr, version) == 0);
    CHECK(std::string(version) == "posixtrace 0.1.0");

    timespec resolution{}, expected{};
    REQUIRE(posix_trace_attr_getclockres(&a.attr, &resolution) == 0);
    REQUIRE(clock_getres(CLOCK_MONOTONIC, &expected) == 0);
    CHECK(resolution.tv_sec == expected.tv_sec);
    CHECK(resolution.tv_nsec == expected.tv_nsec);
    CHECK((resolution.tv_sec > 0 || resolution.tv_nsec > 0));
}

TEST_CASE("attr: name round trip and truncation to TRACE_NAME_MAX - 1", "[attr]")
{
    InitialisedAttr a;
    char name[TRACE_NAME_MAX];
    REQUIRE(posix_trace_attr_setname(&a.attr, "my-trace") == 0);
    REQUIRE(posix_trace_attr_getname(&a.attr, name) == 0);
    CHECK(std::string(name) == "my-trace");

    std::string long_name(TRACE_NAME_MAX + 20, 'n');
    REQUIRE(posix_trace_attr_setname(&a.attr, long_name.c_str()) == 0);
    REQUIRE(posix_trace_attr_getname(&a.attr, name) == 0);
    CHECK(std::string(name) == long_name.substr(0, TRACE_NAME_MAX - 1));

    CHECK(posix_trace_attr_setname(&a.attr, nullptr) == EINVAL);
}

TEST_CASE("attr: policies accept the POSIX values only", "[attr]")
{
    InitialisedAttr a;
    int value = 0;

    for (int ok : {POSIX_TRACE_INHERITED, POSIX_TRACE_CLOSE_FOR_CHILD}) {
        REQUIRE(posix_trace_attr_setinherited(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getinherited(&a.attr, &value) == 0);
        CHECK(value == ok);
    }
    for (int bad : {0, 99, -1}) {
        CHECK(posix_trace_attr_setinherited(&a.attr, bad) == EINVAL);
        REQUIRE(posix_trace_attr_getinherited(&a.attr, &value) == 0);
        CHECK(value == POSIX_TRACE_CLOSE_FOR_CHILD);
    }

    for (int ok : {POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_FLUSH, POSIX_TRACE_LOOP}) {
        REQUIRE(posix_trace_attr_setstreamfullpolicy(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getstreamfullpolicy(&a.attr, &value) == 0);
        CHECK(value == ok);
    }
    for (int bad : {POSIX_TRACE_APPEND, 0, 42}) {
        CHECK(posix_trace_attr_setstreamfullpolicy(&a.attr, bad) == EINVAL);
        REQUIRE(posix_trace_attr_getstreamfullpolicy(&a.attr, &value) == 0);
        CHECK(value == POSIX_TRACE_LOOP);
    }

    for (int ok : {POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_APPEND, POSIX_TRACE_LOOP}) {
        REQUIRE(posix_trace_attr_setlogfullpolicy(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getlogfullpolicy(&a.attr, &value) == 0);
        CHECK(value == ok);
    }
    for (int bad : {POSIX_TRACE_FLUSH, 0}) {
        CHECK(posix_trace_attr_setlogfullpolicy(&a.attr, bad) == EINVAL);
        REQUIRE(posix_trace_attr_getlogfullpolicy(&a.attr, &value) == 0);
        CHECK(value == POSIX_TRACE_LOOP);
    }
}

TEST_CASE("attr: sizes round trip within their bounds", "[attr]")
{
    InitialisedAttr a;
    size_t size = 0;

    for (size_t ok : {size_t(4096), size_t(1) << 20, size_t(1) << 30}) {
        REQUIRE(posix_trace_attr_setstreamsize(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getstreamsize(&a.attr, &size) == 0);
        CHECK(size == ok);
    }
    CHECK(posix_trace_attr_setstreamsize(&a.attr, 4095) == EINVAL);
    CHECK(posix_trace_attr_setstreamsize(&a.attr, (size_t(1) << 30) + 1) == EINVAL);
    REQUIRE(posix_trace_attr_getstreamsize(&a.attr, &size) == 0);
    CHECK(size == size_t(1) << 30);

    for (size_t ok : {size_t(0), size_t(1), size_t(8192)}) {
        REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getmaxdatasize(&a.attr, &size) == 0);
        CHECK(size == ok);
    }
    CHECK(posix_trace_attr_setmaxdatasize(&a.attr, 8193) == EINVAL);

    for (size_t ok : {size_t(4096), size_t(1) << 40}) {
        REQUIRE(posix_trace_attr_setlogsize(&a.attr, ok) == 0);
        REQUIRE(posix_trace_attr_getlogsize(&a.attr, &size) == 0);
        CHECK(size == ok);
    }
    CHECK(posix_trace_attr_setlogsize(&a.attr, 4095) == EINVAL);
}

TEST_CASE("attr: event sizes follow the record layout", "[attr]")
{
    InitialisedAttr a;
    size_t size = 0;
    // frame header, record, data padded to 8, and the 8 bytes of namespace
    // ids the kernel adds for a thread of a container
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, 0, &size) == 0);
    CHECK(size == 64);
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, 1, &size) == 0);
    CHECK(size == 72);
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, 64, &size) == 0);
    CHECK(size == 128);

    size_t previous = 0;
    for (size_t len = 0; len < 2000; len += 7) {
        REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, len, &size) == 0);
        CHECK(size >= previous);
        CHECK(size == round8(8 + 48 + std::min<size_t>(len, 1024)) + 8);
        previous = size;
    }

    REQUIRE(posix_trace_attr_setmaxdatasize(&a.attr, 100) == 0);
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, 5000, &size) == 0);
    CHECK(size == 168);

    size_t system = 0, smallest_user = 0;
    REQUIRE(posix_trace_attr_getmaxsystemeventsize(&a.attr, &system) == 0);
    CHECK(system == round8(8 + 48 + sizeof(posix_trace_filter_data)));
    REQUIRE(posix_trace_attr_getmaxusereventsize(&a.attr, 0, &smallest_user) == 0);
    CHECK(system >= smallest_user);
}

TEST_CASE("attr: a copied object is a working object", "[attr]")
{
    InitialisedAttr a;
    REQUIRE(posix_trace_attr_setname(&a.attr, "copied") == 0);
    REQUIRE(posix_trace_attr_setstreamsize(&a.attr, 65536) == 0);
    trace_attr_t copy;
    std::memcpy(&copy, &a.attr, sizeof copy);
    char name[TRACE_NAME_MAX];
    size_t size = 0;
    REQUIRE(posix_trace_attr_getname(&copy, name) == 0);
    CHECK(std::string(name) == "copied");
    REQUIRE(posix_trace_attr_getstreamsize(&copy, &size) == 0);
    CHECK(size == 65536);
    REQUIRE(posix_trace_attr_destroy(&copy) == 0);
}

TEST_CASE("attr: null, never initialised and destroyed objects give EINVAL", "[attr]")
{
    trace_attr_t zeroed, garbage, destroyed;
    std::memset(&zeroed, 0, sizeof zeroed);
    std::memset(&garbage, 0xab, sizeof garbage);
    REQUIRE(posix_trace_attr_init(&destroyed) == 0);
    REQUIRE(posix_trace_attr_destroy(&destroyed) == 0);

    CHECK(posix_trace_attr_init(nullptr) == EINVAL);
    for (trace_attr_t *bad :
         {static_cast<trace_attr_t *>(nullptr), &zeroed, &garbage, &destroyed}) {
        int value;
        size_t size;
        timespec ts;
        char text[TRACE_NAME_MAX];
        CHECK(posix_trace_attr_destroy(bad) == EINVAL);
        CHECK(posix_trace_attr_getclockres(bad, &ts) == EINVAL);
        CHECK(posix_trace_attr_getcreatetime(bad, &ts) == EINVAL);
        CHECK(posix_trace_attr_getgenversion(bad, text) == EINVAL);
        CHECK(posix_trace_attr_getname(bad, text) == EINVAL);
        CHECK(posix_trace_attr_setname(bad, "x") == EINVAL);
        CHECK(posix_trace_attr_getinherited(bad, &value) == EINVAL);
        CHECK(posix_trace_attr_setinherited(bad, POSIX_TRACE_INHERITED) == EINVAL);
        CHECK(posix_trace_attr_getlogfullpolicy(bad, &value) == EINVAL);
        CHECK(posix_trace_attr_setlogfullpolicy(bad, POSIX_TRACE_LOOP) == EINVAL);
        CHECK(posix_trace_attr_getstreamfullpolicy(bad, &value) == EINVAL);
        CHECK(posix_trace_attr_setstreamfullpolicy(bad, POSIX_TRACE_LOOP) == EINVAL);
        CHECK(posix_trace_attr_getlogsize(bad, &size) == EINVAL);
        CHECK(posix_trace_attr_setlogsize(bad, 1 << 20) == EINVAL);
        CHECK(posix_trace_attr_getmaxdatasize(bad, &size) == EINVAL);
        CHECK(posix_trace_attr_setmaxdatasize(bad, 16) == EINVAL);
        CHECK(posix_trace_attr_getstreamsize(bad, &size) == EINVAL);
        CHECK(posix_trace_attr_setstreamsize(bad, 1 << 20) == EINVAL);
        CHECK(posix_trace_attr_getmaxsystemeventsize(bad, &size) == EINVAL);
        CHECK(posix_trace_attr_getmaxusereventsize(bad, 8, &size) == EINVAL);
    }

    // After destroy the object can be initialised again.
    REQUIRE(posix_trace_attr_init(&destroyed) == 0);
    int value = 0;
    CHECK(posix_trace_attr_getinherited(&destroyed, &value) == 0);
    posix_trace_attr_destroy(&destroyed);
}

TEST_CASE("attr: null output pointers give EINVAL", "[attr]")
{
    InitialisedAttr a;
    CHECK(posix_trace_attr_getclockres(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getcreatetime(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getgenversion(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getname(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getinherited(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getlogfullpolicy(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getstreamfullpolicy(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getlogsize(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getmaxdatasize(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getstreamsize(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getmaxsystemeventsize(&a.attr, nullptr) == EINVAL);
    CHECK(posix_trace_attr_getmaxusereventsize(&a.attr, 8, nullptr) == EINVAL);
}
