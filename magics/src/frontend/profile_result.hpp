#pragma once
// What Launcher.profile returns (xcuda.LaunchProfile): one launch measured by ncu, with the cell's
// source for the lines' text. Plain data, copied freely; no lock: one thread builds it, then it is read.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cuda_kernel.hpp"
#include "launch_profile.hpp"

namespace xcuda
{
    // The choices of one profile (Launcher.profile's keywords).
    struct profile_options
    {
        bool full = false;    // ncu's full section set instead of the few the table needs
        bool source = true;   // per-line figures
        bool keep = false;    // keep the bundle and the report (the result names the folder)

        // One keyword of profile(); argument_type_error (a TypeError) naming an unknown one.
        void set(const std::string& keyword, bool value);
    };

    class profile_result
    {
    public:
        launch_profile profile;
        std::string source;                   // the cell's source
        std::shared_ptr<cuda_kernel> kernel;  // null for one read from recorded pages
        std::string ncu_log;                  // what the profiling run printed
        std::string folder;                   // the kept bundle, or ""
        bool show_plot = true;
        mutable std::string png_base64;       // the plot for the HTML, made once by whoever shows it

        // A profile from recorded ncu output (LaunchProfile.from_ncu): the raw and details pages, and
        // optionally the source page (with the kernel's nvdisasm output for a SASS-only page).
        static profile_result from_ncu(const std::string& raw, const std::string& details,
                                       const std::optional<std::string>& source_page,
                                       const std::optional<std::string>& sass, const std::string& source,
                                       const std::string& symbol, const std::string& cell_file, bool plot);

        // What the plot draws (xcuda/plots.py roofline): a roofline when ncu counted the floating-point
        // work and the peaks, else how close each unit came to its peak.
        struct roofline_figures
        {
            bool fp64 = false;                        // FP64 work outweighs FP32: the FP64 peak is the roof
            std::optional<double> peak_flops_per_second;
            std::vector<std::optional<double>> percents;  // DRAM, memory, SM, achieved occupancy
        };
        roofline_figures roofline() const;

        // Every metric ncu reported, by name: its number in base units, or its text where it has none.
        std::map<std::string, std::variant<double, std::string>> metric_values() const;

        // The kernel profiled, for its lines() view; argument_value_error for a profile read from recorded
        // pages (it has none).
        cuda_kernel& profiled_kernel() const;

        // The notebook view; with png (the plot, base64) as an image inside the profile's <div>, so the
        // output stays one element.
        std::string html(const std::string& png) const;
        std::string text() const { return profile.text(source); }
    };
}
