#pragma once
#include <string>

namespace posixtrace {

// Path of the object (shared library or executable) that holds `address`
// in this process, for attaching probes to our own code.
std::string object_path_of(const void *address);

} // namespace posixtrace
