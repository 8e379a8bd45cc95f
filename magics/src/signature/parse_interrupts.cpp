#include "parse_interrupts.hpp"

#include <memory>
#include <mutex>
#include <utility>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        std::mutex g_mutex;
        std::shared_ptr<const parse_interrupts::check> g_check;
    }

    void parse_interrupts::set_check(check interrupted)
    {
        auto made = interrupted ? std::make_shared<const check>(std::move(interrupted)) : nullptr;
        std::lock_guard<std::mutex> lock(g_mutex);
        g_check = std::move(made);
    }

    void parse_interrupts::ask()
    {
        std::shared_ptr<const check> current;
        {
            std::lock_guard<std::mutex> lock(g_mutex);
            current = g_check;
        }
        if (current && (*current)())
        {
            throw interrupted_error("interrupted while reading the cell's declarations (nothing was compiled)");
        }
    }
}
