#pragma once
// Small text helpers every layer uses: one definition each, so HTML escaping, line splitting and
// byte counts read the same in every view, message and table. Pure C++; no state.

#include <string>
#include <vector>

namespace xcuda::text
{
    // Safe inside HTML elements and double-quoted attributes (& < > ").
    std::string html_escape(const std::string& text);

    // Valid UTF-8 with every character XML 1.0 cannot hold (controls but tab, U+FFFE/U+FFFF) replaced
    // by U+FFFD, as Jupyter's JSON messages need; markup also escapes XML's five specials (& < > " ')
    // and replaces line breaks (the caller lays lines out), plain text keeps them.
    std::string xml_safe(const std::string& text, bool markup);

    // Lines without their '\n' (and a '\r' before it); "" gives no lines, "a\n" gives {"a"}.
    std::vector<std::string> split_lines(const std::string& text);

    // Without leading and trailing blanks (space, tab, CR, LF).
    std::string trim(const std::string& text);
    bool blank(const std::string& text);

    // A blank inside a line: space, tab, CR, VT, FF (not LF).
    bool is_line_space(char c);
    bool starts_with(const std::string& text, const std::string& prefix);

    // 1e3-based, as GB/s is: "512 B", "4.1 kB", "16.8 MB", "1.07 GB".
    std::string bytes(double count);
    // 1024-based, as memory sizes are: "512 B", "4.0 KiB", "16.0 MiB", "139.80 GiB".
    std::string binary_bytes(std::size_t count);

    // Where the first NUL byte is: "" when there is none, else "line L, column C" (both from 1, the
    // column in bytes). A source with a NUL is refused: NVRTC reads a C string and stops there, while
    // the signature reader would go on and bind kernels NVRTC never compiled.
    std::string nul_position(const std::string& text);

    // printf-style formatting of one number ("%.2f").
    std::string format(const char* pattern, double value);
}
