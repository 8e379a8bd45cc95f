#include "cell_builder.hpp"

#include <algorithm>
#include <cstdlib>

#include "kernel_signature.hpp"
#include "layout_probe.hpp"
#include "nvcc_prelude.hpp"

namespace xcuda
{
    parse_context parse_context_of(const compile_recipe& recipe, std::pair<int, int> nvrtc_version)
    {
        // The header cells, the -I folders (of which the toolkit's own are not read) and the -D macros;
        // and NVRTC's predefined macros, which the target, the standard and the options decide.
        const compile_options& options = recipe.options;
        parse_context context;
        context.headers = recipe.headers;
        context.include_dirs = options.include_dirs;
        context.defines = options.defines;
        context.arch = options.arch;
        context.standard = options.std;
        context.fast_math = options.fast_math;
        context.relocatable = options.relocatable;
        context.extra = options.extra;
        context.nvrtc_version = nvrtc_version;
        context.toolkit_include_dirs = &nvrtc_compiler::toolkit_include_dirs;
        context.prelude = nvcc_prelude::for_unit(recipe.source, recipe.headers, options.defines, options.extra);
        return context;
    }

    cell_builder::cell_builder(class compiler& compiler)
        : m_compiler(compiler)
    {
    }

    cell_plan cell_builder::prepare(const std::string& name, compile_recipe recipe)
    {
        // The parser sees what NVRTC sees: the header cells, the -I folders and the -D macros.
        const std::string& source = recipe.source;
        const std::map<std::string, std::string>& headers = recipe.headers;
        compile_options& options = recipe.options;
        std::vector<kernel_signature> signatures;
        std::optional<signature_error> unreadable;
        std::pair<int, int> nvrtc_version{0, 0};
        try
        {
            nvrtc_version = m_compiler.nvrtc_version().version();
        }
        catch (const std::exception&)
        {
            // No NVRTC: the compile says so; the reader leaves the version macros unknown.
        }
        parse_context context = parse_context_of(recipe, nvrtc_version);
        std::string parse_key = source;
        parse_key += '\2' + options.arch + '\0' + options.std + '\0' + (options.fast_math ? "F" : "") +
                     (options.relocatable ? "R" : "");
        for (const auto& [header, text] : headers)
        {
            parse_key += '\0' + header + '\0' + text;
        }
        for (const auto& list : {options.include_dirs, options.defines, options.extra})
        {
            parse_key += '\1';
            for (const auto& item : list)
            {
                parse_key += item + '\0';
            }
        }
        bool known = false;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            for (const auto& parse : m_parses)
            {
                if (parse.key == parse_key)
                {
                    signatures = parse.signatures;
                    unreadable = parse.unreadable;
                    known = true;
                    break;
                }
            }
        }
        if (!known)
        {
            try
            {
                signatures = parse_kernel_signatures(source, context);
            }
            catch (const signature_error& e)
            {
                unreadable = e;
            }
            std::lock_guard<std::mutex> lock(m_mutex);
            m_parses.push_front(parse_result{parse_key, signatures, unreadable});
            if (m_parses.size() > 32)
            {
                m_parses.pop_back();
            }
        }
        // Instantiations asked for by name expression ("saxpy<float>") become kernels of their own.
        std::vector<kernel_signature> instances;
        for (const auto& expression : options.name_expressions)
        {
            if (expression.empty() || expression[0] == '&' || expression.find('<') == std::string::npos)
            {
                continue;
            }
            std::string base = expression.substr(0, expression.find('<'));
            base.erase(base.find_last_not_of(" \t") + 1);
            auto it = std::find_if(signatures.begin(), signatures.end(), [&](const kernel_signature& s) {
                return s.is_template() && (s.name == base || s.qualified_name == base);
            });
            if (it == signatures.end())
            {
                std::string templates;
                for (const kernel_signature& s : signatures)
                {
                    templates += s.is_template() ? (templates.empty() ? "" : ", ") + s.qualified_name : "";
                }
                throw option_error("--instantiate " + expression + ": the cell has no template kernel named '" + base +
                                   "' (" + (templates.empty() ? "it has none" : "its template kernels: " + templates) + ")");
            }
            try
            {
                // Read after the unit's own text, so that its class templates and structs type the instance.
                instances.push_back(it->instantiate(expression, source, context));
            }
            catch (const signature_error& e)
            {
                std::string why = e.what();
                std::size_t after_line = why.rfind("line ", 0) == 0 ? why.find(": ") : std::string::npos;
                throw option_error("--instantiate " + expression + ": " +
                                   (after_line == std::string::npos ? why : why.substr(after_line + 2)));
            }
        }
        for (const auto& signature : signatures)
        {
            // An explicit instantiation or specialization in the source (template __global__ void
            // f<256>(...);) is found by its qualified name with the template arguments.
            if (!signature.extern_c && !signature.is_template() && signature.name.find('<') != std::string::npos &&
                std::find(options.name_expressions.begin(), options.name_expressions.end(), signature.qualified_name) ==
                    options.name_expressions.end())
            {
                options.name_expressions.push_back(signature.qualified_name);
            }
        }
        signatures.insert(signatures.end(), instances.begin(), instances.end());
        for (const auto& signature : signatures)
        {
            if (!signature.extern_c && !signature.is_template() && signature.name.find('<') == std::string::npos)
            {
                std::string expression = "&" + signature.qualified_name;
                if (std::find(options.name_expressions.begin(), options.name_expressions.end(), expression) ==
                    options.name_expressions.end())
                {
                    options.name_expressions.push_back(expression);
                }
            }
        }

        cell_plan plan;
        plan.cache_key = m_compiler.key_for(recipe);
        plan.module_name = name;
        if (plan.module_name.empty())
        {
            for (const auto& signature : signatures)
            {
                plan.module_name += (plan.module_name.empty() ? "" : "+") + signature.name;
            }
            if (plan.module_name.empty())
            {
                plan.module_name = "cell";
            }
        }
        plan.recipe = std::move(recipe);
        plan.signatures = std::move(signatures);
        plan.unreadable = std::move(unreadable);
        return plan;
    }

    compiler::output cell_builder::compile(cell_plan& plan)
    {
        // XCUDA_LAYOUT_PROBE=0 leaves the probe out (tests/bench/layout_probe_cost.py measures it so).
        static const bool probing = [] {
            const char* value = std::getenv("XCUDA_LAYOUT_PROBE");
            return !(value && std::string(value) == "0");
        }();
        layout_probe probe(probing ? plan.signatures : std::vector<kernel_signature>{});
        if (probe.empty())
        {
            compiler::output compiled = m_compiler.compile(plan.recipe);
            if (plan.unreadable)
            {
                throw *plan.unreadable;
            }
            return compiled;
        }
        // The probe rides along in the same NVRTC unit, appended to the cell (its lines come after the
        // cell's, so no message of the cell's moves). Should the probe itself not compile (a type the
        // decltype route cannot reach, a macro of the cell that breaks it), the cell compiles without it
        // and its layouts stay the reader's alone.
        compile_recipe probed = plan.recipe;
        probed.source += probe.source();
        compiler::output compiled;
        bool checked = true;
        try
        {
            compiled = m_compiler.compile(probed);
        }
        catch (const compile_error& e)
        {
            if (e.log().find("xcuda_probe") == std::string::npos && std::string(e.what()).find("xcuda_probe") == std::string::npos)
            {
                throw;
            }
            compiled = m_compiler.compile(plan.recipe);
            checked = false;
        }
        if (checked && compiled.binary)
        {
            probe.apply(compiled.binary->ptx, plan.signatures);
        }
        if (plan.unreadable)
        {
            throw *plan.unreadable;
        }
        return compiled;
    }
}
