#pragma once
// Marks the C ABI of <trace.h> and the extensions: the only symbols the
// library exports (it is built with -fvisibility=hidden).
#define POSIXTRACE_EXPORT extern "C" __attribute__((visibility("default")))
