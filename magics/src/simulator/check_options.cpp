#include "check_options.hpp"

#include <cstdlib>
#include <stdexcept>

namespace xcuda::sim
{
    namespace
    {
        struct named_check
        {
            const char* name;
            bool check_options::*flag;
        };
        const named_check k_checks[] = {
            {"race", &check_options::race},
            {"warp-race", &check_options::warp_race},
            {"init-shared", &check_options::init_shared},
            {"init-global", &check_options::init_global},
            {"async-copy", &check_options::async_copy},
        };

        void set_all(check_options& o, bool on)
        {
            for (const named_check& c : k_checks)
            {
                o.*c.flag = on;
            }
        }

        [[noreturn]] void refuse(const char* variable, const std::string& value, const std::string& takes)
        {
            throw std::invalid_argument(std::string(variable) + "='" + value + "' is not a value the simulator reads; it takes " +
                                        takes + " (docs/simulator.md, \"Checks\")");
        }

        void apply_list(check_options& o, const std::string& text)
        {
            const std::string takes = "a comma-separated list of race, warp-race, init-shared, init-global, async-copy (each may be "
                                      "preceded by '-' to turn it off), all, none or default";
            std::size_t start = 0;
            while (start <= text.size())
            {
                std::size_t end = text.find(',', start);
                std::string word = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
                start = end == std::string::npos ? text.size() + 1 : end + 1;
                if (word.empty())
                {
                    continue;
                }
                if (word == "all" || word == "none")
                {
                    set_all(o, word == "all");
                    continue;
                }
                if (word == "default")
                {
                    o = check_options{};
                    continue;
                }
                const bool off = word[0] == '-';
                const std::string name = off ? word.substr(1) : word;
                bool known = false;
                for (const named_check& c : k_checks)
                {
                    if (name == c.name)
                    {
                        o.*c.flag = !off;
                        known = true;
                    }
                }
                if (!known)
                {
                    refuse("XCUDA_SIM_CHECKS", text, takes);
                }
            }
        }
    }

    check_options check_options::parse(const char* checks, const char* racecheck, const char* initcheck)
    {
        check_options o;
        if (checks)
        {
            apply_list(o, checks);
        }
        if (racecheck && *racecheck)
        {
            const std::string v = racecheck;
            if (v != "0" && v != "1" && v != "warp" && v != "all")
            {
                refuse("XCUDA_SIM_RACECHECK", v, "0 (off), 1 (races between warps), warp or all (and races between lanes "
                                                 "of one warp)");
            }
            o.race = v != "0";
            o.warp_race = v == "warp" || v == "all";
        }
        if (initcheck && *initcheck)
        {
            const std::string v = initcheck;
            if (v != "0" && v != "1" && v != "shared" && v != "global" && v != "all")
            {
                refuse("XCUDA_SIM_INITCHECK", v, "0 (off), shared, global, or all (1)");
            }
            o.init_shared = v == "shared" || v == "all" || v == "1";
            o.init_global = v == "global" || v == "all" || v == "1";
        }
        return o;
    }

    check_options check_options::from_environment()
    {
        return parse(std::getenv("XCUDA_SIM_CHECKS"), std::getenv("XCUDA_SIM_RACECHECK"), std::getenv("XCUDA_SIM_INITCHECK"));
    }

    std::string check_options::names() const
    {
        std::string text;
        for (const named_check& c : k_checks)
        {
            if (this->*c.flag)
            {
                text += (text.empty() ? "" : ", ") + std::string(c.name);
            }
        }
        return text.empty() ? "none" : text;
    }
}
