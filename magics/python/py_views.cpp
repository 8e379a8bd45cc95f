// The teaching views: PTX and SASS as highlighted HTML (str subclasses, so the raw text is the object
// itself), the source-to-PTX/SASS line map, and side-by-side comparisons of two compiles.
//
// Views are built from the module's inspection compile (sm_XX, line information, ptxas report), so
// they work without a GPU; SASS also needs nvdisasm or cuobjdump from the toolkit.

#include "py_common.hpp"

#include "errors.hpp"

#include "code_listing.hpp"
#include "code_view.hpp"
#include "cuda_module.hpp"
#include "disassembler.hpp"

namespace xcuda::python
{
    namespace
    {
        py::object g_ptx_class;
        py::object g_sass_class;

        // A view with both renderings; IPython shows the HTML, a terminal the text.
        struct text_view
        {
            std::string html;
            std::string text;
        };

        // class NAME(str) with _repr_html_ (highlighted) and _repr_pretty_ (the raw text, unquoted).
        py::object make_text_class(py::module_& m, const char* name, std::string (*highlight)(const std::string&),
                                   const char* doc)
        {
            py::module_ builtins = py::module_::import("builtins");
            py::dict body;
            body["__doc__"] = doc;
            body["__module__"] = "xcuda";
            py::object cls = builtins.attr("type")(name, py::make_tuple(builtins.attr("str")), body);
            cls.attr("_repr_html_") =
                py::cpp_function([highlight](py::object self) { return highlight(str_of(self)); }, py::is_method(cls));
            cls.attr("_repr_pretty_") = py::cpp_function(
                [](py::object self, py::object printer, bool) { printer.attr("text")(py::str(self)); },
                py::is_method(cls));
            m.attr(name) = cls;
            return cls;
        }

        std::string join(const code_listing& listing)
        {
            std::string text;
            for (const auto& line : listing)
            {
                text += line.text + "\n";
            }
            return text;
        }

        std::string module_sass(cuda_module& module)
        {
            std::shared_ptr<const compile_result> compiled = module.inspection();
            std::string cubin = compiled->cubin;
            py::gil_scoped_release release;
            return disassembler::disassemble(cubin, true);
        }

        code_listing kernel_listing(cuda_kernel& kernel, bool sass)
        {
            cuda_module& module = *kernel.module();
            code_listing all = sass ? code_listing::from_sass(module_sass(module))
                                    : code_listing::from_ptx(module.inspection()->ptx);
            code_listing own = all.only(kernel.symbol());
            if (own.empty())
            {
                throw tool_error("kernel '" + kernel.signature().name + "' (" + kernel.symbol() +
                                         ") was not found in the module's " + (sass ? "SASS" : "PTX"));
            }
            return own;
        }

        std::string describe(const cuda_module& module)
        {
            std::string text = module.compiled().arch;
            if (module.options().fast_math)
            {
                text += ", --use_fast_math";
            }
            for (const auto& option : module.options().extra)
            {
                text += ", " + option;
            }
            for (const auto& define : module.options().defines)
            {
                text += ", -D" + define;
            }
            return text;
        }
    }

    py::object ptx_text(const std::string& text)
    {
        return g_ptx_class(text);
    }

    py::object kernel_ptx(cuda_kernel& kernel)
    {
        code_listing own = code_listing::from_ptx(kernel.module()->compiled().ptx).only(kernel.symbol());
        return g_ptx_class(own.empty() ? kernel.module()->compiled().ptx : join(own));
    }

    py::object kernel_sass(cuda_kernel& kernel)
    {
        return g_sass_class(join(kernel_listing(kernel, true)));
    }

    py::object module_sass_text(cuda_module& module)
    {
        return g_sass_class(module_sass(module));
    }

    py::object kernel_lines(cuda_kernel& kernel, bool sass, const std::map<int, std::pair<std::string, double>>& notes)
    {
        code_listing own = kernel_listing(kernel, sass);
        const std::string& source = kernel.module()->source();
        std::string title = kernel.signature().name + ": " + (sass ? "SASS" : "PTX") + " by source line (" +
                            kernel.module()->inspection()->arch + ")";
        if (!notes.empty())
        {
            title += ", with the profile's figures per line";
        }
        return py::cast(text_view{code_view::side_by_side_html(source, own, title, notes),
                                  code_view::grouped_text(source, own, notes)});
    }

    py::object compare_kernels(cuda_kernel& left, cuda_kernel& right, bool sass)
    {
        code_listing a = kernel_listing(left, sass);
        code_listing b = kernel_listing(right, sass);
        std::string left_title = left.signature().name + " [" + describe(*left.module()) + "]";
        std::string right_title = right.signature().name + " [" + describe(*right.module()) + "]";
        return py::cast(text_view{code_view::compare_html(left_title, a, right_title, b),
                                  code_view::compare_text(left_title, a, right_title, b)});
    }

    void register_views(py::module_& m)
    {
        g_ptx_class = make_text_class(m, "PTX", &code_view::highlight_ptx_html,
                                      "PTX text (a str); shown as syntax-highlighted HTML in notebooks.");
        g_sass_class = make_text_class(m, "SASS", &code_view::highlight_sass_html,
                                       "SASS text (a str); shown as syntax-highlighted HTML in notebooks.");
        py::class_<text_view>(m, "View", "A rendered view: HTML in notebooks, text elsewhere.")
            .def_readonly("html", &text_view::html)
            .def_readonly("text", &text_view::text)
            .def("_repr_html_", [](const text_view& v) { return v.html; })
            .def("__repr__", [](const text_view& v) { return v.text; });
    }
}
