#include "profile_result.hpp"

#include "code_listing.hpp"
#include "errors.hpp"
#include "ncu_report.hpp"
#include "text.hpp"

namespace xcuda
{
    void profile_options::set(const std::string& keyword, bool value)
    {
        if (keyword == "full")
            full = value;
        else if (keyword == "source")
            source = value;
        else if (keyword == "keep")
            keep = value;
        else
            throw argument_type_error("profile() got an unexpected keyword '" + keyword + "' (it takes full, source and keep)");
    }

    profile_result profile_result::from_ncu(const std::string& raw, const std::string& details,
                                            const std::optional<std::string>& source_page,
                                            const std::optional<std::string>& sass, const std::string& source,
                                            const std::string& symbol, const std::string& cell_file, bool plot)
    {
        profile_result r;
        r.profile = launch_profile::from_pages(raw, details);
        r.source = source;
        r.show_plot = plot;
        if (source_page)
        {
            ncu_source page = ncu_report::parse_source(*source_page);
            code_listing listing;
            if (sass)
            {
                listing = code_listing::from_sass(*sass, cell_file).only(symbol.empty() ? page.kernel : symbol);
            }
            r.profile.attach_source(page, listing, cell_file);
        }
        return r;
    }

    profile_result::roofline_figures profile_result::roofline() const
    {
        roofline_figures r;
        r.fp64 = profile.fp64_flops.value_or(0) > profile.fp32_flops.value_or(0);
        r.peak_flops_per_second = r.fp64 ? profile.peak_fp64_flops_per_second : profile.peak_fp32_flops_per_second;
        r.percents = {profile.dram_percent, profile.memory_percent, profile.sm_percent, profile.achieved_occupancy};
        return r;
    }

    std::map<std::string, std::variant<double, std::string>> profile_result::metric_values() const
    {
        std::map<std::string, std::variant<double, std::string>> values;
        for (const auto& entry : profile.metrics)
        {
            values[entry.first] = entry.second.number ? std::variant<double, std::string>(*entry.second.number)
                                                      : std::variant<double, std::string>(entry.second.text);
        }
        return values;
    }

    cuda_kernel& profile_result::profiled_kernel() const
    {
        if (!kernel)
        {
            throw argument_value_error("this profile was read from recorded ncu output: it has no kernel to show");
        }
        return *kernel;
    }

    std::string profile_result::html(const std::string& png) const
    {
        std::string out = profile.html(source);
        if (png.empty())
        {
            return out;
        }
        std::string image = "<img alt=\"" + text::html_escape(profile.kernel) + " roofline\" src=\"data:image/png;base64," +
                            png + "\"/>";
        return out.substr(0, out.size() - 6) + image + "</div>";
    }
}
