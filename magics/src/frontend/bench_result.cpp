#include "bench_result.hpp"

#include "text.hpp"

namespace xcuda
{
    std::vector<double> bench_result::fraction_of_peak() const
    {
        std::vector<double> fractions;
        for (double bandwidth : bandwidth_gbs)
        {
            fractions.push_back(bandwidth / peak_gbs);
        }
        return fractions;
    }

    std::string bench_result::heading() const
    {
        std::string text = kernel;
        if (device)
        {
            text += " on " + *device;
        }
        return text + ", block " + std::to_string(block) + ", median of " + std::to_string(repeat) + " launch" +
               (repeat == 1 ? "" : "es");
    }

    std::string bench_result::peak_text() const
    {
        std::string text = "peak " + text::format("%.0f GB/s", peak_gbs) +
                           (peak_source == "measured" ? " measured (device-to-device copy)" : " (given)");
        if (theoretical_gbs)
        {
            text += "; theoretical " + text::format("%.0f GB/s", *theoretical_gbs) + " (memory clock x bus width)";
        }
        return text;
    }

    text_table bench_result::table() const
    {
        static const std::vector<std::string> columns{"n", "grid", "bytes", "median us", "GB/s", "% of peak"};
        std::vector<std::vector<std::string>> rows;
        for (std::size_t i = 0; i < sizes.size(); ++i)
        {
            rows.push_back({std::to_string(sizes[i]), std::to_string(grids[i]), text::bytes(static_cast<double>(nbytes[i])),
                            text::format("%.2f", median_ms[i] * 1e3), text::format("%.1f", bandwidth_gbs[i]),
                            text::format("%.1f", 100 * bandwidth_gbs[i] / peak_gbs)});
        }
        return text_table{heading(), columns, rows, "", true};
    }

    std::string bench_result::text() const
    {
        return table_view::text(table()) + peak_text();
    }

    std::string bench_result::html(const std::string& png) const
    {
        std::string out = "<div class=\"xcuda-bench\">" + table_view::html(table());
        out += "<p>" + text::html_escape(peak_text()) + "</p>";
        if (!png.empty())
        {
            out += "<img alt=\"" + text::html_escape(kernel) + " bandwidth plot\" src=\"data:image/png;base64," + png + "\"/>";
        }
        return out + "</div>";
    }
}
