// Throws and catches N exceptions (libstdc++'s libstdcxx:throw and
// libstdcxx:catch probes fire for each), then exits 0.
#include <cstdlib>
#include <stdexcept>

int main(int argc, char **argv)
{
    int count = argc > 1 ? std::atoi(argv[1]) : 100;
    int caught = 0;
    for (int i = 0; i < count; ++i) {
        try {
            throw std::runtime_error("posixtrace test");
        } catch (const std::exception &) {
            ++caught;
        }
    }
    return caught == count ? 0 : 1;
}
