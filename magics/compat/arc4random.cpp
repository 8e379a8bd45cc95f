// GCC 12's static libstdc++ (libstdc++.a), built on glibc 2.36, calls arc4random (new in glibc 2.36) from
// std::random_device, which its other objects pull in. The package's binaries link libstdc++ statically
// (CMakeLists.txt, XCUDA_STATIC_CXX_RUNTIME); this definition, compiled into each of them, answers that
// call from getrandom(2) (glibc 2.25), so that nothing in the wheel needs a glibc newer than 2.34
// (README, "The wheel"). Hidden: each binary keeps it to itself.
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include <sys/random.h>

extern "C" __attribute__((visibility("hidden"))) std::uint32_t arc4random() noexcept
{
    std::uint32_t value = 0;
    auto* bytes = reinterpret_cast<unsigned char*>(&value);
    std::size_t got = 0;
    while (got < sizeof value)
    {
        ssize_t n = ::getrandom(bytes + got, sizeof value - got, 0);
        if (n > 0)
        {
            got += static_cast<std::size_t>(n);
        }
        else if (n < 0 && errno != EINTR)
        {
            std::abort();  // as glibc's arc4random: it cannot fail
        }
    }
    return value;
}
