#include "kernel_signature.hpp"

#include "errors.hpp"
#include "private_files.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "declaration_parser.hpp"
#include "macro_expander.hpp"
#include "source_lexer.hpp"
#include "source_token.hpp"

/*
 * How the signatures are found
 * ----------------------------
 * The source is user text typed in a notebook cell, so nothing here assumes it is valid C++. Three
 * passes, each linear in the size of the text and each bounded, each a unit of its own (namespace
 * xcuda::cxx) whose header says how it works:
 *
 * 1. source_lexer (source_lexer.hpp), a C preprocessor, turns the text into tokens (source_token.hpp):
 *    comments and literals consumed whole, #define/#undef left as markers, the #if conditions it can
 *    decide from the source alone evaluated and all branches of the others kept.
 * 2. macro_expander (macro_expander.hpp) expands the source's own macros, within a token budget.
 * 3. declaration_parser (declaration_parser.hpp) reads the declaration around each `__global__`, its
 *    parameter types resolved through the C++ type model (type_model.hpp): builtin types, the standard
 *    and CUDA names, and the typedef/using aliases of the source.
 *
 * Every failure is a signature_error naming the line; every loop consumes at least one token.
 */

namespace xcuda
{
    const char* scalar_kind_name(scalar_kind k)
    {
        switch (k)
        {
        case scalar_kind::boolean: return "bool";
        case scalar_kind::i8: return "int8";
        case scalar_kind::u8: return "uint8";
        case scalar_kind::i16: return "int16";
        case scalar_kind::u16: return "uint16";
        case scalar_kind::i32: return "int32";
        case scalar_kind::u32: return "uint32";
        case scalar_kind::i64: return "int64";
        case scalar_kind::u64: return "uint64";
        case scalar_kind::f16: return "float16";
        case scalar_kind::bf16: return "bfloat16";
        case scalar_kind::f32: return "float32";
        case scalar_kind::f64: return "float64";
        case scalar_kind::fp8_e4m3: return "float8_e4m3fn";
        case scalar_kind::fp8_e5m2: return "float8_e5m2";
        case scalar_kind::f16x2: return "float16x2";
        case scalar_kind::bf16x2: return "bfloat16x2";
        case scalar_kind::unknown: break;
        }
        return "unknown";
    }

    std::size_t scalar_kind_size(scalar_kind k)
    {
        switch (k)
        {
        case scalar_kind::boolean:
        case scalar_kind::i8:
        case scalar_kind::u8:
        case scalar_kind::fp8_e4m3:
        case scalar_kind::fp8_e5m2: return 1;
        case scalar_kind::i16:
        case scalar_kind::u16:
        case scalar_kind::f16:
        case scalar_kind::bf16: return 2;
        case scalar_kind::i32:
        case scalar_kind::u32:
        case scalar_kind::f32:
        case scalar_kind::f16x2:
        case scalar_kind::bf16x2: return 4;
        case scalar_kind::i64:
        case scalar_kind::u64:
        case scalar_kind::f64: return 8;
        case scalar_kind::unknown: break;
        }
        return 0;
    }

    std::string kernel_signature::to_string() const
    {
        std::string s = name + "(";
        for (std::size_t i = 0; i < parameters.size(); ++i)
        {
            const kernel_parameter& p = parameters[i];
            if (i != 0)
            {
                s += ", ";
            }
            std::string decl = p.type;
            std::size_t fp = decl.find("(*)");
            if (fp != std::string::npos && !p.name.empty())
            {
                decl.insert(fp + 2, p.name);  // void (*cb)(int)
            }
            else if (!p.name.empty())
            {
                decl += " " + p.name;
            }
            s += decl;
            if (!p.default_value.empty())
            {
                s += " = " + p.default_value;
            }
        }
        return s + ")";
    }

    namespace
    {
        // The headers of one unit: header cells by name, then files of the -I folders; each read once.
        class unit_headers : public cxx::include_resolver
        {
        public:
            explicit unit_headers(const parse_context& context)
                : m_context(context)
            {
                m_files.push_back("");  // the cell
            }

            const std::string* open(const std::string& name, bool angled, int& file, int includer) override
            {
                auto cell = m_context.headers.find(name);
                if (cell != m_context.headers.end())
                {
                    return m_seen.insert(name).second ? add(name, cell->second, file) : nullptr;
                }
                if (name.empty() || name[0] == '/' || name.find("..") != std::string::npos)
                {
                    return nullptr;
                }
                // (path, the name it is known by): a quoted include first in its includer's folder (the working
                // directory for the cell: "llmc/utils.h", and utils.h's "rand.h" as "llmc/rand.h"), then the
                // -I folders, as NVRTC looks.
                std::vector<std::pair<std::string, std::string>> places;
                if (!angled)
                {
                    const std::string& from = m_files[static_cast<std::size_t>(includer)];
                    std::string folder = from.substr(0, from.find_last_of('/') + 1);
                    if (m_context.headers.count(from) == 0 || folder.empty())
                    {
                        places.emplace_back(folder + name, folder + name);
                    }
                }
                for (const std::string& dir : m_context.include_dirs)
                {
                    if (!is_toolkit_folder(dir))  // -I of the toolkit's own folder: its types are built in, its text is not read
                    {
                        places.emplace_back(dir + "/" + name, name);
                    }
                }
                for (const auto& [path, known_as] : places)
                {
                    std::string text;
                    if (!read(path, text))
                    {
                        continue;
                    }
                    m_spelled.insert(name);
                    return m_seen.insert(known_as).second ? add(known_as, std::move(text), file) : nullptr;
                }
                return nullptr;
            }

            // Opened without blocking: a FIFO (or a device) planted as a header would hang the read here and
            // NVRTC's open after it. False when there is no such file or it is too large to be a header.
            static bool read(const std::string& path, std::string& text)
            {
                std::string problem;
                if (private_files::read_regular(path, 8u << 20, text, problem))
                {
                    return true;
                }
                if (problem == "does not exist" || problem.find("larger than") != std::string::npos)
                {
                    return false;
                }
                std::string folder = path.substr(0, path.find_last_of('/') + 1);
                throw usage_error("#include: " + path + " " + problem + "; the compile would block or fail reading it. "
                                  "Remove it" + (folder.empty() ? std::string() : ", or drop -I " + folder));
            }

            const std::string* add(const std::string& name, std::string text, int& file)
            {
                file = static_cast<int>(m_files.size());
                m_files.push_back(name);
                m_texts.push_back(std::make_unique<std::string>(std::move(text)));
                return m_texts.back().get();
            }

            const std::vector<std::string>& files() const { return m_files; }

            bool is_toolkit_folder(const std::string& dir) const
            {
                if (!m_context.toolkit_include_dirs)
                {
                    return false;
                }
                const std::vector<std::string>& toolkit = m_context.toolkit_include_dirs();
                return std::find(toolkit.begin(), toolkit.end(), dir) != toolkit.end();
            }

            bool was_read(const std::string& name) const override
            {
                return m_spelled.count(name) != 0 || std::find(m_files.begin(), m_files.end(), name) != m_files.end();
            }

        private:
            const parse_context& m_context;
            std::set<std::string> m_seen;
            std::set<std::string> m_spelled;  // includes spelled otherwise than the name their file is known by
            std::vector<std::string> m_files;
            std::vector<std::unique_ptr<std::string>> m_texts;
        };
    }

    namespace
    {
        // The token count and the nesting the declaration parser would walk (its scope stack and the
        // qualified names of nested records grow with the depth: 16k nested structs took 10 s, quadratic in
        // the depth). Brackets ( [ { are counted exactly; template brackets as "identifier <" up to its ">"
        // (or ">>"), reset at ; { } so that a comparison in a statement cannot add up across statements.
        void check_token_limits(const std::vector<cxx::token>& tokens, const std::vector<std::string>& files,
                                const char* when)
        {
            if (tokens.size() > signature_limits::tokens)
            {
                throw usage_error("the cell has " + std::to_string(tokens.size()) + " tokens" + when +
                                  ", over xcuda's limit of " + std::to_string(signature_limits::tokens) +
                                  "; split it into smaller cells or headers");
            }
            std::size_t brackets = 0;
            std::size_t angles = 0;
            bool after_identifier = false;
            for (const cxx::token& t : tokens)
            {
                bool identifier = t.kind == cxx::token_kind::identifier;
                if (t.kind == cxx::token_kind::punct)
                {
                    const std::string& p = t.text;
                    if (p == "(" || p == "[" || p == "{")
                    {
                        ++brackets;
                    }
                    else if ((p == ")" || p == "]" || p == "}") && brackets > 0)
                    {
                        --brackets;
                    }
                    if (p == ";" || p == "{" || p == "}")
                    {
                        angles = 0;
                    }
                    else if (p == "<" && after_identifier)
                    {
                        ++angles;
                    }
                    else if (p == ">")
                    {
                        angles -= angles > 0;
                    }
                    else if (p == ">>")
                    {
                        angles -= std::min<std::size_t>(angles, 2);
                    }
                }
                if (brackets > signature_limits::nesting || angles > signature_limits::nesting)
                {
                    std::string file = t.file > 0 && static_cast<std::size_t>(t.file) < files.size() ? files[t.file] : "the cell";
                    throw usage_error(std::string("line ") + std::to_string(t.line) + " of " + file + " nests " +
                                      (brackets > signature_limits::nesting ? "brackets ( [ {" : "template brackets < >") +
                                      " deeper than xcuda's limit of " + std::to_string(signature_limits::nesting) +
                                      " levels" + when + "; flatten the nesting (a typedef or a struct per level)");
                }
                after_identifier = identifier || (t.kind == cxx::token_kind::punct && t.text == ">");
            }
        }
    }

    void check_compile_inputs(const std::string& source, const std::map<std::string, std::string>& headers,
                              const std::vector<std::string>& defines)
    {
        auto too_big = [](const std::string& what, std::size_t size, std::size_t limit, const std::string& todo) {
            return usage_error(what + " is " + std::to_string(size) + " bytes, over xcuda's limit of " +
                               std::to_string(limit) + " bytes; " + todo);
        };
        if (source.size() > signature_limits::source_bytes)
        {
            throw too_big("the cell", source.size(), signature_limits::source_bytes,
                          "put the code in files and #include them with -I, or split the cell");
        }
        std::string where = text::nul_position(source);
        if (!where.empty())
        {
            throw usage_error("the cell has a NUL byte at " + where +
                              ": NVRTC would stop reading there. Remove it (a string needs \\0, not the byte itself)");
        }
        for (const auto& [name, text] : headers)
        {
            if (name.size() > signature_limits::header_name_bytes)
            {
                throw too_big("a header cell's name", name.size(), signature_limits::header_name_bytes,
                              "give it a short file name, as #include uses it");
            }
            if (name.find('\0') != std::string::npos)
            {
                throw usage_error("a header cell's name has a NUL byte; name it as #include names it");
            }
            if (text.size() > signature_limits::source_bytes)
            {
                throw too_big("the header cell " + name, text.size(), signature_limits::source_bytes,
                              "put it in a file of an -I folder, or split it");
            }
            where = text::nul_position(text);
            if (!where.empty())
            {
                throw usage_error("the header cell " + name + " has a NUL byte at " + where +
                                  ": NVRTC would stop reading there. Remove it");
            }
        }
        if (defines.size() > signature_limits::defines)
        {
            throw usage_error(std::to_string(defines.size()) + " -D options are over xcuda's limit of " +
                              std::to_string(signature_limits::defines) +
                              "; put the definitions in a header cell (%%cuda_header) and #include it");
        }
        for (const std::string& define : defines)
        {
            if (define.size() > signature_limits::define_bytes)
            {
                throw too_big("the -D option " + define.substr(0, 40) + "...", define.size(), signature_limits::define_bytes,
                              "put the definition in a header cell (%%cuda_header) and #include it");
            }
            if (define.find('\0') != std::string::npos)
            {
                throw usage_error("the -D option " + define.substr(0, define.find('\0')) + " has a NUL byte; remove it");
            }
        }
    }

    namespace
    {
        void add_define(std::string& text, const std::string& name, const std::string& value)
        {
            text += "#define " + name + " " + value + "\n";
        }

        // The target: sm_90, sm_90a, compute_90, sm_100f -> 900 / 1000, with the suffix's macros.
        void arch_macros(const std::string& arch, std::string& text, std::vector<std::string>& unknown)
        {
            std::size_t digits = arch.find_first_of("0123456789");
            if (digits == std::string::npos)
            {
                add_define(text, "__CUDA_ARCH__", "0");
                unknown.push_back("__CUDA_ARCH__");
                unknown.push_back("__CUDA_ARCH_LIST__");
                return;
            }
            std::string number;
            std::size_t k = digits;
            for (; k < arch.size() && std::isdigit(static_cast<unsigned char>(arch[k])); ++k)
            {
                number += arch[k];
            }
            std::string suffix = arch.substr(k);
            std::string value = number + "0";
            add_define(text, "__CUDA_ARCH__", value);
            add_define(text, "__CUDA_ARCH_LIST__", value);
            if (suffix == "a" || suffix == "f")
            {
                add_define(text, "__CUDA_ARCH_FAMILY_SPECIFIC__", value);
            }
            if (suffix == "a")
            {
                add_define(text, "__CUDA_ARCH_SPECIFIC__", value);
                add_define(text, "__CUDA_ARCH_FEAT_SM" + number + "_ALL", "1");
            }
        }

        // NVRTC's version ({0, 0}: unknown) as the compiler's and the runtime API's version macros.
        void version_macros(std::pair<int, int> version, std::string& text, std::vector<std::string>& unknown)
        {
            auto [major, minor] = version;
            if (major > 0)
            {
                add_define(text, "__CUDACC_VER_MAJOR__", std::to_string(major));
                add_define(text, "__CUDACC_VER_MINOR__", std::to_string(minor));
                add_define(text, "__CUDA_API_VER_MAJOR__", std::to_string(major));
                add_define(text, "__CUDA_API_VER_MINOR__", std::to_string(minor));
                add_define(text, "CUDART_VERSION", std::to_string(major * 1000 + minor * 10));
            }
            else
            {
                for (const char* name : {"__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDA_API_VER_MAJOR__",
                                         "__CUDA_API_VER_MINOR__", "CUDART_VERSION"})
                {
                    add_define(text, name, "0");
                    unknown.push_back(name);
                }
            }
            add_define(text, "__CUDACC_VER_BUILD__", "0");
            unknown.push_back("__CUDACC_VER_BUILD__");
        }

        // What the options of a parse context decide of the predefined macros: the -D and -U options in
        // their order (the context's defines, then those among the raw options), the standard, the math
        // options and the flags that each define one macro.
        struct macro_options
        {
            std::vector<std::pair<bool, std::string>> defines;  // (define?, "N=4" / "N")
            std::string standard;
            bool fast_math = false;
            bool prec_known = true;  // false: an -ftz / -prec-div / -prec-sqrt option NVRTC was given
            bool debug = false, rdc = false, ewp = false, int128 = false, float128 = false;
        };

        macro_options read_macro_options(const parse_context& context)
        {
            macro_options read;
            read.standard = context.standard;
            read.fast_math = context.fast_math;
            read.rdc = context.relocatable;
            for (const std::string& d : context.defines)
            {
                read.defines.emplace_back(true, d);
            }
            for (std::size_t i = 0; i < context.extra.size(); ++i)
            {
                const std::string& o = context.extra[i];
                auto value_of = [&](const std::string& flag, std::string& out) {
                    if (o == flag && i + 1 < context.extra.size())
                    {
                        out = context.extra[++i];
                        return true;
                    }
                    if (o.rfind(flag + "=", 0) == 0)
                    {
                        out = o.substr(flag.size() + 1);
                        return true;
                    }
                    if (flag.size() == 2 && o.rfind(flag, 0) == 0 && o.size() > 2)
                    {
                        out = o.substr(2);
                        return true;
                    }
                    return false;
                };
                std::string v;
                if (value_of("-D", v) || value_of("--define-macro", v))
                {
                    read.defines.emplace_back(true, v);
                }
                else if (value_of("-U", v) || value_of("--undefine-macro", v))
                {
                    read.defines.emplace_back(false, v);
                }
                else if (value_of("--std", v) || value_of("-std", v))
                {
                    read.standard = v;
                }
                else if (o == "-G" || o == "--device-debug" || o == "-device-debug")
                {
                    read.debug = true;
                }
                else if (o == "-dc" || o == "--device-c" || o == "-rdc=true" || o == "--relocatable-device-code=true")
                {
                    read.rdc = true;
                }
                else if (o == "-ewp" || o == "--extensible-whole-program")
                {
                    read.ewp = true;
                }
                else if (o == "-device-int128" || o == "--device-int128")
                {
                    read.int128 = true;
                }
                else if (o == "-device-float128" || o == "--device-float128")
                {
                    read.float128 = true;
                }
                else if (o == "-use_fast_math" || o == "--use_fast_math")
                {
                    read.fast_math = true;
                }
                else if (o.find("ftz") != std::string::npos || o.find("prec-div") != std::string::npos ||
                         o.find("prec-sqrt") != std::string::npos || o.find("prec_div") != std::string::npos ||
                         o.find("prec_sqrt") != std::string::npos)
                {
                    read.prec_known = false;
                }
            }
            return read;
        }

        // __cplusplus (NVRTC 12 and 13 default to C++17), the math macros and the one-flag macros.
        void option_macros(const macro_options& options, int nvrtc_major, std::string& text,
                           std::vector<std::string>& unknown)
        {
            static const std::map<std::string, std::string> standards{
                {"c++03", "199711L"}, {"c++11", "201103L"}, {"c++14", "201402L"}, {"c++17", "201703L"}, {"c++20", "202002L"}};
            std::string standard = options.standard;
            if (standard.empty() && (nvrtc_major == 12 || nvrtc_major == 13))
            {
                standard = "c++17";
            }
            auto s = standards.find(standard);
            if (s != standards.end())
            {
                add_define(text, "__cplusplus", s->second);
            }
            else
            {
                add_define(text, "__cplusplus", "0");
                unknown.push_back("__cplusplus");
            }
            bool fast_math = options.fast_math;
            add_define(text, "__USE_FAST_MATH__", fast_math ? "1" : "0");
            add_define(text, "__CUDA_PREC_DIV", fast_math ? "0" : "1");
            add_define(text, "__CUDA_PREC_SQRT", fast_math ? "0" : "1");
            add_define(text, "__CUDA_FTZ", fast_math ? "1" : "0");
            if (!options.prec_known)
            {
                for (const char* name : {"__CUDA_PREC_DIV", "__CUDA_PREC_SQRT", "__CUDA_FTZ"})
                {
                    unknown.push_back(name);
                }
            }
            if (options.debug) add_define(text, "__CUDACC_DEBUG__", "1");
            if (options.rdc) add_define(text, "__CUDACC_RDC__", "1");
            if (options.ewp) add_define(text, "__CUDACC_EWP__", "1");
            if (options.int128) add_define(text, "__CUDACC_RTC_INT128__", "1");
            if (options.float128) add_define(text, "__CUDACC_RTC_FLOAT128__", "1");
        }

        // -D N=4 as NVRTC reads it: "#define N 4" before the cell; -U N: "#undef N", in their order.
        void command_line_macros(const std::vector<std::pair<bool, std::string>>& defines, std::string& text)
        {
            for (const auto& [is_define, option] : defines)
            {
                std::size_t equals = option.find('=');
                std::string name = is_define ? option.substr(0, equals) : option;
                if (name.empty() || name.find_first_of(" \t\n(") != std::string::npos)
                {
                    continue;
                }
                if (!is_define)
                {
                    text += "#undef " + name + "\n";
                    continue;
                }
                std::string value = equals == std::string::npos ? "1" : option.substr(equals + 1);
                if (value.find('\n') != std::string::npos)
                {
                    continue;
                }
                add_define(text, name, value);
            }
        }
    }

    std::string predefined_macros(const parse_context& context, std::vector<std::string>& unknown)
    {
        // As NVRTC 13.0 defines them (probed with #pragma message for each option): device code only,
        // so __CUDA_ARCH__ is always defined, and __NVCC__ never. NULL (0 to NVRTC) is left to the
        // reader's constant evaluation, so that a default `= NULL` reads as written.
        std::string text = "#define __CUDACC__ 1\n#define __CUDACC_RTC__ 1\n#define __NVCC_DIAG_PRAGMA_SUPPORT__ 1\n"
                           "#define __LP64__ 1\n#define __STDC__ 1\n#define __EDG__ 1\n"
                           "#define __CUDA_RUNTIME_H__\n#define __DRIVER_TYPES_H__\n#define __VECTOR_TYPES_H__\n";
        arch_macros(context.arch, text, unknown);
        version_macros(context.nvrtc_version, text, unknown);
        macro_options options = read_macro_options(context);
        option_macros(options, context.nvrtc_version.first, text, unknown);
        command_line_macros(options.defines, text);
        return text + context.prelude;
    }

    namespace
    {
        // The unit's tokens after macro expansion, as both readers take them; `files` names each file index.
        // `doubts`: the sentences the tokens' doubts index (conditions the reader could not decide).
        std::vector<cxx::token> expanded_unit(const std::string& source, const parse_context& context,
                                              std::vector<std::string>& files, std::vector<std::string>& doubts);
    }

    std::vector<kernel_signature> parse_kernel_signatures(const std::string& source, const parse_context& context)
    {
        std::vector<std::string> files;
        std::vector<std::string> doubts;
        std::vector<cxx::token> expanded = expanded_unit(source, context, files, doubts);
        return cxx::declaration_parser(std::move(expanded), files, doubts).run();
    }

    std::vector<module_variable> parse_module_variables(const std::string& source, const parse_context& context)
    {
        std::vector<std::string> files;
        std::vector<std::string> doubts;
        std::vector<cxx::token> expanded = expanded_unit(source, context, files, doubts);
        cxx::declaration_parser parser(std::move(expanded), files, doubts);
        parser.run();
        return parser.variables();
    }

    std::size_t module_variable::size() const
    {
        if (!layout || !layout->known())
        {
            return 0;
        }
        std::size_t bytes = layout->size;
        for (std::size_t extent : extents)
        {
            bytes *= extent;
        }
        return bytes;
    }

    namespace
    {
    // The predefined macros (NVRTC's, the options', the nvcc prelude's) lexed: the same text for every unit
    // compiled with the same options, so lexed once per text and copied (lexing the prelude's 40 #defines
    // for every new source had cost a disk hit about 40 us; tests/bench/bench_compile.py).
    struct lexed_prelude
    {
        std::string key;  // the text, the file index and the names whose values the reader was not told
        std::vector<cxx::token> tokens;
        std::vector<cxx::macro_definition> macros;
        cxx::preprocessor_state state;
    };

    std::shared_ptr<const lexed_prelude> lex_prelude_anew(const std::string& text, int file,
                                                          const std::vector<std::string>& unknown, std::string key)
    {
        auto made = std::make_shared<lexed_prelude>();
        made->key = std::move(key);
        cxx::preprocessor_state& state = made->state;
        cxx::source_lexer(text, nullptr, file, &state, "<command line>").run(made->tokens, made->macros);
        for (const std::string& name : unknown)
        {
            auto it = state.macros.find(name);
            if (it == state.macros.end())
            {
                continue;
            }
            state.doubts.push_back(name + " (predefined by NVRTC): its value depends on " +
                                   (name.find("ARCH") != std::string::npos ? "the target (--arch)"
                                    : name == "__cplusplus"                ? "the C++ standard (--std)"
                                    : name.rfind("__CUDA_", 0) == 0 && name.find("VER") == std::string::npos
                                        ? "the math options"
                                        : "the NVRTC version") +
                                   ", which the reader was not told");
            it->second.doubt = static_cast<int>(state.doubts.size()) - 1;
            for (cxx::macro_definition& m : made->macros)
            {
                if (m.name == name)
                {
                    m.doubt = it->second.doubt;
                }
            }
        }
        return made;
    }

    // The last text's lexed prelude, shared by the threads that read signatures (a mutex around the swap;
    // the lexed result is immutable once published).
    std::shared_ptr<const lexed_prelude> lex_prelude(const std::string& text, int file,
                                                     const std::vector<std::string>& unknown)
    {
        static std::mutex mutex;
        static std::shared_ptr<const lexed_prelude> last;
        std::string key = text;
        key += '\0' + std::to_string(file);
        for (const std::string& name : unknown)
        {
            key += '\0' + name;
        }
        {
            std::lock_guard<std::mutex> held(mutex);
            if (last && last->key == key)
            {
                return last;
            }
        }
        std::shared_ptr<const lexed_prelude> made = lex_prelude_anew(text, file, unknown, std::move(key));
        std::lock_guard<std::mutex> held(mutex);
        last = made;
        return made;
    }

    std::vector<cxx::token> expanded_unit(const std::string& source, const parse_context& context,
                                          std::vector<std::string>& files, std::vector<std::string>& doubts)
    {
        check_compile_inputs(source, context.headers, context.defines);
        std::vector<cxx::token> tokens;
        std::vector<cxx::macro_definition> macros;
        unit_headers headers(context);
        cxx::preprocessor_state state;
        {
            std::vector<std::string> unknown;
            std::string prelude = predefined_macros(context, unknown);
            int file = 0;
            const std::string* text = headers.add("<command line>", prelude, file);
            std::shared_ptr<const lexed_prelude> lexed = lex_prelude(*text, file, unknown);
            tokens = lexed->tokens;
            macros = lexed->macros;
            state = lexed->state;
        }
        cxx::source_lexer lexer(source, &headers, 0, &state, "the cell");
        lexer.run(tokens, macros);
        check_token_limits(tokens, headers.files(), "");
        std::vector<cxx::token> expanded = cxx::macro_expander(macros).run(std::move(tokens));
        check_token_limits(expanded, headers.files(), " after macro expansion");
        files = headers.files();
        doubts = state.doubts;
        return expanded;
    }
    }
}

namespace xcuda
{
    namespace
    {
        // Splits "a, b<c, d>, e(f, g)" at its top-level commas, trimming each piece.
        std::vector<std::string> split_arguments(const std::string& text)
        {
            std::vector<std::string> pieces;
            std::string piece;
            int depth = 0;
            for (char c : text)
            {
                if (c == '<' || c == '(' || c == '[')
                    ++depth;
                else if (c == '>' || c == ')' || c == ']')
                    --depth;
                if (c == ',' && depth == 0)
                {
                    pieces.push_back(piece);
                    piece.clear();
                    continue;
                }
                piece += c;
            }
            pieces.push_back(piece);
            for (auto& p : pieces)
            {
                std::size_t first = p.find_first_not_of(" \t\n");
                std::size_t last = p.find_last_not_of(" \t\n");
                p = first == std::string::npos ? std::string() : p.substr(first, last - first + 1);
            }
            if (pieces.size() == 1 && pieces[0].empty())
            {
                pieces.clear();
            }
            return pieces;
        }

        bool identifier_char(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }

        // Replaces whole identifiers `name` in text by `value`.
        std::string substitute(const std::string& text, const std::string& name, const std::string& value)
        {
            std::string out;
            for (std::size_t i = 0; i < text.size();)
            {
                if (text.compare(i, name.size(), name) == 0 && (i == 0 || !identifier_char(text[i - 1])) &&
                    (i + name.size() >= text.size() || !identifier_char(text[i + name.size()])))
                {
                    out += value;
                    i += name.size();
                }
                else
                {
                    out += text[i++];
                }
            }
            return out;
        }
    }

    namespace
    {
        // `extern "C" __global__ void xcuda_instance(<the parameter types with the template's arguments>)
        // {}`: the declaration whose reading types an instance of `kernel` as `expression`.
        std::string instance_declaration(const kernel_signature& kernel, const std::string& expression)
        {
            const std::string& name = kernel.name;
            const std::vector<std::string>& template_parameters = kernel.template_parameters;
            const std::vector<kernel_parameter>& parameters = kernel.parameters;
            int line = kernel.line;
            std::size_t open = expression.find('<');
            std::size_t close = expression.rfind('>');
            if (!kernel.is_template() || open == std::string::npos || close == std::string::npos || close < open)
            {
                throw signature_error(line, "'" + expression + "' does not instantiate template kernel '" + name +
                                                "': write it as " + name + "<type, ...>");
            }
            std::vector<std::string> arguments = split_arguments(expression.substr(open + 1, close - open - 1));
            if (arguments.size() > template_parameters.size())
            {
                throw signature_error(line, "'" + expression + "' gives " + std::to_string(arguments.size()) +
                                                " template arguments; " + name + " takes " +
                                                std::to_string(template_parameters.size()));
            }
            std::string declaration = "extern \"C\" __global__ void xcuda_instance(";
            std::vector<std::pair<std::string, std::string>> bindings;
            for (std::size_t i = 0; i < template_parameters.size(); ++i)
            {
                const std::string& parameter = template_parameters[i];
                std::size_t equals = parameter.find('=');
                std::string head = parameter.substr(0, equals);
                std::size_t end = head.find_last_not_of(" \t");
                std::size_t start = end;
                while (start != std::string::npos && start > 0 && identifier_char(head[start - 1]))
                {
                    --start;
                }
                std::string parameter_name = end == std::string::npos ? std::string() : head.substr(start, end - start + 1);
                std::string value;
                if (i < arguments.size())
                {
                    value = arguments[i];
                }
                else if (equals != std::string::npos && !split_arguments(parameter.substr(equals + 1)).empty())
                {
                    value = split_arguments(parameter.substr(equals + 1))[0];
                }
                else
                {
                    throw signature_error(line, "'" + expression + "' leaves template parameter '" + parameter +
                                                    "' of " + name + " without a value");
                }
                bindings.emplace_back(parameter_name, value);
            }
            for (std::size_t i = 0; i < parameters.size(); ++i)
            {
                std::string type = parameters[i].type;
                for (const auto& [parameter_name, value] : bindings)
                {
                    if (!parameter_name.empty())
                    {
                        type = substitute(type, parameter_name, value);
                    }
                }
                declaration += (i ? ", " : "") + type + " p" + std::to_string(i);
            }
            declaration += ") {}";
            return declaration;
        }

        // The instance of `kernel` named `expression`, its parameters those of `parsed` (the reading of
        // instance_declaration), with their names and defaults kept.
        kernel_signature finished_instance(const kernel_signature& kernel, const std::string& expression,
                                           const std::vector<kernel_signature>& parsed)
        {
            const std::string& qualified_name = kernel.qualified_name;
            if (parsed.empty())
            {
                throw signature_error(kernel.line, "'" + expression + "' does not make a kernel of template '" +
                                                       kernel.name + "'");
            }
            kernel_signature instance = kernel;
            instance.template_parameters.clear();
            instance.extern_c = false;
            instance.name = expression;
            std::size_t scope = qualified_name.rfind("::");
            instance.qualified_name = (expression.find("::") == std::string::npos && scope != std::string::npos)
                                          ? qualified_name.substr(0, scope + 2) + expression
                                          : expression;
            for (std::size_t i = 0; i < kernel.parameters.size() && i < parsed[0].parameters.size(); ++i)
            {
                std::string parameter_name = instance.parameters[i].name;
                std::string default_value = instance.parameters[i].default_value;
                instance.parameters[i] = parsed[0].parameters[i];
                instance.parameters[i].name = parameter_name;
                instance.parameters[i].default_value = default_value;
            }
            return instance;
        }
    }

    kernel_signature kernel_signature::instantiate(const std::string& expression) const
    {
        return finished_instance(*this, expression, parse_kernel_signatures(instance_declaration(*this, expression)));
    }

    kernel_signature kernel_signature::instantiate(const std::string& expression, const std::string& source,
                                                   const parse_context& context) const
    {
        std::string declaration = instance_declaration(*this, expression);
        // In the kernel's namespace, where the unit's names its parameters use are found.
        std::string scope = qualified_name.substr(0, qualified_name.rfind("::") == std::string::npos ? 0 : qualified_name.rfind("::"));
        std::string opening, closing;
        for (std::size_t at = 0; !scope.empty() && at != std::string::npos;)
        {
            std::size_t next = scope.find("::", at);
            opening += "namespace " + scope.substr(at, next == std::string::npos ? std::string::npos : next - at) + " { ";
            closing += " }";
            at = next == std::string::npos ? next : next + 2;
        }
        std::vector<kernel_signature> unit;
        try
        {
            unit = parse_kernel_signatures(source + "\n" + opening + declaration + closing + "\n", context);
        }
        catch (const signature_error&)
        {
            return instantiate(expression);  // the unit's own text cannot be read: the declaration alone
        }
        for (auto it = unit.rbegin(); it != unit.rend(); ++it)
        {
            if (it->name == "xcuda_instance" && it->file.empty())
            {
                return finished_instance(*this, expression, {*it});
            }
        }
        return instantiate(expression);
    }
}
